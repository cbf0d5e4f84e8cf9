"""What a bulk operation's page needs of the store (``POST /schedules/bulk``), on every store
adapter: the listing by a selector (ids among the criteria) and its count, and a page of
pauses, resumes and deletes in one ``apply_states`` that keeps ``apply_state``'s guards."""

from __future__ import annotations

import dataclasses

from shared.model import ScheduleStatus
from shared.ports import IdempotencyRecord, ScheduleFilter, StateChange, Store
from tests.integration.store.test_store_contract import (
    I0,
    MINUTE,
    T0,
    TENANT,
    definition,
    store,
)

__all__ = ["store"]  # the fixture, parametrised over every adapter


def create(store: Store, tenant: str, schedule_id: str, tags: tuple[str, ...]) -> None:
    defined = dataclasses.replace(definition(), tags=tags, name=f"job {schedule_id}")
    assert store.apply_definition((tenant, schedule_id, 1, defined, T0, T0 - MINUTE))


def listed(store: Store, query: ScheduleFilter, tenant: str = TENANT) -> list[str]:
    return [s.schedule_id for s in store.list_schedules(tenant, query, 100, None).items]


def statuses(store: Store, ids: tuple[str, ...]) -> dict[str, ScheduleStatus | None]:
    found = store.get_schedules([(TENANT, one) for one in ids])
    return {one: found[(TENANT, one)].status if (TENANT, one) in found else None for one in ids}


def test_a_selector_lists_and_counts_the_same_schedules_of_one_tenant(store: Store) -> None:
    for schedule_id in ("a1", "a2", "b1"):
        create(store, TENANT, schedule_id, ("billing",) if schedule_id != "a2" else ("search",))
    create(store, "globex", "a1", ("billing",))
    queries = {
        ScheduleFilter(tag="billing"): ["a1", "b1"],
        ScheduleFilter(ids=("a1", "a2", "zz")): ["a1", "a2"],
        ScheduleFilter(ids=("a1", "a2"), tag="billing"): ["a1"],
        ScheduleFilter(ids=("b1",), name_prefix="job a"): [],
        ScheduleFilter(ids=()): [],
    }
    for query, expected in queries.items():
        assert listed(store, query) == expected, query
        assert store.count_matching(TENANT, query) == len(expected), query
    assert store.count_matching("globex", ScheduleFilter(tag="billing")) == 1
    assert store.count_matching("initech", ScheduleFilter(tag="billing")) == 0


def test_a_page_of_state_changes_keeps_each_guard(store: Store) -> None:
    for schedule_id in ("s1", "s2", "s3"):
        create(store, TENANT, schedule_id, ())
    assert store.apply_state(StateChange(TENANT, "s2", 5, ScheduleStatus.PAUSED, None, T0))
    changes = [
        StateChange(TENANT, "s1", 10, ScheduleStatus.PAUSED, None, T0),
        # Paused already: the pause's guard refuses it.
        StateChange(TENANT, "s2", 11, ScheduleStatus.PAUSED, None, T0),
        # Older than the state change it would follow: refused.
        StateChange(TENANT, "s3", 0, ScheduleStatus.DELETED, None, T0),
        StateChange(TENANT, "s1", 12, ScheduleStatus.DELETED, None, T0),  # named twice
        StateChange("globex", "s3", 13, ScheduleStatus.DELETED, None, T0),  # no such schedule
    ]
    assert store.apply_states(changes) == [True, False, False, False, False]
    assert statuses(store, ("s1", "s2", "s3")) == {
        "s1": ScheduleStatus.PAUSED,
        "s2": ScheduleStatus.PAUSED,
        "s3": ScheduleStatus.ACTIVE,
    }
    assert store.get_schedule("globex", "s3") is None  # no tombstone made
    resumed = T0 + MINUTE
    again = [
        StateChange(TENANT, "s1", 20, ScheduleStatus.ACTIVE, resumed, T0),
        StateChange(TENANT, "s3", 21, ScheduleStatus.DELETED, None, T0),
    ]
    assert store.apply_states(again) == [True, True]
    s1 = store.get_schedule(TENANT, "s1")
    assert s1 is not None and (s1.status, s1.next_schedule_time) == (ScheduleStatus.ACTIVE, resumed)
    assert listed(store, ScheduleFilter(ids=("s1", "s2", "s3"))) == ["s1", "s2"]
    assert store.apply_states([]) == []


def test_an_idempotency_record_keeps_a_bulk_parts_answer(store: Store) -> None:
    # I0, not T0: a record must not have expired by the wall clock (MongoDB's TTL index).
    record = IdempotencyRecord(
        tenant=TENANT,
        key="bulk:part-1",
        fingerprint="f1",
        schedule_id="",
        revision=0,
        next_schedule_time=None,
        timezone="",
        created_at=I0,
        expires_at=I0 + MINUTE,
        answer='{"done":true,"changed":3}',
    )
    assert store.save_idempotency_record(record, I0) == (record, True)
    again = dataclasses.replace(record, answer='{"done":true,"changed":0}')
    assert store.save_idempotency_record(again, I0) == (record, False)
    assert store.get_idempotency_record(TENANT, "bulk:part-1", I0) == record
    assert store.get_idempotency_record("globex", "bulk:part-1", I0) is None
