"""What an operator meets when running one component: bad settings, health and metrics."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.processes import SCHEDULER, Process, free_port

pytestmark = pytest.mark.slow


def test_a_worker_with_a_bad_setting_refuses_to_start_naming_the_variable(tmp_path: Path) -> None:
    result = subprocess.run(
        [*SCHEDULER, "poller"],
        env={"SCHEDULER_POLL_INTERVAL_SECONDS": "soon", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "SCHEDULER_POLL_INTERVAL_SECONDS" in result.stderr
    assert "'soon' is not a valid float" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_worker_serves_health_and_metrics(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    port = free_port()
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_METRICS_PORT": str(port),
    }
    poller = Process(["poller"], env, tmp_path / "poller.log")
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/healthz", timeout=1
                ) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, poller.output()
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as answer:
            text = answer.read().decode()
        assert "scheduler_poller_claim_batch_size_count" in text
    finally:
        assert poller.terminate() == 0


def test_an_executor_without_a_signing_secret_says_webhooks_go_unsigned(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    executor = Process(
        ["executor"], {"SCHEDULER_STORE_URL": url, "SCHEDULER_QUEUE_URL": url}, tmp_path / "e.log"
    )
    try:
        executor.wait_for_output("webhooks are sent unsigned")
    finally:
        assert executor.terminate() == 0
