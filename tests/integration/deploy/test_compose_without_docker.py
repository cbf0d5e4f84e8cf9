"""docker compose's SQS, run without Docker: the LocalStack runtime its image builds
(``deploy/localstack``), started with the image's settings, its init hook and its healthcheck.

There is no Docker engine here; what the image would run is run from ``.peers/localstack``, the
same requirements (``deploy/localstack/requirements.txt``) on the same Python (3.13), on a free
port of 127.0.0.1 instead of 4566.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from shared.adapters.sqs_queue import SqsQueue, sqs_client
from shared.ports import QueueSpec
from shared.settings import Settings
from tests.support import peers

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy" / "localstack"
REGION = "us-east-1"
# Where the image listens and the name compose gives it: replaced by loopback and a free port.
LISTENING = ("GATEWAY_LISTEN", "LOCALSTACK_HOST")


def image_settings() -> dict[str, str]:
    """The ``ENV`` of deploy/localstack/Dockerfile."""
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in re.findall(r"^ENV (.+)$", text, re.MULTILINE):
        found.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return found


def healthcheck(port: int) -> subprocess.CompletedProcess[str]:
    """The image's healthcheck, as compose runs it (``python /etc/localstack/healthcheck.py``)."""
    python = peers.PEERS_DIR / "localstack" / "bin" / "python"
    return subprocess.run(
        [str(python), str(DEPLOY / "healthcheck.py")],
        env={"GATEWAY_LISTEN": f"127.0.0.1:{port}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )


def attributes(endpoint: str, names: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each queue's attributes that matter, by its role (``names``: role → queue name), the
    dead-letter queue of a redrive policy named by its role too."""
    client = sqs_client(endpoint, REGION)
    roles = {name: role for role, name in names.items()}
    found: dict[str, dict[str, Any]] = {}
    try:
        for role, name in names.items():
            url = client.get_queue_url(QueueName=name)["QueueUrl"]
            got = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
            kept: dict[str, Any] = {
                key: got[key] for key in ("MessageRetentionPeriod", "MaximumMessageSize")
            }
            if "RedrivePolicy" in got:
                policy = json.loads(got["RedrivePolicy"])
                target = policy["deadLetterTargetArn"].rsplit(":", 1)[-1]
                kept["RedrivePolicy"] = (roles[target], int(policy["maxReceiveCount"]))
            found[role] = kept
    finally:
        client.close()
    return found


def test_the_compose_localstack_makes_the_queues_the_components_make_and_says_when_ready(
    tmp_path: Path, localstack: peers.Peer, monkeypatch: pytest.MonkeyPatch
) -> None:
    peers.fake_aws(monkeypatch, tmp_path)
    settings = image_settings()
    # The image keeps to the same settings the tests start LocalStack with, but where it listens.
    assert settings["SERVICES"] == "sqs" and settings["GATEWAY_LISTEN"] == "0.0.0.0:4566"
    for name in ("GATEWAY_SERVER", "DISABLE_EVENTS", "DNS_ADDRESS", "SKIP_SSL_CERT_DOWNLOAD"):
        assert name in settings, name
    # Its init hook, where LocalStack looks for it when it runs outside a container.
    root = tmp_path / "filesystem"
    hooks = root / "etc" / "localstack" / "init" / "ready.d"
    hooks.mkdir(parents=True)
    shutil.copy(DEPLOY / "init-queues.py", hooks / "init-queues.py")

    port = peers.free_port()
    assert healthcheck(port).returncode == 1  # nothing there yet
    image = {name: value for name, value in settings.items() if name not in LISTENING}
    composed = peers.start_localstack(tmp_path, settings=image)
    try:
        composed_port = int(composed.url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 60
        while (check := healthcheck(composed_port)).returncode != 0:
            assert time.monotonic() < deadline, check.stderr + composed.log_tail()
            time.sleep(0.5)
        defaults = Settings()
        roles = {
            "mutations": defaults.mutations_queue,
            "occurrences": defaults.occurrences_queue,
            "dead_letters": defaults.dead_letter_queue,
        }
        made_by_image = attributes(composed.url, roles)
    finally:
        composed.stop()
    # Stopped, it is unhealthy again.
    failed = healthcheck(composed_port)
    assert failed.returncode == 1 and "not ready" in failed.stderr

    # The queues the components make themselves (on the session's LocalStack, under names of
    # this test's own), attribute for attribute.
    suffix = uuid.uuid4().hex[:8]
    own = {role: f"{name}-{suffix}" for role, name in roles.items()}
    client = sqs_client(localstack.url, REGION)
    try:
        for role in ("mutations", "occurrences"):
            SqsQueue(
                client, QueueSpec(own[role], own["dead_letters"], defaults.max_receives)
            ).create()
    finally:
        client.close()
    assert made_by_image == attributes(localstack.url, own)
    assert made_by_image["occurrences"] == {
        "MessageRetentionPeriod": "1209600",
        "MaximumMessageSize": "1048576",
        "RedrivePolicy": ("dead_letters", 20),
    }
