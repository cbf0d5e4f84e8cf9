"""docker-compose.yml, the Dockerfile and deploy/, checked without Docker (CI has no engine):
images and versions are the ones the tests run, queues and settings match, every command
exists, healthchecks can fail, and what ``docker compose config`` checks: the variables
interpolate, the result is valid under the Compose Specification's schema, and what services
name (networks, volumes, services they depend on) is declared.
tests/integration/deploy/test_compose_without_docker.py runs the SQS image's runtime, init hook
and healthcheck without Docker."""

from __future__ import annotations

import ipaddress
import json
import re
import sys
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from scheduler_cli.main import main
from shared.settings import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "localstack"
COMPONENTS = ("api", "processor", "poller", "executor")
# The Compose Specification's JSON schema, as docker compose validates a file with it:
# compose-spec/compose-spec schema/compose-spec.json at 170098ba07d9 (2026-06-23), Apache-2.0.
COMPOSE_SCHEMA = ROOT / "tests" / "support" / "compose-spec.json"
# What the README's .env holds (tests/acceptance/test_readme.py runs its lines as written).
DOT_ENV = {"SCHEDULER_WEBHOOK_SECRET": "whsec_c2VjcmV0", "SCHEDULER_SECRET_KEYS": "a2V5"}
# Compose's interpolation: $$, $NAME, ${NAME}, ${NAME:-default}, ${NAME-default},
# ${NAME:?error}, ${NAME?error}, ${NAME:+other}, ${NAME+other}.
INTERPOLATION = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<bare>[A-Za-z_]\w*)"
    r"|\{(?P<name>[A-Za-z_]\w*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}|(?P<invalid>))"
)


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def interpolate(value: Any, environment: dict[str, str]) -> Any:
    """``value`` with its variables replaced as docker compose does (each string of the parsed
    file); ``ValueError`` where compose refuses: a malformed ``$``, a ``?`` variable unset."""
    if isinstance(value, dict):
        return {key: interpolate(item, environment) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environment) for item in value]
    if not isinstance(value, str):
        return value

    def replace(found: re.Match[str]) -> str:
        if found["escaped"]:
            return "$"
        if found["bare"]:
            return environment.get(found["bare"], "")
        if found["name"] is None:
            raise ValueError(f"invalid interpolation format in {value!r}")
        name, op, arg = found["name"], found["op"] or "", found["arg"] or ""
        set_, empty = name in environment, not environment.get(name)
        missing = empty if op.startswith(":") else not set_
        if op.endswith("-"):
            return arg if missing else environment[name]
        if op.endswith("?"):
            if missing:
                raise ValueError(f"required variable {name} is missing a value: {arg}")
            return environment[name]
        if op.endswith("+"):
            return "" if missing else arg
        return environment.get(name, "")

    return INTERPOLATION.sub(replace, value)


def test_compose_config_accepts_the_file_with_the_readmes_env() -> None:
    configured = interpolate(compose(), DOT_ENV)
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    errors = [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in jsonschema.Draft7Validator(schema).iter_errors(configured)
    ]
    assert errors == []
    services = configured["services"]
    assert services["api"]["environment"]["SCHEDULER_SECRET_KEYS"] == "a2V5"
    assert services["executor"]["environment"]["SCHEDULER_WEBHOOK_SECRET"] == "whsec_c2VjcmV0"
    assert services["executor"]["environment"]["SCHEDULER_ALLOWED_NETWORKS"] == "172.31.99.10/32"
    # What services name is declared: networks, named volumes, the services they wait for.
    networks = {"default", *configured.get("networks", {})}
    volumes = set(configured.get("volumes", {}))
    for name, service in services.items():
        named = service.get("networks", [])
        assert set(named) <= networks, name
        assert set(service.get("depends_on", [])) <= set(services) - {name}, name
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith((".", "/")) or source in volumes, (name, volume)
    # A fixed address is one of its network's subnet.
    subnets = {
        name: [ipaddress.ip_network(pool["subnet"]) for pool in network["ipam"]["config"]]
        for name, network in configured["networks"].items()
        if "ipam" in network
    }
    for name, service in services.items():
        named = service.get("networks", [])
        for network, settings in named.items() if isinstance(named, dict) else []:
            address = ipaddress.ip_address(settings["ipv4_address"])
            assert any(address in subnet for subnet in subnets[network]), (name, network)


