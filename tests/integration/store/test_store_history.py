"""A schedule's history lists its runs: superseded occurrences are counted, and listed only when
asked for skipped records; ``?status=`` selects one status.

``record_skips(..., superseded=True)`` and ``list_executions(..., status)`` (``shared.ports``)
over every store adapter, with the ``store`` fixture of the store contract.
"""

from __future__ import annotations

from shared.model import Answer, AttemptOutcome, ExecutionStatus
from shared.ports import HistoryRequest, Store
from tests.integration.store.test_store_contract import (
    MINUTE,
    T0,
    TENANT,
    create,
    occurrence,
    store,
)

__all__ = ["store"]  # the fixture, parametrised over every adapter


def listed(store: Store, status: ExecutionStatus | None = None, limit: int = 50) -> list[str]:
    """Every record ``list_executions`` gives, page after page, as ``<minute>:<status>``."""
    found: list[str] = []
    cursor = None
    while True:
        page = store.list_executions(HistoryRequest(TENANT, "s1", limit, cursor, status))
        found += [
            f"{int((item.scheduled_time - T0) / MINUTE)}:{item.status.value}" for item in page.items
        ]
        cursor = page.next_cursor
        if cursor is None:
            return found


def superseded_count(store: Store, schedule_id: str = "s1") -> int:
    schedule = store.get_schedule(TENANT, schedule_id)
    assert schedule is not None
    return schedule.superseded_count


def test_superseded_occurrences_are_counted_and_listed_only_as_skipped(store: Store) -> None:
    create(store, "s1")
    create(store, "s2")
    ran = store.begin_attempt(occurrence("s1", T0), "e", T0, T0 + MINUTE)
    assert ran is not None
    store.finish_attempt(
        ran, "e", AttemptOutcome(ExecutionStatus.SUCCEEDED, T0, answer=Answer(200))
    )
    # A run that was retrying when its schedule changed: skipped, and still a run.
    retried = store.begin_attempt(occurrence("s1", T0 + MINUTE), "e", T0, T0 + MINUTE)
    assert retried is not None
    store.finish_attempt(
        retried, "e", AttemptOutcome(ExecutionStatus.RETRYING, T0, answer=Answer(503))
    )
    store.record_skips([(occurrence("s1", T0 + 2 * MINUTE), "missed")], T0)
    superseded = [occurrence("s1", T0 + n * MINUTE) for n in (1, 3, 4, 5)]
    written = store.record_skips(
        [(item, "schedule changed (revision 1 → 2)") for item in superseded]
        + [(occurrence("s2", T0 + 3 * MINUTE), "schedule paused")],
        T0 + MINUTE,
        superseded=True,
    )
    assert written == 5
    # The three created superseded on s1 (not the run that retried), one on s2.
    assert (superseded_count(store), superseded_count(store, "s2")) == (3, 1)
    # A repeat (a redelivered message) writes and counts nothing more.
    assert store.record_skips([(superseded[1], "again")], T0 + MINUTE, superseded=True) == 0
    assert superseded_count(store) == 3

    assert listed(store) == ["2:skipped", "1:skipped", "0:succeeded"]
    assert listed(store, limit=1) == listed(store)
    every_skip = ["5:skipped", "4:skipped", "3:skipped", "2:skipped", "1:skipped"]
    assert listed(store, ExecutionStatus.SKIPPED) == every_skip
    assert listed(store, ExecutionStatus.SKIPPED, limit=2) == every_skip
    flags = {
        minute: store.get_execution(TENANT, occurrence("s1", T0 + minute * MINUTE).occurrence_id)
        for minute in range(6)
    }
    assert {m: r.superseded for m, r in flags.items() if r is not None} == {
        0: False,
        1: False,
        2: False,
        3: True,
        4: True,
        5: True,
    }


def test_an_occurrence_that_runs_after_being_superseded_is_a_run_again(store: Store) -> None:
    create(store, "s1")
    item = occurrence("s1", T0 + MINUTE)
    store.record_skips([(item, "schedule paused")], T0, superseded=True)
    assert listed(store) == []
    # The same occurrence id under the new revision (a change that kept the times).
    again = store.begin_attempts([occurrence("s1", T0 + MINUTE, revision=2)], "e", T0, T0 + MINUTE)
    assert again[0] is not None and not again[0].superseded
    assert listed(store) == ["1:running"]
    record = store.get_execution(TENANT, item.occurrence_id)
    assert record is not None and not record.superseded
    # The count stays: that message of the old revision was superseded.
    assert superseded_count(store) == 1


def test_the_history_by_status(store: Store) -> None:
    create(store, "s1")
    outcomes = [
        ExecutionStatus.SUCCEEDED,
        ExecutionStatus.FAILED,
        ExecutionStatus.SUCCEEDED,
        ExecutionStatus.RETRYING,
        ExecutionStatus.SUCCEEDED,
    ]
    for minute, status in enumerate(outcomes):
        began = store.begin_attempt(occurrence("s1", T0 + minute * MINUTE), "e", T0, T0 + MINUTE)
        assert began is not None
        store.finish_attempt(began, "e", AttemptOutcome(status, T0, answer=Answer(200)))
    assert store.begin_attempt(occurrence("s1", T0 + 9 * MINUTE), "e", T0, T0 + MINUTE)
    assert listed(store, ExecutionStatus.SUCCEEDED) == ["4:succeeded", "2:succeeded", "0:succeeded"]
    assert listed(store, ExecutionStatus.SUCCEEDED, limit=1) == listed(
        store, ExecutionStatus.SUCCEEDED
    )
    assert listed(store, ExecutionStatus.FAILED) == ["1:failed"]
    assert listed(store, ExecutionStatus.RETRYING) == ["3:retrying"]
    assert listed(store, ExecutionStatus.RUNNING) == ["9:running"]
    assert listed(store, ExecutionStatus.SKIPPED) == []
    assert len(listed(store)) == 6
