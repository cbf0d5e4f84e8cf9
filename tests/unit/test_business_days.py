"""Business calendars against weeks computed by hand (issue 27 item 3): each notation with a
calendar, each shift, across the spring-forward weekend of 2026 in Berlin (and a Friday one in
Jerusalem) and across the year end 2026-12-24 .. 2027-01-04 with a holidays calendar.

The calendar of these weeks (every date by hand):

    2026-03  Fr 20 | Sa 21 Su 22 | Mo 23 ... Fr 27 | Sa 28 Su 29 (Berlin: 02:00 -> 03:00) | Mo 30
    2026-04  Th 2 | Fr 3 Good Friday (holiday) | Sa 4 Su 5 | Mo 6 Easter Monday (holiday) | Tu 7
    2026-12  We 23 | Th 24 (holiday) Fr 25 (holiday) | Sa 26 Su 27 | Mo 28 Tu 29 We 30
             | Th 31 (holiday)
    2027-01  Fr 1 (holiday) | Sa 2 Su 3 | Mo 4 | ... Th 7

Berlin is UTC+1 (CET) until 2026-03-29 02:00, then UTC+2 (CEST); UTC+1 again in December.
"""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta

import pytest

from shared.calendars import BusinessCalendar, CalendarRule
from shared.dispatch import plan_dispatch
from shared.errors import InvalidInput
from shared.model import Every, Payload, ScheduleDefinition, Timing, Unit
from shared.notations import build_recurrence, first_occurrence, schedule_recurrence
from shared.recurrence import TooMuchWork, cpu_budget
from shared.recurrence.business import Shift
from shared.timeutil import iso_z
from shared.validation import check_timing
from tests.support.factories import make_schedule
from tests.support.times import upcoming

BERLIN = "Europe/Berlin"
HOLIDAYS = frozenset(
    {
        date(2026, 4, 3),
        date(2026, 4, 6),
        date(2026, 12, 24),
        date(2026, 12, 25),
        date(2026, 12, 31),
        date(2027, 1, 1),
    }
)
SKIP, NEXT, PREVIOUS = Shift.SKIP, Shift.NEXT_BUSINESS_DAY, Shift.PREVIOUS_BUSINESS_DAY


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def times(timing: Timing, accepted: str, shift: Shift, count: int = 5) -> list[str]:
    calendar = BusinessCalendar(HOLIDAYS, shift)
    return [iso_z(moment) for moment in upcoming(timing, utc(accepted), count, calendar=calendar)]


# -- Saturdays 09:00 across the spring-forward weekend and Easter ----------------------------

SATURDAYS = Timing(BERLIN, cron="0 9 * * 6")


def test_saturdays_move_to_monday_keeping_0900_across_the_dst_change_and_easter() -> None:
    assert times(SATURDAYS, "2026-03-17T00:00:00Z", NEXT, 4) == [
        "2026-03-23T08:00:00.000Z",  # Sa 21 -> Mo 23 09:00 CET
        "2026-03-30T07:00:00.000Z",  # Sa 28 -> Mo 30 09:00 CEST, after the change
        "2026-04-07T07:00:00.000Z",  # Sa 4 -> Tu 7: Mo 6 is Easter Monday
        "2026-04-13T07:00:00.000Z",  # Sa 11 -> Mo 13
    ]


def test_saturdays_move_to_friday_keeping_0900_across_the_dst_change_and_easter() -> None:
    assert times(SATURDAYS, "2026-03-16T00:00:00Z", PREVIOUS, 4) == [
        "2026-03-20T08:00:00.000Z",  # Sa 21 -> Fr 20 09:00 CET
        "2026-03-27T08:00:00.000Z",  # Sa 28 -> Fr 27 09:00, still CET
        "2026-04-02T07:00:00.000Z",  # Sa 4 -> Th 2: Fr 3 is Good Friday
        "2026-04-10T07:00:00.000Z",  # Sa 11 -> Fr 10
    ]