def test_compose_config_refuses_without_the_sealing_key_and_says_how_to_make_one() -> None:
    with pytest.raises(ValueError, match="SCHEDULER_SECRET_KEYS is missing a value: make one with"):
        interpolate(compose(), {"SCHEDULER_WEBHOOK_SECRET": "whsec_c2VjcmV0"})
    # Without a signing secret it starts, unsigned (the executor says so).
    unsigned = interpolate(compose(), {"SCHEDULER_SECRET_KEYS": "a2V5"})
    assert unsigned["services"]["executor"]["environment"]["SCHEDULER_WEBHOOK_SECRET"] == ""


def test_the_compose_checks_catch_what_compose_refuses() -> None:
    with pytest.raises(ValueError, match="invalid interpolation"):
        interpolate({"a": "price: $5 ${"}, {})
    assert interpolate(
        {"a": ["$$HOME", "${X:-d}", "${X-d}", "${Y:+on}", "$Y"]}, {"X": "", "Y": "y"}
    ) == {"a": ["$HOME", "d", "", "on", "y"]}
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    broken = interpolate(compose(), DOT_ENV)
    broken["services"]["poller"]["healtcheck"] = broken["services"]["poller"].pop("healthcheck")
    broken["services"]["api"]["depends_on"]["mongo"]["condition"] = "service_healty"
    paths = {
        "/".join(map(str, error.absolute_path))
        for error in jsonschema.Draft7Validator(schema).iter_errors(broken)
    }
    assert paths == {"services/poller", "services/api/depends_on"}


def test_compose_runs_mongodb_localstack_and_the_four_components_with_healthchecks() -> None:
    services = compose()["services"]
    assert {"mongo", "localstack", *COMPONENTS} <= set(services)
    for name in ("mongo", "localstack", *COMPONENTS):
        assert "healthcheck" in services[name], name
    for name in COMPONENTS:
        service = services[name]
        assert service["command"] == ["scheduler", name]
        assert service["build"] == "."
        assert service["depends_on"]["mongo"]["condition"] == "service_healthy"
        assert service["depends_on"]["localstack"]["condition"] == "service_healthy"
        environment = service["environment"]
        assert environment["SCHEDULER_STORE_URL"].startswith("mongodb://mongo:27017")
        assert environment["SCHEDULER_QUEUE_URL"].startswith("sqs+http://localstack:4566")
    for name in ("processor", "poller", "executor"):
        port = services[name]["environment"]["SCHEDULER_METRICS_PORT"]
        assert f":{port}/healthz" in " ".join(services[name]["healthcheck"]["test"])


def test_every_scheduler_variable_in_compose_is_a_real_setting() -> None:
    known = {PREFIX + spec.name.upper() for spec in fields(Settings)}
    text = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"\b(SCHEDULER_[A-Z_]+)\b", text))
    assert used and used <= known, used - known


