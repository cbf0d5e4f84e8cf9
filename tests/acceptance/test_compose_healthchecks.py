"""docker compose's healthchecks of the receiver and the workers, run without Docker as compose
runs them in their containers: they pass on a live process and fail once it is gone."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support.processes import Process, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def compose_check(service: str, port: int) -> subprocess.CompletedProcess[str]:
    """A service's healthcheck command from docker-compose.yml, run here as compose runs it in
    its container, the port it names replaced by ``port``."""
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    command = services[service]["healthcheck"]["test"]
    assert command[:2] == ["CMD", "python"]
    script = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", command[-1])
    return subprocess.run(
        [sys.executable, *command[2:-1], script], capture_output=True, text=True, timeout=30
    )


def test_the_receiver_and_worker_healthchecks_pass_on_a_live_one_and_fail_without(
    tmp_path: Path,
) -> None:
    receiver_port, metrics_port = free_port(), free_port()
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    environment = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_METRICS_PORT": str(metrics_port),
    }
    receiver = Process(["receiver", "--port", str(receiver_port)], {}, tmp_path / "r.log")
    executor = Process(["executor"], environment, tmp_path / "executor.log")
    try:
        receiver.wait_for_output("listening on")
        executor.wait_for_output("executor started")
        assert compose_check("receiver", receiver_port).returncode == 0
        deadline = time.monotonic() + 30
        while (check := compose_check("executor", metrics_port)).returncode != 0:
            assert time.monotonic() < deadline, check.stderr
            time.sleep(0.2)
    finally:
        receiver.kill()
        assert executor.terminate() == 0, executor.output()[-2000:]
    assert compose_check("receiver", receiver_port).returncode == 1
    assert compose_check("executor", metrics_port).returncode == 1
