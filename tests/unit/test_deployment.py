"""docker-compose.yml and the Dockerfile, checked without Docker (CI has no engine)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from shared.settings import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ("api", "processor", "poller", "executor")


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


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


def test_localstack_creates_the_queues_the_settings_name() -> None:
    script = (ROOT / "deploy/localstack/init-queues.sh").read_text()
    defaults = Settings()
    for name in (defaults.mutations_queue, defaults.occurrences_queue, defaults.dead_letter_queue):
        assert name in script


def test_compose_runs_the_localstack_the_tests_run() -> None:
    pinned = re.search(
        r"localstack-core\[runtime\]==([\d.]+)", (ROOT / "scripts/peers").read_text()
    )
    assert pinned is not None
    assert compose()["services"]["localstack"]["image"] == f"localstack/localstack:{pinned[1]}"


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
    assert "--directory /tmp/empty" in " ".join(services["receiver"]["command"])
    readme = (ROOT / "README.md").read_text()
    assert '"url": "http://receiver:9000/?from=scheduler"' in readme


def test_the_readme_shows_the_signing_secret_compose_uses() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "SCHEDULER_WEBHOOK_SECRET=whsec_" in readme
    assert "grep SCHEDULER_WEBHOOK_SECRET .env" in readme
    assert "${SCHEDULER_WEBHOOK_SECRET:-}" in (ROOT / "docker-compose.yml").read_text()
