"""The poller's plan for a claimed schedule: misfire policies and limits after an outage, what it
keeps of the times it sent (the next fire a read shows), and its CPU budget."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from shared.dispatch import (
    MAX_MISSED_WALK,
    MAX_SENT_AHEAD,
    DispatchPlan,
    next_fire_time,
    plan_dispatch,
)
from shared.model import (
    Every,
    Misfire,
    MisfirePolicy,
    Payload,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
    Unit,
)
from shared.notations import build_recurrence
from shared.recurrence import TooMuchWork
from shared.recurrence import base as recurrence_base
from tests.support.factories import make_schedule

ACCEPTED = datetime(2026, 1, 1, tzinfo=UTC)
THRESHOLD = timedelta(seconds=5)


def every_second(policy: MisfirePolicy, max_occurrences: int | None = None) -> Schedule:
    timing = Timing(
        "UTC", interval=Every(1, Unit.SECOND), start=ACCEPTED, max_occurrences=max_occurrences
    )
    return scheduled(timing, policy)


def scheduled(timing: Timing, policy: MisfirePolicy = MisfirePolicy.FIRE_ALL) -> Schedule:
    definition = ScheduleDefinition(
        timing, Payload("GET", "https://example.com/"), misfire=Misfire(policy)
    )
    first = build_recurrence(timing, ACCEPTED).first_fire(ACCEPTED)
    return make_schedule(definition, ACCEPTED, first)


def advanced(schedule: Schedule, plan: DispatchPlan) -> Schedule:
    """The schedule as the store keeps it once the poller advanced it by ``plan``."""
    return schedule.evolve(
        next_schedule_time=plan.next_schedule_time,
        occurrence_count=plan.occurrence_count,
        sent_ahead=plan.sent_ahead,
        status=ScheduleStatus.ACTIVE if plan.next_schedule_time else ScheduleStatus.COMPLETED,
    )


def nominal(plan: DispatchPlan) -> list[datetime]:
    return [item.scheduled_time for item in plan.to_send]


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


# -- the next fire, from what the poller keeps -------------------------------------------------


def test_the_next_fire_is_the_first_time_sent_that_is_still_to_come() -> None:
    """Every 10 s, sent five minutes ahead: a read between two polls shows the next one sent,
    not the dispatch cursor, and computes nothing."""
    schedule = scheduled(Timing("UTC", interval=Every(10, Unit.SECOND), start=ACCEPTED))
    plan = plan_dispatch(schedule, ACCEPTED, ACCEPTED + timedelta(minutes=5), 100, THRESHOLD)
    assert plan.sent_ahead == tuple(nominal(plan))
    assert len(plan.sent_ahead) == 31
    stored = advanced(schedule, plan)
    for seconds, expected in ((0, 0), (0.001, 10), (15, 20), (299, 300), (300, 300), (301, 310)):
        now = ACCEPTED + timedelta(seconds=seconds)
        assert next_fire_time(stored, now) == ACCEPTED + timedelta(seconds=expected), seconds
    # The next poll keeps what is still to come and adds what it sends.
    later = ACCEPTED + timedelta(seconds=42)
    replan = plan_dispatch(stored, later, later + timedelta(minutes=5), 100, THRESHOLD)
    assert replan.sent_ahead[0] == ACCEPTED + timedelta(seconds=50)
    assert replan.sent_ahead[-1] == ACCEPTED + timedelta(seconds=340)
    assert next_fire_time(advanced(stored, replan), later) == ACCEPTED + timedelta(seconds=50)
    assert next_fire_time(stored.evolve(status=ScheduleStatus.PAUSED), later) is None


def test_a_completed_schedule_shows_its_last_times_sent_then_none() -> None:
    timing = Timing("UTC", interval=Every(1, Unit.MINUTE), start=ACCEPTED, max_occurrences=3)
    schedule = scheduled(timing)
    plan = plan_dispatch(schedule, ACCEPTED, ACCEPTED + timedelta(minutes=5), 100, THRESHOLD)
    stored = advanced(schedule, plan)
    assert (stored.status, stored.next_schedule_time) == (ScheduleStatus.COMPLETED, None)
    assert next_fire_time(stored, ACCEPTED + timedelta(seconds=61)) == ACCEPTED + 2 * MINUTE
    assert next_fire_time(stored, ACCEPTED + timedelta(seconds=121)) is None


def test_no_more_than_max_sent_ahead_are_still_to_come() -> None:
    """A schedule firing every second with five minutes of look-ahead is sent 100 ahead; each
    poll tops that up."""
    schedule = every_second(MisfirePolicy.FIRE_ALL)
    horizon = ACCEPTED + timedelta(minutes=5)
    plan = plan_dispatch(schedule, ACCEPTED, horizon, 1000, THRESHOLD)
    assert len(plan.to_send) == len(plan.sent_ahead) == MAX_SENT_AHEAD
    assert plan.next_schedule_time == ACCEPTED + timedelta(seconds=MAX_SENT_AHEAD)
    later = ACCEPTED + timedelta(seconds=3.5)
    replan = plan_dispatch(advanced(schedule, plan), later, horizon, 1000, THRESHOLD)
    assert nominal(replan) == [ACCEPTED + timedelta(seconds=100 + k) for k in range(4)]
    assert len(replan.sent_ahead) == MAX_SENT_AHEAD
    assert replan.sent_ahead[0] == ACCEPTED + timedelta(seconds=4)


MINUTE = timedelta(minutes=1)


# -- the CPU budget ------------------------------------------------------------------------------


@pytest.fixture
def slow_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reading of the CPU clock finds a millisecond more spent: a budget runs out after
    a known number of steps, however fast the machine."""
    ticks = itertools.count()
    monkeypatch.setattr(recurrence_base.cpu_clock, "thread_time", lambda: next(ticks) / 1000)


@pytest.mark.usefixtures("slow_cpu")
def test_a_walk_out_of_budget_sends_what_it_found_and_goes_on_from_there() -> None:
    """What one poll cannot compute the next goes on with: no time skipped, none sent twice."""
    schedule = scheduled(Timing("UTC", cron="* * * * *"))
    now = ACCEPTED
    horizon = ACCEPTED + timedelta(hours=1)
    sent: list[datetime] = []
    polls = 0
    while schedule.next_schedule_time is not None and schedule.next_schedule_time <= horizon:
        plan = plan_dispatch(schedule, now, horizon, 1000, THRESHOLD, budget_seconds=0.05)
        assert plan.to_send, "each poll makes progress"
        assert plan.next_schedule_time not in nominal(plan)
        sent += nominal(plan)
        schedule = advanced(schedule, plan)
        polls += 1
    assert polls > 2  # the budget did cut the walks short
    assert sent == [ACCEPTED + k * MINUTE for k in range(61)]


@pytest.mark.usefixtures("slow_cpu")
def test_a_walk_that_finds_nothing_within_its_budget_is_too_much_work() -> None:
    schedule = scheduled(Timing("UTC", cron="* * * * *"))
    with pytest.raises(TooMuchWork):
        plan_dispatch(schedule, ACCEPTED, ACCEPTED + MINUTE, 100, THRESHOLD, budget_seconds=0.001)
