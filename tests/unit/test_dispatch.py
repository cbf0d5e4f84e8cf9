"""The poller's plan for a claimed schedule after an outage: misfire policies and limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from shared.dispatch import MAX_MISSED_WALK, plan_dispatch
from shared.model import (
    Every,
    Misfire,
    MisfirePolicy,
    Payload,
    Schedule,
    ScheduleDefinition,
    Timing,
    Unit,
)
from tests.support.factories import make_schedule

ACCEPTED = datetime(2026, 1, 1, tzinfo=UTC)
THRESHOLD = timedelta(seconds=5)


def every_second(policy: MisfirePolicy, max_occurrences: int | None = None) -> Schedule:
    timing = Timing(
        "UTC", interval=Every(1, Unit.SECOND), start=ACCEPTED, max_occurrences=max_occurrences
    )
    definition = ScheduleDefinition(
        timing, Payload("GET", "https://example.com/"), misfire=Misfire(policy)
    )
    return make_schedule(definition, ACCEPTED, ACCEPTED)


def test_fire_all_after_an_outage_stops_at_max_occurrences() -> None:
    now = ACCEPTED + timedelta(seconds=11)
    plan = plan_dispatch(
        every_second(MisfirePolicy.FIRE_ALL, max_occurrences=3), now, now, 100, THRESHOLD
    )
    assert [item.scheduled_time for item in plan.to_send] == [
        ACCEPTED + timedelta(seconds=k) for k in range(3)
    ]
    assert plan.occurrence_count == 3
    assert plan.next_schedule_time is None


def test_fire_once_runs_once_for_a_stretch_longer_than_one_walk() -> None:
    schedule = every_second(MisfirePolicy.FIRE_ONCE)
    now = ACCEPTED + timedelta(seconds=int(MAX_MISSED_WALK * 2.5))
    sent = []
    skipped = 0
    while schedule.next_schedule_time is not None and schedule.next_schedule_time < now:
        plan = plan_dispatch(schedule, now, now, 100, THRESHOLD)
        sent += plan.to_send
        skipped += len(plan.skipped)
        schedule = schedule.evolve(
            next_schedule_time=plan.next_schedule_time, occurrence_count=plan.occurrence_count
        )
    missed = [item for item in sent if item.scheduled_time < now - THRESHOLD]
    assert len(missed) == 1
    assert missed[0].scheduled_time >= now - THRESHOLD - timedelta(seconds=1)
    assert skipped >= MAX_MISSED_WALK * 2
