"""The settler keeps trying to record outcomes while their leases hold, and only then settles
their messages; past the lease it gives up and leaves the message to come back."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from execution_worker.settler import Settled, Settler
from execution_worker.worker import Executor
from shared.adapters.http_sender import HttpSender
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.adapters.sqlite_queue import SqliteQueue
from shared.errors import Transient
from shared.lifecycle import Shutdown
from shared.messages import encode_occurrence
from shared.model import Answer, AttemptOutcome, Execution, ExecutionStatus, Occurrence
from shared.ports import OutgoingMessage, QueueSpec, SystemClock
from tests.support.harness import TEST_SECRETS, sqlite_settings

OWNER = "executor:test"


class FlakyStore(SqliteStore):
    """Fails the first ``failures`` calls of ``settle_attempts``, as a store in an election."""

    def __init__(self, database: SqliteDatabase, failures: int) -> None:
        super().__init__(database, secrets=TEST_SECRETS)
        self.failures = failures
        self.calls = 0

    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        self.calls += 1
        if self.calls <= self.failures:
            raise Transient("primary stepped down")
        return super().settle_attempts(settled, owner)


def attempt(
    tmp_path: Path, failures: int, lease: timedelta
) -> tuple[FlakyStore, SqliteQueue, Settled]:
    database = SqliteDatabase(tmp_path / "s.db")
    store = FlakyStore(database, failures)
    store.ensure_indexes()
    queue = SqliteQueue(database, QueueSpec("occurrences"))
    queue.create()
    occurrence = Occurrence("default", "s-1", 1, datetime.now(UTC))
    queue.send([OutgoingMessage(encode_occurrence(occurrence))])
    [message] = queue.receive(1, 1.0, 30.0)
    now = datetime.now(UTC)
    execution = store.begin_attempt(occurrence, OWNER, now, now + lease)
    assert execution is not None
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, now, Answer(200), 3.0)
    return store, queue, Settled(execution, outcome, occurrence, message)


def test_a_store_that_fails_for_a_while_gets_the_outcome_once_it_answers(tmp_path: Path) -> None:
    store, queue, settled = attempt(tmp_path, failures=3, lease=timedelta(seconds=30))
    Settler(store, queue, queue, OWNER, SystemClock()).settle_now([settled], [])
    assert store.calls == 4
    record = store.get_execution("default", settled.occurrence.occurrence_id)
    assert record is not None and record.status is ExecutionStatus.SUCCEEDED
    depth = queue.depth()
    assert depth.visible + depth.in_flight + depth.delayed == 0  # deleted once recorded


def test_past_the_lease_the_outcome_is_given_up_and_its_message_kept(tmp_path: Path) -> None:
    store, queue, settled = attempt(tmp_path, failures=100, lease=timedelta(milliseconds=300))
    Settler(store, queue, queue, OWNER, SystemClock()).settle_now([settled], [])
    assert 1 < store.calls < 100
    record = store.get_execution("default", settled.occurrence.occurrence_id)
    assert record is not None and record.status is ExecutionStatus.RUNNING
    assert queue.depth().in_flight == 1  # it comes back; the call is made again


def test_a_stop_ends_the_retries_at_once_and_keeps_the_message(tmp_path: Path) -> None:
    store, queue, settled = attempt(tmp_path, failures=10**6, lease=timedelta(minutes=5))
    settler = Settler(store, queue, queue, OWNER, SystemClock())
    settling = threading.Thread(target=settler.settle_now, args=([settled], []))
    settling.start()
    deadline = time.monotonic() + 5
    while store.calls < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.calls >= 2  # retrying, with its lease minutes away
    stopped = time.monotonic()
    settler.abandoned.set()
    settling.join(timeout=5)
    assert not settling.is_alive()
    assert time.monotonic() - stopped < 0.5
    record = store.get_execution("default", settled.occurrence.occurrence_id)
    assert record is not None and record.status is ExecutionStatus.RUNNING
    assert queue.depth().in_flight == 1  # it comes back; the call is made again


def test_an_executor_stopping_leaves_no_settling_thread_past_its_shutdown_timeout(
    tmp_path: Path,
) -> None:
    store, queue, settled = attempt(tmp_path, failures=10**6, lease=timedelta(minutes=5))
    settings = sqlite_settings(tmp_path, shutdown_timeout_seconds=0.3)
    executor = Executor(store, queue, queue, HttpSender(), settings)
    executor.settling.add(settled)
    shutdown = Shutdown()
    shutdown.request()
    started = time.monotonic()
    executor.run(shutdown)
    deadline = time.monotonic() + 5
    while _settling_threads() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _settling_threads() == []
    assert time.monotonic() - started < 3.0  # not the five minutes of the lease
    assert store.calls >= 2
    assert queue.depth().in_flight == 1


def _settling_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("settle")]
