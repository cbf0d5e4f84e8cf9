"""The store's batch methods keep the guards of their one-at-a-time counterparts, per item.

``advance_schedules`` and ``settle_attempts`` (``shared.ports.Store``) run over every
store adapter, with the ``store`` fixture of the store contract.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from shared.model import Answer, AttemptOutcome, ExecutionStatus, ScheduleStatus
from shared.ports import Advance, ClaimRequest, StateChange, Store
from tests.integration.store.test_store_contract import (
    MINUTE,
    SECOND,
    T0,
    TENANT,
    claim,
    create,
    occurrence,
    store,
)

__all__ = ["store"]  # the fixture, parametrised over every adapter


def test_advance_schedules_applies_each_under_its_own_guard(store: Store) -> None:
    for schedule_id in ("s1", "s2", "s3"):
        create(store, schedule_id)
    claimed = {
        schedule.schedule_id: schedule
        for schedule in store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    }
    # A replace lands on s2 and a pause on s3 while poller-1 holds them.
    assert create(store, "s2", revision=2, next_time=T0 + 30 * MINUTE)
    assert store.apply_state(StateChange(TENANT, "s3", 2, ScheduleStatus.PAUSED, None, T0))
    applied = store.advance_schedules(
        [
            Advance(claimed["s1"], T0 + 5 * MINUTE, 1),
            Advance(claimed["s2"], T0 + 5 * MINUTE, 1),
            Advance(claimed["s3"], None, 1),
        ],
        "poller-1",
        T0,
    )
    assert applied == [True, False, False]
    s1, s2, s3 = (store.get_schedule(TENANT, name) for name in ("s1", "s2", "s3"))
    assert s1 is not None and s2 is not None and s3 is not None
    assert (s1.next_schedule_time, s1.occurrence_count, s1.lease_owner) == (
        T0 + 5 * MINUTE,
        1,
        None,
    )
    assert (s2.next_schedule_time, s2.revision) == (T0 + 30 * MINUTE, 2)
    assert (s3.status, s3.next_schedule_time) == (ScheduleStatus.PAUSED, T0)
    assert claim(store, now=T0 + 5 * MINUTE) == ["s1"]


def test_advance_schedules_is_guarded_by_the_owner_and_accepts_nothing(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert store.advance_schedules([Advance(claimed, None, 1)], "poller-2", T0) == [False]
    assert store.advance_schedules([], "poller-1", T0) == []
    assert store.advance_schedules([Advance(claimed, None, 1)], "poller-1", T0) == [True]
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.COMPLETED


def test_settle_attempts_records_each_and_counts_only_recorded_final_ones(store: Store) -> None:
    for schedule_id in ("s1", "s2", "s3", "s4"):
        create(store, schedule_id)
    started = {
        schedule_id: store.begin_attempt(occurrence(schedule_id), "executor-1", T0, T0 + MINUTE)
        for schedule_id in ("s1", "s2", "s3", "s4")
    }
    # s4's attempt is taken over by executor-2 after executor-1's lease ran out.
    later = T0 + 2 * MINUTE
    assert store.begin_attempt(occurrence("s4"), "executor-2", later, later + MINUTE) is not None
    finished = T0 + timedelta(seconds=1)
    outcomes = {
        "s1": AttemptOutcome(ExecutionStatus.SUCCEEDED, finished, Answer(200), 1.5),
        "s2": AttemptOutcome(ExecutionStatus.FAILED, finished, Answer(404), 2.0, "not found"),
        "s3": AttemptOutcome(
            ExecutionStatus.RETRYING, finished, Answer(503), 2.0, "unavailable", finished + MINUTE
        ),
        "s4": AttemptOutcome(ExecutionStatus.SUCCEEDED, finished, Answer(200), 1.0),
    }
    settled = []
    for schedule_id, execution in started.items():
        assert execution is not None
        settled.append((execution, outcomes[schedule_id]))
    assert store.settle_attempts(settled, "executor-1") == [True, True, True, False]

    def state(schedule_id: str) -> tuple[object, ...]:
        record = store.get_execution(TENANT, occurrence(schedule_id).occurrence_id)
        schedule = store.get_schedule(TENANT, schedule_id)
        assert record is not None and schedule is not None
        return (
            record.status,
            record.http_status,
            schedule.run_count,
            schedule.failure_count,
            schedule.last_status,
        )

    assert state("s1") == (ExecutionStatus.SUCCEEDED, 200, 1, 0, "succeeded")
    assert state("s2") == (ExecutionStatus.FAILED, 404, 1, 1, "failed")
    assert state("s3") == (ExecutionStatus.RETRYING, 503, 0, 0, None)  # not final: not counted
    assert state("s4") == (ExecutionStatus.RUNNING, None, 0, 0, None)  # lost its lease
    assert store.settle_attempts([], "executor-1") == []


def test_get_schedules_reads_every_key_tombstones_included_unknown_absent(store: Store) -> None:
    create(store, "s1")
    create(store, "s2", tenant="other")
    store.apply_state(StateChange(TENANT, "gone", 1, ScheduleStatus.DELETED, None, T0))
    found = store.get_schedules(
        [(TENANT, "s1"), (TENANT, "s2"), ("other", "s2"), (TENANT, "gone"), (TENANT, "s1")]
    )
    assert sorted(found) == sorted([("other", "s2"), (TENANT, "gone"), (TENANT, "s1")])
    assert found[(TENANT, "gone")].status is ScheduleStatus.DELETED
    assert found[(TENANT, "s1")].schedule_id == "s1"


def test_get_schedules_read_again_gives_each_schedule_as_it_is_now(store: Store) -> None:
    create(store, "s1")
    create(store, "s2")
    before = store.get_schedules([(TENANT, "s1"), (TENANT, "s2")])
    assert store.get_schedules([(TENANT, "s1"), (TENANT, "s2")]) == before
    create(store, "s1", revision=2, name="renamed")
    store.apply_state(StateChange(TENANT, "s2", 2, ScheduleStatus.PAUSED, None, T0))
    after = store.get_schedules([(TENANT, "s1"), (TENANT, "s2")])
    assert (after[(TENANT, "s1")].revision, after[(TENANT, "s1")].live_definition.name) == (
        2,
        "renamed",
    )
    assert after[(TENANT, "s2")].status is ScheduleStatus.PAUSED


def test_begin_attempts_keeps_the_guard_of_begin_attempt_per_item(store: Store) -> None:
    first, second = occurrence("s1", T0), occurrence("s1", T0 + MINUTE)
    lease = T0 + MINUTE
    [held] = store.begin_attempts([first], "executor-1", T0, lease)
    assert held is not None and held.attempts == 1
    began = store.begin_attempts([first, second], "executor-2", T0, lease)
    assert began[0] is None  # executor-1's lease is live
    assert began[1] is not None and began[1].occurrence_id == second.occurrence_id
    assert store.begin_attempts([], "executor-2", T0, lease) == []


def test_begin_attempts_takes_over_retries_skips_and_expired_leases_and_refuses_the_rest(
    store: Store,
) -> None:
    names = ("new", "retrying", "skipped", "expired", "live", "done")
    items = {name: occurrence(name) for name in names}
    for name in ("retrying", "live", "done"):
        began = store.begin_attempt(items[name], "executor-1", T0, T0 + MINUTE)
        assert began is not None
        if name in ("retrying", "done"):
            status = ExecutionStatus.RETRYING if name == "retrying" else ExecutionStatus.SUCCEEDED
            outcome = AttemptOutcome(status, T0 + SECOND, Answer(503), 1.0, None, T0 + MINUTE)
            assert store.finish_attempt(began, "executor-1", outcome)
    store.record_skips([(items["skipped"], "paused")], T0)
    # Half a minute on: executor-1's lease on "live" holds; "expired" had a shorter one.
    assert store.begin_attempt(items["expired"], "executor-1", T0, T0 + SECOND) is not None
    now = T0 + 30 * SECOND
    # A skip is taken over by a manual run of it (a backfill); a scheduled delivery is refused
    # (tests/integration/store/test_store_contract.py).
    items["skipped"] = dataclasses.replace(items["skipped"], manual=True)
    batch = store.begin_attempts(
        [items[name] for name in names] + [items["new"]], "executor-2", now, now + MINUTE
    )
    by_name = dict(zip([*names, "new-again"], batch, strict=True))
    assert by_name["live"] is None and by_name["done"] is None
    assert by_name["new-again"] is None  # the same occurrence twice in a batch fires once
    attempts = {name: execution.attempts for name, execution in by_name.items() if execution}
    assert attempts == {"new": 1, "retrying": 2, "skipped": 1, "expired": 2}
    for name in attempts:
        record = store.get_execution(TENANT, items[name].occurrence_id)
        assert record is not None
        assert (record.status, record.lease_owner) == (ExecutionStatus.RUNNING, "executor-2")
        assert record.lease_until == now + MINUTE


def test_settle_attempts_counts_a_run_once_when_an_outcome_is_given_twice(store: Store) -> None:
    create(store, "s1")
    began = store.begin_attempt(occurrence("s1"), "executor-1", T0, T0 + MINUTE)
    assert began is not None
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, T0 + SECOND, Answer(200), 1.0)
    assert store.settle_attempts([(began, outcome), (began, outcome)], "executor-1") == [
        True,
        False,
    ]
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None and schedule.run_count == 1


def test_record_skips_of_a_mixed_batch_writes_only_what_its_guards_allow(store: Store) -> None:
    items = {name: occurrence(name) for name in ("new", "retrying", "expired", "live", "done")}
    for name in ("retrying", "expired", "live", "done"):
        lease = T0 + (SECOND if name == "expired" else MINUTE)
        began = store.begin_attempt(items[name], "executor-1", T0, lease)
        assert began is not None
        if name in ("retrying", "done"):
            status = ExecutionStatus.RETRYING if name == "retrying" else ExecutionStatus.SUCCEEDED
            outcome = AttemptOutcome(status, T0 + SECOND, Answer(503), 1.0, None, T0 + MINUTE)
            assert store.finish_attempt(began, "executor-1", outcome)
    now = T0 + 30 * SECOND
    skips = [(items[name], f"skipped {name}") for name in items] + [(items["new"], "again")]
    assert store.record_skips(skips, now) == 3  # new, retrying, expired; "new" once
    statuses = {}
    for name, item in items.items():
        record = store.get_execution(TENANT, item.occurrence_id)
        assert record is not None
        statuses[name] = (record.status.value, record.error)
    assert statuses == {
        "new": ("skipped", "skipped new"),
        "retrying": ("skipped", "skipped retrying"),
        "expired": ("skipped", "skipped expired"),
        "live": ("running", None),
        "done": ("succeeded", None),
    }


def test_settle_attempts_counts_one_schedules_outcomes_in_their_order(store: Store) -> None:
    create(store, "s1")
    finished = T0 + timedelta(seconds=1)
    statuses = [ExecutionStatus.FAILED, ExecutionStatus.SUCCEEDED, *[ExecutionStatus.FAILED] * 2]
    settled = []
    for n, status in enumerate(statuses):
        moment = T0 + n * MINUTE
        execution = store.begin_attempt(occurrence("s1", moment), "executor-1", T0, T0 + MINUTE)
        assert execution is not None
        settled.append((execution, AttemptOutcome(status, finished + n * MINUTE, Answer(200))))
    assert store.settle_attempts(settled, "executor-1") == [True] * 4
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert (schedule.run_count, schedule.failure_count, schedule.consecutive_failures) == (4, 3, 2)
    assert schedule.last_status == "failed"
    assert schedule.last_run_at == finished + 3 * MINUTE
