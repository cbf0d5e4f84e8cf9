"""SIGTERM: the executor finishes the call in flight; a second signal leaves at once."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_service.app import create_app
from shared.backends import Backends, open_backends
from shared.timeutil import iso_z
from tests.support.harness import API, sqlite_settings
from tests.support.processes import Process
from tests.support.receiver import Call, Receiver, running_receiver

pytestmark = pytest.mark.slow


class SlowHook:
    """Answers 200 after ``seconds``; ``started`` is set when a call arrives."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()

    def __call__(self, call: Call) -> tuple[int, dict[str, str]]:
        self.started.set()
        time.sleep(self.seconds)
        return 200, {}


@contextmanager
def components(
    tmp_path: Path, lease_margin: float = 30.0
) -> Iterator[tuple[Backends, dict[str, str]]]:
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_POLL_INTERVAL_SECONDS": "0.1",
        "SCHEDULER_ALLOWED_NETWORKS": "127.0.0.0/8",
        "SCHEDULER_EXECUTION_LEASE_MARGIN_SECONDS": str(lease_margin),
        "SCHEDULER_SHUTDOWN_TIMEOUT_SECONDS": "10",
    }
    backends = open_backends(sqlite_settings(tmp_path))
    try:
        yield backends, env
    finally:
        backends.close()


def schedule_once(
    backends: Backends, tmp_path: Path, receiver: Receiver, timeout_seconds: float = 20
) -> str:
    client = create_app(sqlite_settings(tmp_path), backends).test_client()
    at = iso_z(datetime.now(UTC) + timedelta(seconds=1))
    body = {
        "schedule": {"at": at},
        "payload": {
            "method": "POST",
            "url": f"{receiver.url}/slow",
            "timeout_seconds": timeout_seconds,
        },
    }
    response = client.post(f"{API}/schedule", json=body)
    assert response.status_code == 202
    return f"{response.get_json()['id']}:{at}"


def test_sigterm_lets_the_call_in_flight_finish_and_records_it(tmp_path: Path) -> None:
    hook = SlowHook(2.0)
    with running_receiver(hook) as receiver, components(tmp_path) as (backends, env):
        workers = [
            Process([name], env, tmp_path / f"{name}.log") for name in ("processor", "poller")
        ]
        executor = Process(["executor"], env, tmp_path / "executor.log")
        try:
            occurrence_id = schedule_once(backends, tmp_path, receiver)
            assert hook.started.wait(10), executor.output()
            signalled = time.monotonic()
            executor.popen.send_signal(signal.SIGTERM)
            assert executor.popen.wait(15) == 0, executor.output()
            # It waited for the call (about 2 s) instead of dropping it.
            assert time.monotonic() - signalled >= 1.0
            record = backends.store.get_execution("default", occurrence_id)
            assert record is not None and record.status.value == "succeeded"
            assert len(receiver.calls) == 1
        finally:
            for process in workers:
                process.terminate()
            executor.terminate()


def test_a_second_signal_exits_now_and_the_occurrence_is_run_again_later(tmp_path: Path) -> None:
    hook = SlowHook(3.0)
    with (
        running_receiver(hook) as receiver,
        components(tmp_path, lease_margin=1.0) as (
            backends,
            env,
        ),
    ):
        workers = [
            Process([name], env, tmp_path / f"{name}.log") for name in ("processor", "poller")
        ]
        first = Process(["executor"], env, tmp_path / "executor-1.log")
        second: Process | None = None
        try:
            occurrence_id = schedule_once(backends, tmp_path, receiver, timeout_seconds=4)
            assert hook.started.wait(10), first.output()
            first.popen.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            signalled = time.monotonic()
            first.popen.send_signal(signal.SIGTERM)
            assert first.popen.wait(5) == 128 + signal.SIGTERM
            assert time.monotonic() - signalled < 1.0
            # The abandoned attempt's lease runs out; another executor runs it again.
            hook.seconds = 0.0
            second = Process(["executor"], env, tmp_path / "executor-2.log")
            calls = receiver.wait_for(2, timeout=60)
            assert len(calls) >= 2
            assert {call.headers["idempotency-key"] for call in calls} == {occurrence_id}
            deadline = time.monotonic() + 10
            record = None
            while time.monotonic() < deadline:
                record = backends.store.get_execution("default", occurrence_id)
                if record is not None and record.status.value == "succeeded":
                    break
                time.sleep(0.1)
            assert record is not None and record.status.value == "succeeded"
            assert record.attempts == 2
        finally:
            for process in workers:
                process.terminate()
            first.kill()
            if second is not None:
                second.terminate()
