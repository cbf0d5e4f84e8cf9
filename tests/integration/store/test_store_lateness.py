"""The store's part in lateness alerts (``shared.lateness``), over every store adapter: the
advance arms a schedule's cursor, a check finds it due, reads which occurrences have a record,
and of two moves from the same read only one applies; a claim holds it off, a replace and a
resume disarm it."""

from __future__ import annotations

from datetime import datetime

from shared.model import Occurrence, ScheduleStatus
from shared.ports import Advance, ClaimRequest, StateChange, Store
from tests.integration.store.test_store_contract import MINUTE, SECOND, T0, TENANT, create
from tests.integration.store.test_store_contract import store as contract_store

# The contract suite's fixture, over every adapter.
__all__ = ["contract_store"]


def armed(store: Store, schedule_id: str, at: datetime) -> None:
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    advance = Advance(claimed, T0 + 5 * MINUTE, 1, (), at)
    assert store.advance_schedules([advance], "poller-1", T0) == [True]


def test_a_check_finds_the_armed_schedule_and_one_move_of_a_read_applies(
    contract_store: Store,
) -> None:
    store = contract_store
    create(store, "s1")
    create(store, "s2", next_time=T0 + 10 * MINUTE)
    armed(store, "s1", T0 + 30 * SECOND)
    assert store.late_schedules(T0 + 29 * SECOND, 10) == []
    [due] = store.late_schedules(T0 + 30 * SECOND, 10)
    assert (due.schedule_id, due.late_check_at) == ("s1", T0 + 30 * SECOND)
    assert store.move_late_check(due, T0 + 90 * SECOND)
    # A second checker that read the same cursor: its move does not apply.
    assert not store.move_late_check(due, T0 + 90 * SECOND)
    assert store.late_schedules(T0 + 89 * SECOND, 10) == []
    [moved] = store.late_schedules(T0 + 90 * SECOND, 10)
    assert moved.late_check_at == T0 + 90 * SECOND
    assert store.move_late_check(moved, None)
    assert store.late_schedules(T0 + 10 * MINUTE, 10) == []


def test_a_claim_holds_the_cursor_and_a_replace_or_resume_disarms_it(contract_store: Store) -> None:
    store = contract_store
    create(store, "s1", next_time=T0)
    armed(store, "s1", T0 + 30 * SECOND)
    [due] = store.late_schedules(T0 + MINUTE, 10)
    # Claimed meanwhile: the check's move waits for the advance, which keeps the cursor.
    [claimed] = store.claim_due_schedules(
        ClaimRequest(T0 + 5 * MINUTE, T0 + MINUTE, 10, "p2", T0 + 2 * MINUTE)
    )
    assert not store.move_late_check(due, T0 + 90 * SECOND)
    assert claimed.late_check_at == T0 + 30 * SECOND
    advance = Advance(claimed, T0 + 10 * MINUTE, 2, (), claimed.late_check_at)
    assert store.advance_schedules([advance], "p2", T0 + MINUTE) == [True]
    [due] = store.late_schedules(T0 + MINUTE, 10)
    assert store.move_late_check(due, T0 + 90 * SECOND)
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert store.late_schedules(T0 + 10 * MINUTE, 10) == []  # a paused schedule is not late
    # Disarmed by the pause itself, whatever ends it.
    assert store.get_schedule(TENANT, "s1").late_check_at is None  # type: ignore[union-attr]
    assert store.apply_state(
        StateChange(TENANT, "s1", 3, ScheduleStatus.ACTIVE, T0 + 10 * MINUTE, T0)
    )
    assert store.get_schedule(TENANT, "s1").late_check_at is None  # type: ignore[union-attr]
    create(store, "s2", next_time=T0 + 10 * MINUTE)
    claims = store.claim_due_schedules(ClaimRequest(T0 + 10 * MINUTE, T0, 10, "p3", T0 + MINUTE))
    [claimed] = [item for item in claims if item.schedule_id == "s2"]
    advance = Advance(claimed, T0 + 15 * MINUTE, 1, (), T0 + 30 * SECOND)
    assert store.advance_schedules([advance], "p3", T0) == [True]
    assert create(store, "s2", revision=2)
    assert store.late_schedules(T0 + 10 * MINUTE, 10) == []


def test_recorded_occurrences_are_those_begun_or_skipped(contract_store: Store) -> None:
    store = contract_store
    create(store, "s1")
    ids = [f"s1:2026-03-08T07:3{n}:00.000Z" for n in range(3)]
    begun = Occurrence(TENANT, "s1", 1, T0, occurrence_id=ids[0])
    skipped = Occurrence(TENANT, "s1", 1, T0 + MINUTE, occurrence_id=ids[1])
    assert store.begin_attempt(begun, "x", T0, T0 + MINUTE) is not None
    assert store.record_skips([(skipped, "missed")], T0) == 1
    assert store.recorded_occurrences(TENANT, "s1", ids) == set(ids[:2])
    assert store.recorded_occurrences("other", "s1", ids) == set()
    assert store.recorded_occurrences(TENANT, "s1", []) == set()