def test_a_schedule_that_fires_only_on_days_off_and_skips_them_never_fires() -> None:
    assert times(SATURDAYS, "2026-03-16T00:00:00Z", SKIP) == []
    with pytest.raises(InvalidInput) as refused:
        check_timing(
            SATURDAYS,
            utc("2026-03-16T00:00:00Z"),
            timedelta(seconds=1),
            calendar=BusinessCalendar(HOLIDAYS, SKIP),
        )
    assert "calendar" in refused.value.fields


def test_weekdays_at_0900_across_easter_fire_once_a_business_day_whatever_the_shift() -> None:
    weekdays = Timing(BERLIN, cron="0 9 * * 1-5")
    expected = [
        "2026-03-30T07:00:00.000Z",  # Mo 30 (the weekend's own times are not weekdays)
        "2026-03-31T07:00:00.000Z",
        "2026-04-01T07:00:00.000Z",
        "2026-04-02T07:00:00.000Z",  # Th 2; Fr 3 Good Friday is off
        "2026-04-07T07:00:00.000Z",  # Tu 7; Mo 6 Easter Monday is off
    ]
    assert times(weekdays, "2026-03-28T00:00:00Z", SKIP) == expected
    # Good Friday moved to Tuesday 09:00 and Easter Monday too: Tuesday fires once.
    assert times(weekdays, "2026-03-28T00:00:00Z", NEXT) == expected
    # Moved back, Good Friday lands on Thursday 09:00, Easter Monday on Thursday too.
    assert times(weekdays, "2026-03-28T00:00:00Z", PREVIOUS) == expected


def test_every_day_at_0900_skips_the_weekend_and_the_holidays_of_the_year_end() -> None:
    daily = Timing(BERLIN, cron="0 9 * * *")
    assert times(daily, "2026-12-23T00:00:00Z", SKIP, 6) == [
        "2026-12-23T08:00:00.000Z",  # We 23
        "2026-12-28T08:00:00.000Z",  # Mo 28 (Th 24, Fr 25, Sa 26, Su 27 off)
        "2026-12-29T08:00:00.000Z",
        "2026-12-30T08:00:00.000Z",
        "2027-01-04T08:00:00.000Z",  # Mo 4 (Th 31, Fr 1, Sa 2, Su 3 off)
        "2027-01-05T08:00:00.000Z",
    ]


# -- The year end: Thursdays, the first of the month, a one-time, an interval, an RRULE ------


@pytest.mark.parametrize(
    ("shift", "expected"),
    [
        (SKIP, ["2027-01-07T08:00:00.000Z", "2027-01-14T08:00:00.000Z"]),
        (
            NEXT,
            [
                "2026-12-28T08:00:00.000Z",  # Th 24 -> Mo 28
                "2027-01-04T08:00:00.000Z",  # Th 31 -> Mo 4 (Fr 1 off, weekend)
                "2027-01-07T08:00:00.000Z",
                "2027-01-14T08:00:00.000Z",
            ],
        ),
        (
            PREVIOUS,
            [
                "2026-12-23T08:00:00.000Z",  # Th 24 -> We 23
                "2026-12-30T08:00:00.000Z",  # Th 31 -> We 30
                "2027-01-07T08:00:00.000Z",
                "2027-01-14T08:00:00.000Z",
            ],
        ),
    ],
)
def test_thursdays_at_0900_across_the_year_end(shift: Shift, expected: list[str]) -> None:
    thursdays = Timing(BERLIN, cron="0 9 * * 4")
    assert times(thursdays, "2026-12-22T00:00:00Z", shift, len(expected)) == expected


@pytest.mark.parametrize(
    "timing",
    [
        Timing(BERLIN, rrule="FREQ=WEEKLY;BYDAY=TH;BYHOUR=9;BYMINUTE=0;BYSECOND=0"),
        Timing(BERLIN, interval=Every(1, Unit.WEEK), start=datetime(2026, 12, 17, 9, 0)),
    ],
    ids=["rrule", "interval"],
)
def test_rrule_and_interval_thursdays_shift_as_cron_does(timing: Timing) -> None:
    assert times(timing, "2026-12-22T00:00:00Z", NEXT, 3) == [
        "2026-12-28T08:00:00.000Z",
        "2027-01-04T08:00:00.000Z",
        "2027-01-07T08:00:00.000Z",
    ]
    assert times(timing, "2026-12-22T00:00:00Z", PREVIOUS, 3) == [
        "2026-12-23T08:00:00.000Z",
        "2026-12-30T08:00:00.000Z",
        "2027-01-07T08:00:00.000Z",
    ]


