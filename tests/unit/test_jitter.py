"""Jitter: each occurrence fires at a spread, yet fixed, delay after its nominal time."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from shared.dispatch import fire_time, plan_dispatch
from shared.model import (
    Every,
    MisfirePolicy,
    Occurrence,
    Payload,
    Schedule,
    ScheduleDefinition,
    Timing,
    Unit,
    occurrence_id,
)
from tests.support.factories import make_schedule

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_delay_is_drawn_from_the_id_within_the_window_and_spread() -> None:
    moments = [START + timedelta(minutes=n) for n in range(200)]
    delays = [
        (fire_time(occurrence_id("s", moment), moment, 60) - moment).total_seconds()
        for moment in moments
    ]
    assert all(0 <= delay <= 60 for delay in delays)
    assert len(set(delays)) > 190  # to the millisecond, hardly two alike
    assert min(delays) < 6 and max(delays) > 54  # over the whole window
    assert sum(delays) / len(delays) == pytest.approx(30, abs=5)
    again = [
        (fire_time(occurrence_id("s", moment), moment, 60) - moment).total_seconds()
        for moment in moments
    ]
    assert again == delays
    other = (fire_time(occurrence_id("t", START), START, 60) - START).total_seconds()
    assert fire_time(occurrence_id("s", START), START, 0) == START
    assert other != delays[0]


def every_minute(jitter_seconds: float) -> Schedule:
    definition = ScheduleDefinition(
        Timing("UTC", interval=Every(1, Unit.MINUTE), start=START),
        Payload("GET", "https://example.com/"),
        jitter_seconds=jitter_seconds,
    )
    return make_schedule(definition, START, START)


def test_the_poller_sends_the_fire_time_under_the_nominal_id() -> None:
    schedule = every_minute(30)
    now = START - timedelta(seconds=1)
    plan = plan_dispatch(schedule, now, START + timedelta(minutes=4), 100, timedelta(seconds=5))
    nominal = [START + timedelta(minutes=n) for n in range(5)]
    assert [item.occurrence_id for item in plan.to_send] == [
        occurrence_id("s", moment) for moment in nominal
    ]
    offsets = [
        (item.scheduled_time - moment).total_seconds()
        for item, moment in zip(plan.to_send, nominal, strict=True)
    ]
    assert all(0 <= offset <= 30 for offset in offsets) and len(set(offsets)) > 1
    # The cursor moves on nominal time; a second plan (a re-send) gives the same times.
    assert plan.next_schedule_time == START + timedelta(minutes=5)
    assert (
        plan_dispatch(
            schedule, now, START + timedelta(minutes=4), 100, timedelta(seconds=5)
        ).to_send
        == plan.to_send
    )
    unjittered = plan_dispatch(
        every_minute(0), now, START + timedelta(minutes=4), 100, timedelta(seconds=5)
    )
    assert unjittered.to_send == [Occurrence("t", "s", 1, moment) for moment in nominal]


def test_missed_occurrences_keep_their_nominal_ids_and_the_cursor_nominal_time() -> None:
    schedule = every_minute(30)
    definition = schedule.live_definition
    fire_all = replace(
        definition, misfire=replace(definition.misfire, policy=MisfirePolicy.FIRE_ALL)
    )
    now = START + timedelta(minutes=10)
    plan = plan_dispatch(schedule.evolve(definition=fire_all), now, now, 3, timedelta(seconds=5))
    assert [item.occurrence_id for item in plan.to_send] == [
        occurrence_id("s", START + timedelta(minutes=n)) for n in range(3)
    ]
    assert plan.next_schedule_time == START + timedelta(minutes=3)
