"""A schedule pauses itself after ``pause_after_failures`` failed occurrences in a row, in the
write that counts its runs (``Store.settle_attempts``, ``record_run``), on every store adapter
(the ``store`` fixture of the store contract)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from shared.model import (
    Answer,
    AttemptOutcome,
    ExecutionStatus,
    PausedBy,
    Schedule,
    ScheduleStatus,
    revision_at,
)
from shared.ports import StateChange, Store
from tests.integration.store.test_store_contract import (
    MINUTE,
    T0,
    TENANT,
    claim,
    definition,
    occurrence,
    store,
)

__all__ = ["store"]  # the fixture, parametrised over every adapter

SECOND = timedelta(seconds=1)


def create(store: Store, schedule_id: str, pause_after_failures: int | None) -> None:
    defined = dataclasses.replace(definition(), pause_after_failures=pause_after_failures)
    assert store.apply_definition((TENANT, schedule_id, 1, defined, T0, T0 - MINUTE))


def settle(store: Store, outcomes: list[tuple[str, int, bool]]) -> None:
    """Settle one batch: for each ``(schedule_id, minute, succeeded)`` the final outcome of the
    occurrence at ``T0 + minute``, finished a second after it."""
    settled = []
    for schedule_id, minute, succeeded in outcomes:
        at = T0 + minute * MINUTE
        execution = store.begin_attempt(occurrence(schedule_id, at), "executor-1", at, at + MINUTE)
        assert execution is not None
        status = ExecutionStatus.SUCCEEDED if succeeded else ExecutionStatus.FAILED
        error = None if succeeded else "HTTP 500"
        settled.append((execution, AttemptOutcome(status, at + SECOND, Answer(500), 1.0, error)))
    assert store.settle_attempts(settled, "executor-1") == [True] * len(settled)


def stored(store: Store, schedule_id: str = "s1") -> Schedule:
    schedule = store.get_schedule(TENANT, schedule_id)
    assert schedule is not None
    return schedule


def test_a_schedule_pauses_itself_when_its_failures_in_a_row_reach_the_limit(
    store: Store,
) -> None:
    create(store, "s1", pause_after_failures=3)
    settle(store, [("s1", 0, False), ("s1", 1, False), ("s1", 2, True)])  # a success resets
    settle(store, [("s1", 3, False), ("s1", 4, False)])
    assert stored(store).status is ScheduleStatus.ACTIVE
    assert stored(store).consecutive_failures == 2
    settle(store, [("s1", 5, False)])
    paused = stored(store)
    failed_at = T0 + 5 * MINUTE + SECOND
    assert (paused.status, paused.paused_by, paused.paused_at) == (
        ScheduleStatus.PAUSED,
        PausedBy.FAILURES,
        failed_at,
    )
    assert (paused.run_count, paused.failure_count, paused.consecutive_failures) == (6, 5, 3)
    assert paused.state_revision == revision_at(failed_at)
    assert claim(store, now=T0 + 6 * MINUTE) == []  # the poller no longer sees it


def test_one_batch_pauses_only_the_schedules_whose_streak_reached_their_limit(
    store: Store,
) -> None:
    create(store, "s1", pause_after_failures=2)
    create(store, "s2", pause_after_failures=2)
    create(store, "s3", pause_after_failures=None)
    create(store, "s4", pause_after_failures=1)
    settle(
        store,
        [
            ("s1", 0, False),
            ("s1", 1, False),
            ("s2", 0, False),
            ("s2", 1, False),
            ("s2", 2, True),  # its last outcome succeeded: the streak is over
            ("s3", 0, False),
            ("s3", 1, False),
            ("s4", 0, True),
        ],
    )
    statuses = [stored(store, name).status for name in ("s1", "s2", "s3", "s4")]
    assert statuses == [
        ScheduleStatus.PAUSED,
        ScheduleStatus.ACTIVE,
        ScheduleStatus.ACTIVE,
        ScheduleStatus.ACTIVE,
    ]


def test_a_resume_clears_the_pause_and_the_streak(store: Store) -> None:
    create(store, "s1", pause_after_failures=1)
    settle(store, [("s1", 0, False)])
    paused = stored(store)
    assert paused.paused_by is PausedBy.FAILURES
    resumed_at = T0 + 10 * MINUTE
    assert store.apply_state(
        StateChange(
            TENANT, "s1", revision_at(resumed_at), ScheduleStatus.ACTIVE, resumed_at, resumed_at
        )
    )
    resumed = stored(store)
    assert (resumed.status, resumed.paused_by, resumed.paused_at) == (
        ScheduleStatus.ACTIVE,
        None,
        None,
    )
    assert resumed.consecutive_failures == 0
    # A failure older than the resume (a call already in flight) does not pause it again; a
    # newer one does.
    settle(store, [("s1", 5, False)])
    assert stored(store).status is ScheduleStatus.ACTIVE
    settle(store, [("s1", 11, False)])
    assert stored(store).status is ScheduleStatus.PAUSED


def test_an_older_resume_does_not_undo_a_pause_by_failures(store: Store) -> None:
    create(store, "s1", pause_after_failures=1)
    settle(store, [("s1", 0, False)])
    assert not store.apply_state(
        StateChange(TENANT, "s1", revision_at(T0), ScheduleStatus.ACTIVE, T0 + MINUTE, T0 + MINUTE)
    )
    assert stored(store).status is ScheduleStatus.PAUSED


def test_a_pause_by_its_owner_says_so_and_failures_do_not_change_it(store: Store) -> None:
    create(store, "s1", pause_after_failures=1)
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert (stored(store).paused_by, stored(store).paused_at) == (PausedBy.USER, T0)
    settle(store, [("s1", 1, False)])  # a manual run, say
    paused = stored(store)
    assert (paused.status, paused.paused_by, paused.state_revision) == (
        ScheduleStatus.PAUSED,
        PausedBy.USER,
        2,
    )


def test_a_replace_keeps_a_pause_by_failures_and_its_new_limit_applies(store: Store) -> None:
    create(store, "s1", pause_after_failures=1)
    settle(store, [("s1", 0, False)])
    relaxed = dataclasses.replace(definition(), pause_after_failures=5)
    later: datetime = T0 + MINUTE
    assert store.apply_definition((TENANT, "s1", 2, relaxed, later, later))
    schedule = stored(store)
    assert (schedule.status, schedule.paused_by) == (ScheduleStatus.PAUSED, PausedBy.FAILURES)
    assert schedule.live_definition.pause_after_failures == 5


def test_record_run_alone_pauses_too(store: Store) -> None:
    create(store, "s1", pause_after_failures=2)
    store.record_run(TENANT, "s1", succeeded=False, at=T0)
    store.record_run(TENANT, "s1", succeeded=False, at=T0 + MINUTE)
    paused = stored(store)
    assert (paused.status, paused.paused_by, paused.paused_at) == (
        ScheduleStatus.PAUSED,
        PausedBy.FAILURES,
        T0 + MINUTE,
    )