def test_the_first_of_the_month_moves_off_new_year() -> None:
    monthly = Timing(BERLIN, cron="0 9 1 * *")
    assert times(monthly, "2026-12-02T00:00:00Z", NEXT, 2) == [
        "2027-01-04T08:00:00.000Z",  # Fr 1 -> Mo 4
        "2027-02-01T08:00:00.000Z",  # Mo 1 February
    ]
    assert times(monthly, "2026-12-02T00:00:00Z", PREVIOUS, 2) == [
        "2026-12-30T08:00:00.000Z",  # Fr 1 -> We 30 (Th 31 off)
        "2027-02-01T08:00:00.000Z",
    ]
    assert times(monthly, "2026-12-02T00:00:00Z", SKIP, 1) == ["2027-02-01T08:00:00.000Z"]


@pytest.mark.parametrize(
    ("shift", "expected"),
    [
        (NEXT, "2026-12-28T09:30:00.000Z"),  # Fr 25 10:30 -> Mo 28 10:30 CET
        (PREVIOUS, "2026-12-23T09:30:00.000Z"),  # -> We 23 10:30
        (SKIP, None),
    ],
)
def test_a_one_time_schedule_on_a_holiday(shift: Shift, expected: str | None) -> None:
    at = Timing(BERLIN, at=datetime(2026, 12, 25, 10, 30))
    calendar = BusinessCalendar(HOLIDAYS, shift)
    for accepted in ("2026-12-01T00:00:00Z", "2027-02-01T00:00:00Z"):  # before, and after it
        first = first_occurrence(at, utc(accepted), calendar=calendar)
        assert (None if first is None else iso_z(first)) == expected, accepted


def test_every_hour_exact_fires_on_business_days_only() -> None:
    hourly = Timing(BERLIN, cron="@every 1h")
    found = times(hourly, "2026-12-23T21:30:00Z", SKIP, 3)
    # An hour after it was accepted: We 23 23:30 CET; then Th 24 .. Su 27 are off: the next
    # hour on a business day is Mo 28 00:30 CET, then 01:30.
    assert found == [
        "2026-12-23T22:30:00.000Z",
        "2026-12-27T23:30:00.000Z",
        "2026-12-28T00:30:00.000Z",
    ]


# -- Moved onto a spring-forward gap: a Friday change (Jerusalem, 2026-03-27 02:00 -> 03:00) ---

JERUSALEM = "Asia/Jerusalem"


def test_moved_into_a_gap_the_notations_own_rule_reads_the_time() -> None:
    calendar = BusinessCalendar(frozenset(), PREVIOUS)
    accepted = utc("2026-03-25T00:00:00Z")
    # cron, fixed time: the skipped 02:30 fires right after the jump, 03:00 IDT; Saturday's
    # 02:30 moved to Friday is read the same way, so Friday fires once.
    cron = Timing(JERUSALEM, cron="30 2 * * 5,6")
    assert [iso_z(t) for t in upcoming(cron, accepted, 2, calendar=calendar)] == [
        "2026-03-27T00:00:00.000Z",
        "2026-04-02T23:30:00.000Z",  # Fr 3 April 02:30 IDT (UTC+3)
    ]
    # RRULE reads 02:30 with the offset before the gap (UTC+2): 00:30Z, i.e. 03:30 IDT.
    rrule = Timing(JERUSALEM, rrule="FREQ=WEEKLY;BYDAY=FR,SA;BYHOUR=2;BYMINUTE=30;BYSECOND=0")
    assert [iso_z(t) for t in upcoming(rrule, accepted, 2, calendar=calendar)] == [
        "2026-03-27T00:30:00.000Z",
        "2026-04-02T23:30:00.000Z",
    ]


