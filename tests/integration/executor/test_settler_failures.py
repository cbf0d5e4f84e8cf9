"""What the settler does after recording failures: it finds the schedules that paused
themselves and the failure notifications to send, reading the store only for a batch with a
failure of a schedule that asks for a pause (one read for the batch)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from execution_worker.settler import Settled, Settler
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.adapters.sqlite_queue import SqliteQueue
from shared.definition_cache import DefinitionCache
from shared.messages import encode_occurrence
from shared.model import (
    Answer,
    AttemptOutcome,
    Every,
    ExecutionStatus,
    FailureHook,
    Occurrence,
    Payload,
    Schedule,
    ScheduleDefinition,
    Timing,
    Unit,
)
from shared.notifying import FailureEvent
from shared.ports import OutgoingMessage, QueueSpec, SystemClock
from tests.support.harness import TEST_SECRETS

OWNER = "executor:test"
HOOK = FailureHook("https://alerts.example.com/hook", {"Authorization": "Bearer x"})


class CountingStore(SqliteStore):
    def __init__(self, database: SqliteDatabase) -> None:
        super().__init__(database, secrets=TEST_SECRETS)
        self.reads = 0

    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        self.reads += 1
        return super().get_schedules(keys, cache)


def failures(
    tmp_path: Path, count: int, pause_after_failures: int | None, hook: FailureHook | None
) -> tuple[CountingStore, SqliteQueue, list[Settled]]:
    """``count`` failed occurrences of schedule ``s-1``, begun and ready to settle."""
    database = SqliteDatabase(tmp_path / "s.db")
    store = CountingStore(database)
    store.ensure_indexes()
    queue = SqliteQueue(database, QueueSpec("occurrences"))
    queue.create()
    now = datetime.now(UTC)
    definition = ScheduleDefinition(
        timing=Timing(timezone="UTC", interval=Every(1, Unit.MINUTE)),
        payload=Payload("POST", "https://hooks.example.com/run"),
        pause_after_failures=pause_after_failures,
        on_failure=hook,
    )
    store.apply_definition(("default", "s-1", 1, definition, now, now))
    schedule = store.get_schedule("default", "s-1")
    assert schedule is not None
    batch = []
    for number in range(count):
        occurrence = Occurrence("default", "s-1", 1, now - timedelta(minutes=count - number))
        queue.send([OutgoingMessage(encode_occurrence(occurrence))])
        [message] = queue.receive(1, 1.0, 30.0)
        execution = store.begin_attempt(occurrence, OWNER, now, now + timedelta(seconds=30))
        assert execution is not None
        finished = now + timedelta(milliseconds=number)
        outcome = AttemptOutcome(ExecutionStatus.FAILED, finished, Answer(503), 3.0, "HTTP 503")
        batch.append(Settled(execution, outcome, occurrence, message, None, schedule))
    store.reads = 0
    return store, queue, batch


def settle(store: CountingStore, queue: SqliteQueue, batch: list[Settled]) -> list[FailureEvent]:
    told: list[FailureEvent] = []
    Settler(store, queue, queue, OWNER, SystemClock(), told.extend).settle_now(batch, [])
    return told


def test_failures_of_a_schedule_that_asks_for_neither_read_nothing(tmp_path: Path) -> None:
    store, queue, batch = failures(tmp_path, 3, None, None)
    assert settle(store, queue, batch) == []
    assert store.reads == 0


def test_each_dead_letter_is_told_without_a_read(tmp_path: Path) -> None:
    store, queue, batch = failures(tmp_path, 2, None, HOOK)
    told = settle(store, queue, batch)
    assert [(event.type, event.occurrence_id) for event in told] == [
        ("occurrence.dead_lettered", item.execution.occurrence_id) for item in batch
    ]
    assert all(event.hook == HOOK for event in told)
    assert store.reads == 0


def test_the_failure_that_pauses_the_schedule_is_told_once_in_one_read(tmp_path: Path) -> None:
    store, queue, batch = failures(tmp_path, 3, 3, HOOK)
    told = settle(store, queue, batch)
    paused = [event for event in told if event.type == "schedule.paused"]
    assert len(paused) == 1
    assert paused[0].occurrence_id == batch[-1].execution.occurrence_id
    assert paused[0].consecutive_failures == 3
    assert len(told) == 4  # and the three dead letters
    assert store.reads == 1


def test_a_schedule_paused_earlier_is_not_told_again(tmp_path: Path) -> None:
    store, queue, batch = failures(tmp_path, 2, 1, HOOK)
    first, later = batch
    assert [event.type for event in settle(store, queue, [first])] == [
        "occurrence.dead_lettered",
        "schedule.paused",
    ]
    # A manual run of the paused schedule fails too: a dead letter, no second pause.
    assert [event.type for event in settle(store, queue, [later])] == ["occurrence.dead_lettered"]


def test_the_hook_as_it_is_now_is_told(tmp_path: Path) -> None:
    store, queue, batch = failures(tmp_path, 1, 5, HOOK)
    moved = FailureHook("https://alerts.example.com/moved")
    stored = store.get_schedule("default", "s-1")
    assert stored is not None and stored.definition is not None
    replaced = dataclasses.replace(stored.definition, on_failure=moved)
    store.apply_definition(("default", "s-1", 2, replaced, datetime.now(UTC), datetime.now(UTC)))
    [event] = settle(store, queue, batch)
    assert event.hook == moved
