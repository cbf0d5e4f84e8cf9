"""Retention: the poller deletes old execution records, finished schedules and old changes,
nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scheduler_cli.components import build_poller
from shared.backends import Backends, open_backends
from shared.changes import SYSTEM, Change, ChangeAction
from shared.model import (
    Answer,
    AttemptOutcome,
    Every,
    ExecutionStatus,
    Occurrence,
    Payload,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
    Unit,
)
from tests.support.clocks import FixedClock
from tests.support.harness import sqlite_settings

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    opened = open_backends(sqlite_settings(tmp_path))
    yield opened
    opened.close()


def finished_run(backends: Backends, schedule_id: str, at: datetime) -> str:
    occurrence = Occurrence("default", schedule_id, 1, at)
    execution = backends.store.begin_attempt(occurrence, "e", at, at + timedelta(minutes=1))
    assert execution is not None
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, at, answer=Answer(200))
    assert backends.store.finish_attempt(execution, "e", outcome)
    return occurrence.occurrence_id


def test_a_sweep_deletes_what_is_older_than_retention(tmp_path: Path, backends: Backends) -> None:
    definition = ScheduleDefinition(
        Timing("UTC", interval=Every(1, Unit.DAY)), Payload("GET", "https://example.com/")
    )
    store = backends.store
    store.apply_definition(("default", "daily", 1, definition, T0 + timedelta(days=41), T0))
    store.apply_definition(("default", "finished", 1, definition, None, T0))
    old = finished_run(backends, "daily", T0)
    recent = finished_run(backends, "daily", T0 + timedelta(days=35))

    settings = sqlite_settings(tmp_path, execution_retention_days=30, schedule_retention_days=30)
    poller = build_poller(settings, backends, clock=FixedClock(T0 + timedelta(days=40)))
    assert poller.sweep_expired() == (1, 1)

    assert store.get_execution("default", old) is None
    assert store.get_execution("default", recent) is not None
    assert store.get_schedule("default", "finished") is None
    daily = store.get_schedule("default", "daily")
    assert daily is not None and daily.status is ScheduleStatus.ACTIVE
    assert poller.sweep_expired() == (0, 0)


def test_a_schedules_changes_are_kept_as_long_as_its_runs(
    tmp_path: Path, backends: Backends
) -> None:
    """Changes older than the execution retention go; a deleted schedule's newer ones stay."""
    store = backends.store

    def made(seq: int, at: datetime, action: ChangeAction) -> Change:
        return Change("default", "gone", seq, seq, at, action, SYSTEM)

    old = made(1, T0, ChangeAction.CREATE)
    newer = made(2, T0 + timedelta(days=35), ChangeAction.DELETE)
    store.record_changes([old, newer])
    settings = sqlite_settings(tmp_path, execution_retention_days=30, schedule_retention_days=15)
    poller = build_poller(settings, backends, clock=FixedClock(T0 + timedelta(days=40)))
    poller.sweep_expired()
    assert store.list_changes("default", "gone", 10, None).items == [newer]
    later = build_poller(settings, backends, clock=FixedClock(T0 + timedelta(days=66)))
    later.sweep_expired()
    assert store.list_changes("default", "gone", 10, None).items == []