def test_the_dockerfile_copies_every_package_the_project_installs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {
        name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    dockerfile = (ROOT / "Dockerfile").read_text()
    for package in packages:
        assert f"COPY {package} ./{package}" in dockerfile, package
    assert 'CMD ["scheduler", "api"]' in dockerfile


def test_localstack_makes_and_checks_the_queues_the_settings_name() -> None:
    defaults = Settings()
    names = {defaults.mutations_queue, defaults.occurrences_queue, defaults.dead_letter_queue}
    init = (DEPLOY / "init-queues.py").read_text()
    check = (DEPLOY / "healthcheck.py").read_text()
    for name in names:
        assert f'"{name}"' in init and f'"{name}"' in check, name
    assert f"MAX_RECEIVES = {defaults.max_receives}" in init
    # Where the components reach it: the service's name and the port it listens on.
    endpoint = compose()["services"]["api"]["environment"]["SCHEDULER_QUEUE_URL"]
    assert endpoint.startswith("sqs+http://localstack:4566")
    assert "GATEWAY_LISTEN=0.0.0.0:4566" in (DEPLOY / "Dockerfile").read_text()


def _from(dockerfile: Path) -> str:
    found = re.search(r"^FROM (\S+)", dockerfile.read_text(), re.MULTILINE)
    assert found is not None, dockerfile
    return found[1]


def test_compose_builds_the_localstack_the_tests_run_and_needs_no_account() -> None:
    localstack = compose()["services"]["localstack"]
    assert localstack["build"] == "deploy/localstack"
    text = (ROOT / "docker-compose.yml").read_text()
    # The image that exits without a LocalStack account is gone, and no token is asked for.
    assert "localstack/localstack" not in text and "LOCALSTACK_AUTH_TOKEN" not in text
    # One list of requirements for both: the image installs it, scripts/peers installs it.
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "COPY requirements.txt" in dockerfile
    assert "pip install --no-cache-dir -r /tmp/requirements.txt" in dockerfile
    peers_script = (ROOT / "scripts/peers").read_text()
    assert "deploy/localstack/requirements.txt" in peers_script
    assert "localstack-core[runtime]==2026.3.0" in (DEPLOY / "requirements.txt").read_text()
    # On the Python the tests run LocalStack on (scripts/peers looks for 3.13).
    assert _from(DEPLOY / "Dockerfile") == "python:3.13-slim"
    assert "versions/3.13.0/bin/python3.13" in peers_script
    # What the image runs, and copies in for it.
    assert 'CMD ["python", "-m", "localstack.runtime.main"]' in dockerfile
    for name in ("init-queues.py", "healthcheck.py"):
        assert f"COPY {name} " in dockerfile and (DEPLOY / name).is_file(), name
    assert localstack["healthcheck"]["test"] == [
        "CMD",
        "python",
        "/etc/localstack/healthcheck.py",
    ]
    assert "COPY healthcheck.py /etc/localstack/healthcheck.py" in dockerfile


def test_the_service_image_runs_the_python_the_tests_run() -> None:
    assert _from(ROOT / "Dockerfile") == f"python:{sys.version_info[0]}.{sys.version_info[1]}-slim"


def test_every_command_compose_runs_is_a_real_one(capsys: pytest.CaptureFixture[str]) -> None:
    services = compose()["services"]
    for name, service in services.items():
        command = service.get("command")
        if service.get("image") != "scheduler-service:local" or command is None:
            continue
        assert command[0] == "scheduler", name
        with pytest.raises(SystemExit) as shown:
            main([*command[1:], "--help"])
        assert shown.value.code == 0, name
        capsys.readouterr()
    # Each healthcheck is an exec form whose exit status is the check.
    for name, service in services.items():
        test = service["healthcheck"]["test"]
        assert test[0] == "CMD", name
        assert "|| true" not in " ".join(test) and "|| exit 0" not in " ".join(test), name
    # The API's and the workers' checks ask the ports they serve on.
    api = services["api"]
    assert f":{api['environment']['SCHEDULER_PORT']}/readyz" in " ".join(api["healthcheck"]["test"])


def test_the_mongodb_healthcheck_fails_unless_the_node_is_primary() -> None:
    test = compose()["services"]["mongo"]["healthcheck"]["test"]
    # An exec form whose exit status is the check: an expression's value printed is not.
    assert test[:2] == ["CMD", "mongosh"]
    script = test[-1]
    assert "rs.initiate(" in script
    assert re.search(r"if \(!db\.hello\(\)\.isWritablePrimary\) \{ quit\(1\) \}", script)


def test_the_try_it_receiver_is_reachable_and_the_only_private_target_allowed() -> None:
    services = compose()["services"]
    address = services["receiver"]["networks"]["webhooks"]["ipv4_address"]
    for name in ("api", "executor"):
        assert "webhooks" in services[name]["networks"], name
        allowed = services[name]["environment"]["SCHEDULER_ALLOWED_NETWORKS"]
        assert allowed == f"${{SCHEDULER_ALLOWED_NETWORKS:-{address}/32}}", name
    # MongoDB and LocalStack are not on the webhooks' network.
    for name in ("mongo", "localstack", "processor", "poller"):
        assert "webhooks" not in services[name].get("networks", []), name
    # It answers any method (Python's http.server answers 501 to a POST), on port 9000.
    assert services["receiver"]["command"] == [
        "scheduler",
        "receiver",
        "--host",
        "0.0.0.0",
        "--port",
        "9000",
    ]
    assert "127.0.0.1:9000/" in " ".join(services["receiver"]["healthcheck"]["test"])
    readme = (ROOT / "README.md").read_text()
    assert '"url": "http://receiver:9000/?from=scheduler"' in readme


def test_the_readme_shows_the_signing_secret_compose_uses() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "SCHEDULER_WEBHOOK_SECRET=whsec_" in readme
    assert "grep SCHEDULER_WEBHOOK_SECRET .env" in readme
    assert "${SCHEDULER_WEBHOOK_SECRET:-}" in (ROOT / "docker-compose.yml").read_text()
