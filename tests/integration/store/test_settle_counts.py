"""A settle that fails between recording the outcomes and counting the runs, tried again, counts
each run once: neither lost nor doubled.

``settle_attempts`` writes the outcomes, then the run counts. On SQLite both are one transaction,
so a failure between them undoes the outcomes too. On MongoDB they are two bulk writes: the
retry finds the outcomes its first try recorded (the record names the attempt) and counts them,
each count guarded by its occurrence, also when the first try's count was applied but its answer
lost. Over every store adapter, with the ``store`` fixture of the store contract.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqlite import executions as sqlite_executions
from shared.errors import Transient
from shared.model import Answer, AttemptOutcome, ExecutionStatus
from shared.ports import Store
from tests.integration.store.test_store_contract import (
    MINUTE,
    SECOND,
    T0,
    TENANT,
    create,
    occurrence,
    store,
)

__all__ = ["store"]  # the fixture, parametrised over every adapter


class CountsFailOnce:
    """The schedules collection, whose next bulk write (the run counts) fails: before it is
    applied, or after (the server applied it, the answer was lost)."""

    def __init__(self, schedules: Any, applied: bool) -> None:
        self.schedules = schedules
        self.applied = applied
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.schedules, name)

    def bulk_write(self, requests: Any, **options: Any) -> Any:
        if self.failed:
            return self.schedules.bulk_write(requests, **options)
        self.failed = True
        if self.applied:
            self.schedules.bulk_write(requests, **options)
        raise AutoReconnect("connection closed")


def fail_the_counts_once(store: Store, monkeypatch: pytest.MonkeyPatch, applied: bool) -> None:
    if isinstance(store, MongoStore):
        monkeypatch.setattr(store, "schedules", CountsFailOnce(store.schedules, applied))
        return
    real = sqlite_executions.count_runs
    calls = iter([True])

    def failing_once(*arguments: Any) -> Any:
        if next(calls, False):
            raise sqlite3.OperationalError("disk I/O error")
        return real(*arguments)

    monkeypatch.setattr(sqlite_executions, "count_runs", failing_once)


@pytest.mark.parametrize("applied", [False, True], ids=["count-not-applied", "answer-lost"])
def test_a_settle_tried_again_after_failing_between_outcome_and_count_counts_once(
    store: Store, monkeypatch: pytest.MonkeyPatch, applied: bool
) -> None:
    for schedule_id in ("s1", "s2"):
        create(store, schedule_id)
    first, second = store.begin_attempts(
        [occurrence("s1"), occurrence("s2")], "executor-1", T0, T0 + MINUTE
    )
    assert first is not None and second is not None
    ok = AttemptOutcome(ExecutionStatus.SUCCEEDED, T0 + SECOND, Answer(200), 3.0)
    failed = AttemptOutcome(ExecutionStatus.FAILED, T0 + SECOND, Answer(500), 3.0, error="HTTP 500")
    settled = [(first, ok), (second, failed)]
    fail_the_counts_once(store, monkeypatch, applied)
    with pytest.raises((Transient, sqlite3.OperationalError)):
        store.settle_attempts(settled, "executor-1")
    # The settler tries again while the leases hold.
    assert store.settle_attempts(settled, "executor-1") == [True, True]
    # And again, as if that answer was lost too: nothing more is counted.
    store.settle_attempts(settled, "executor-1")
    s1 = store.get_schedule(TENANT, "s1")
    s2 = store.get_schedule(TENANT, "s2")
    assert s1 is not None and s2 is not None
    assert (s1.run_count, s1.failure_count, s1.last_status) == (1, 0, "succeeded")
    assert (s2.run_count, s2.failure_count, s2.consecutive_failures) == (1, 1, 1)
    recorded = store.get_execution(TENANT, occurrence("s1").occurrence_id)
    assert recorded is not None and recorded.status is ExecutionStatus.SUCCEEDED


def test_another_attempt_of_the_occurrence_is_not_taken_for_this_one(store: Store) -> None:
    # A settle whose attempt lost its lease (another executor took the occurrence over and
    # recorded its own outcome) is not recorded, and counts nothing.
    create(store, "s1")
    [first] = store.begin_attempts([occurrence("s1")], "executor-1", T0, T0 + SECOND)
    later = T0 + 2 * SECOND
    [second] = store.begin_attempts([occurrence("s1")], "executor-2", later, later + MINUTE)
    assert first is not None and second is not None
    ok = AttemptOutcome(ExecutionStatus.SUCCEEDED, later + SECOND, Answer(200), 3.0)
    assert store.settle_attempts([(second, ok)], "executor-2") == [True]
    assert store.settle_attempts([(first, ok)], "executor-1") == [False]
    s1 = store.get_schedule(TENANT, "s1")
    assert s1 is not None and s1.run_count == 1
