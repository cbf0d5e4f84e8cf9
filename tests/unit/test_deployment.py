"""docker-compose.yml and the Dockerfile, checked without Docker (CI has no engine)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml
from moto import mock_aws

from shared.adapters.sqs_queue import SqsQueue, sqs_client
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


# Stands in for LocalStack's ``awslocal``: records each call's arguments, answers the ARN query.
AWSLOCAL = """\
import json, os, sys
with open(os.environ["AWSLOCAL_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "QueueArn" in sys.argv:
    print("arn:aws:sqs:us-east-1:000000000000:scheduler-dead-letters")
"""
QUEUE_ATTRIBUTES = ("MessageRetentionPeriod", "MaximumMessageSize", "RedrivePolicy")


def _script_queues(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The queues ``init-queues.sh`` creates, with the attributes it gives them."""
    (tmp_path / "awslocal").write_text(f"#!{sys.executable}\n{AWSLOCAL}")
    (tmp_path / "awslocal").chmod(0o755)
    log = tmp_path / "calls"
    subprocess.run(
        ["sh", str(ROOT / "deploy/localstack/init-queues.sh")],
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "AWSLOCAL_LOG": str(log)},
        check=True,
        timeout=30,
    )
    queues: dict[str, dict[str, Any]] = {}
    for line in log.read_text().splitlines():
        call = json.loads(line)
        if call[:2] == ["sqs", "create-queue"]:
            name = call[call.index("--queue-name") + 1]
            queues[name] = json.loads(call[call.index("--attributes") + 1])
    return queues


def _service_queues() -> dict[str, dict[str, Any]]:
    """The queues the components create (``SqsQueue.create``), with their attributes."""
    settings = Settings()
    queues: dict[str, dict[str, Any]] = {}
    with mock_aws():
        client = sqs_client(None, "us-east-1")
        work = (settings.mutations_queue, settings.occurrences_queue)
        for name in work:
            SqsQueue(client, name, settings.dead_letter_queue, settings.max_receives).create()
        for name in (*work, settings.dead_letter_queue):
            url = client.get_queue_url(QueueName=name)["QueueUrl"]
            attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
            queues[name] = {key: value for key, value in attributes["Attributes"].items()}
        client.close()
    return queues


def _comparable(attributes: dict[str, Any]) -> dict[str, Any]:
    kept = {name: attributes[name] for name in QUEUE_ATTRIBUTES if name in attributes}
    if "RedrivePolicy" in kept:
        policy = json.loads(kept["RedrivePolicy"])
        kept["RedrivePolicy"] = {
            "deadLetterQueue": policy["deadLetterTargetArn"].rsplit(":", 1)[-1],
            "maxReceiveCount": int(policy["maxReceiveCount"]),
        }
    return kept


def test_localstack_queues_get_the_attributes_the_service_gives_queues_it_creates(
    tmp_path: Path,
) -> None:
    made_by_script = _script_queues(tmp_path)
    made_by_service = _service_queues()
    assert set(made_by_script) == set(made_by_service)
    for name, attributes in made_by_service.items():
        assert _comparable(made_by_script[name]) == _comparable(attributes), name
    # What the service gives them, as SQS names it: 14 days, 1 MiB, redrive after 20 receives.
    occurrences = _comparable(made_by_script[Settings().occurrences_queue])
    assert occurrences == {
        "MessageRetentionPeriod": "1209600",
        "MaximumMessageSize": "1048576",
        "RedrivePolicy": {"deadLetterQueue": "scheduler-dead-letters", "maxReceiveCount": 20},
    }


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