@pytest.mark.parametrize("shift", list(Shift))
def test_a_calendar_of_every_day_costs_no_more_than_the_cpu_budget(shift: Shift) -> None:
    # Ten calendars of 1,000 dates each (the most a schedule may name): 27 years without a
    # business day, beyond the 9-year horizon of every search.
    first = date(2026, 1, 1).toordinal()
    every_day = frozenset(date.fromordinal(first + n) for n in range(10 * 1000))
    calendar = BusinessCalendar(every_day, shift)
    for timing in (Timing(BERLIN, cron="* * * * *"), Timing(BERLIN, cron="@every 1s")):
        recurrence = build_recurrence(timing, utc("2026-01-01T00:00:00Z"), calendar=calendar)
        spent = time.thread_time()
        try:
            with cpu_budget(0.5):
                assert recurrence.first_fire(utc("2026-01-01T00:00:00Z")) is None
        except TooMuchWork:
            pass
        assert time.thread_time() - spent < 1.0


def test_a_calendar_costs_a_fine_grained_schedule_a_few_steps_a_time() -> None:
    every_second = Timing(BERLIN, cron="@every 1s")
    calendar = BusinessCalendar(HOLIDAYS, NEXT)
    with cpu_budget(0.5):
        found = upcoming(every_second, utc("2026-12-23T22:59:58Z"), 4, calendar=calendar)
    # We 23 23:59:59 and then Th 24 .. Su 27 move to Mo 28, where they land on its own seconds.
    assert [iso_z(moment) for moment in found] == [
        "2026-12-23T22:59:59.000Z",
        "2026-12-27T23:00:00.000Z",
        "2026-12-27T23:00:01.000Z",
        "2026-12-27T23:00:02.000Z",
    ]


# -- The poller's plan: a calendar changed after the next time was computed -------------------


def test_the_poller_checks_the_stored_next_time_against_the_calendar_as_it_is_now() -> None:
    thursdays = Timing(BERLIN, cron="0 9 * * 4")
    rule = CalendarRule(("holidays",), NEXT)
    definition = ScheduleDefinition(
        thursdays, Payload("POST", "https://example.com/"), calendar=rule
    )
    accepted = utc("2026-12-01T00:00:00Z")
    # Stored before Christmas Eve was a holiday: Thursday 24, 09:00.
    stored = make_schedule(definition, accepted, utc("2026-12-24T08:00:00Z"))
    now = utc("2026-12-24T07:58:00Z")
    horizon = now + timedelta(minutes=5)
    plan = plan_dispatch(
        stored, now, horizon, 10, timedelta(minutes=1), calendar=BusinessCalendar(HOLIDAYS, NEXT)
    )
    # Nothing goes out on the holiday: the next time is Monday 28, 09:00, sent when due.
    assert plan.to_send == []
    assert plan.next_schedule_time == utc("2026-12-28T08:00:00Z")
    # Without the holiday (as when it was stored), Thursday's is sent.
    plan = plan_dispatch(
        stored, now, horizon, 10, timedelta(minutes=1), calendar=BusinessCalendar(frozenset(), NEXT)
    )
    assert [item.scheduled_time for item in plan.to_send] == [utc("2026-12-24T08:00:00Z")]


def test_a_stored_schedules_times_are_not_computed_without_the_calendars_it_names() -> None:
    rule = CalendarRule(("holidays",), NEXT)
    definition = ScheduleDefinition(
        Timing(BERLIN, cron="0 9 * * 4"), Payload("POST", "https://example.com/"), calendar=rule
    )
    stored = make_schedule(definition, utc("2026-12-01T00:00:00Z"), utc("2026-12-24T08:00:00Z"))
    with pytest.raises(ValueError, match="names calendars"):
        schedule_recurrence(stored, None)
    shifted = schedule_recurrence(stored, BusinessCalendar(HOLIDAYS, NEXT))
    assert shifted.first_at_or_after(utc("2026-12-24T00:00:00Z")) == utc("2026-12-28T08:00:00Z")
