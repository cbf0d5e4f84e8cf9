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
from tests.support.processes import STOP_SECONDS, Process
from tests.support.receiver import Call, Receiver, running_receiver

pytestmark = pytest.mark.slow


class SlowHook:
    """Answers 200 after ``seconds``; ``started`` is set when a call arrives, and ``answered``
    holds when (``time.monotonic()``) each answer was sent."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.answered: list[float] = []

    def __call__(self, call: Call) -> tuple[int, dict[str, str]]:
        self.started.set()
        time.sleep(self.seconds)
        self.answered.append(time.monotonic())
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


def started(tmp_path: Path, env: dict[str, str], *names: str) -> list[Process]:
    """The workers ``names`` (``executor-2``: a second executor), once each has said it started:
    on a loaded machine a start takes many seconds, more than a schedule due in one."""
    processes = [Process([name.split("-")[0]], env, tmp_path / f"{name}.log") for name in names]
    for process in processes:
        process.wait_for_output(rf"{process.args[0]} started")
    return processes


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
        workers = started(tmp_path, env, "processor", "poller")
        [executor] = started(tmp_path, env, "executor")
        try:
            occurrence_id = schedule_once(backends, tmp_path, receiver)
            assert hook.started.wait(60), executor.output()
            executor.popen.send_signal(signal.SIGTERM)
            assert executor.popen.wait(STOP_SECONDS) == 0, executor.output()
            # It waited for the call (answered 2 s after it came) instead of dropping it.
            assert hook.answered, "the executor left before the receiver answered its call"
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
        workers = started(tmp_path, env, "processor", "poller")
        [first] = started(tmp_path, env, "executor-1")
        second: Process | None = None
        try:
            occurrence_id = schedule_once(backends, tmp_path, receiver, timeout_seconds=4)
            assert hook.started.wait(60), first.output()
            first.popen.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            first.popen.send_signal(signal.SIGTERM)
            assert first.popen.wait(STOP_SECONDS) == 128 + signal.SIGTERM
            # Gone at once: the receiver still holds the call in flight (3 s), unanswered.
            assert not hook.answered
            # The abandoned attempt's lease runs out; another executor runs it again.
            hook.seconds = 0.0
            [second] = started(tmp_path, env, "executor-2")
            calls = receiver.wait_for(2, timeout=60)
            assert len(calls) >= 2
            assert {call.headers["idempotency-key"] for call in calls} == {occurrence_id}
            deadline = time.monotonic() + 60
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
