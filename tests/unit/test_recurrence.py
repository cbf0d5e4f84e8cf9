"""The recurrence engine at the edges: DST, odd zones, month ends, and every schedule form.

Expected instants are written out in UTC, worked out by hand from the zone's rules:
- New York 2026 springs forward on 03-08 at 02:00 EST (07:00Z) and falls back on 11-01 at
  02:00 EDT (06:00Z);
- London 2026: 03-29 at 01:00 GMT, 10-25 at 02:00 BST (both 01:00Z);
- Lord Howe (+10:30 / +11:00, a 30-minute shift) 2026: back on 04-05 at 02:00 to 01:30,
  forward on 10-04 at 02:00 to 02:30;
- Chatham (+12:45 / +13:45) 2026: back on 04-05 at 03:45 to 02:45, forward on 09-27 at 02:45 to
  03:45;
- Kolkata: +05:30 all year.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from dateutil.rrule import rrulestr

from scheduler_service.requests.schedule import as_sent
from shared.describe import describe
from shared.errors import InvalidInput
from shared.model import Every, Timing, Unit
from shared.notations import build_recurrence, first_occurrence
from shared.notations.blueprint import NOTATION as BLUEPRINT
from shared.recurrence import cron_recurrence, parse_duration, parse_rrule
from shared.timeutil import UTC, iso_z, load_zone
from shared.validation import check_timing
from tests.support.times import previous, upcoming

NY = "America/New_York"


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def times(timing: Timing, accepted: str, count: int = 4) -> list[str]:
    return [iso_z(moment) for moment in upcoming(timing, utc(accepted), count)]


def wall(text: str) -> datetime:
    return datetime.fromisoformat(text)


# -- New York, 2026: spring forward and fall back -------------------------------------------


@pytest.mark.parametrize(
    "timing",
    [
        Timing(NY, rrule="FREQ=DAILY", start=wall("2026-03-07T02:30")),
        Timing(NY, rrule="FREQ=DAILY;BYHOUR=2;BYMINUTE=30;BYSECOND=0"),
        Timing(NY, interval=Every(1, Unit.DAY), start=wall("2026-03-07T02:30")),
    ],
    ids=["rrule-from-start", "rrule-byhour", "interval-days"],
)
def test_daily_0230_on_spring_forward_day_is_read_with_the_offset_before_the_gap(
    timing: Timing,
) -> None:
    # RFC 5545: 02:30 does not exist on 03-08; it is 02:30 EST = 07:30Z (03:30 EDT).
    assert times(timing, "2026-03-07T00:00:00Z") == [
        "2026-03-07T07:30:00.000Z",
        "2026-03-08T07:30:00.000Z",
        "2026-03-09T06:30:00.000Z",
        "2026-03-10T06:30:00.000Z",
    ]


def test_cron_0230_on_spring_forward_day_runs_once_right_after_the_jump() -> None:
    # Debian cron: a fixed-time job in the skipped hour runs at 03:00 EDT (07:00Z).
    assert times(Timing(NY, cron="30 2 * * *"), "2026-03-07T00:00:00Z") == [
        "2026-03-07T07:30:00.000Z",
        "2026-03-08T07:00:00.000Z",
        "2026-03-09T06:30:00.000Z",
        "2026-03-10T06:30:00.000Z",
    ]


@pytest.mark.parametrize(
    "timing",
    [
        Timing(NY, rrule="FREQ=DAILY;BYHOUR=1;BYMINUTE=30"),
        Timing(NY, interval=Every(1, Unit.DAY), start=wall("2026-10-31T01:30")),
        Timing(NY, cron="30 1 * * *"),
    ],
    ids=["rrule", "interval-days", "cron"],
)
def test_daily_0130_on_fall_back_day_fires_once_at_the_earlier_instant(timing: Timing) -> None:
    # 01:30 happens twice on 11-01: at 05:30Z (EDT) and 06:30Z (EST); only the first fires.
    assert times(timing, "2026-10-31T00:00:00Z") == [
        "2026-10-31T05:30:00.000Z",
        "2026-11-01T05:30:00.000Z",
        "2026-11-02T06:30:00.000Z",
        "2026-11-03T06:30:00.000Z",
    ]


@pytest.mark.parametrize(
    "timing",
    [
        Timing(NY, rrule="FREQ=DAILY;BYHOUR=2;BYMINUTE=30"),
        Timing(NY, cron="30 2 * * *"),
    ],
    ids=["rrule", "cron"],
)
def test_daily_0230_on_fall_back_day_is_not_doubled(timing: Timing) -> None:
    # 02:30 exists once on 11-01 (EST, 07:30Z): the repeated hour is 01:00-02:00.
    assert times(timing, "2026-10-31T00:00:00Z", 3) == [
        "2026-10-31T06:30:00.000Z",
        "2026-11-01T07:30:00.000Z",
        "2026-11-02T07:30:00.000Z",
    ]


def test_daily_0130_on_spring_forward_day_is_before_the_gap() -> None:
    timing = Timing(NY, rrule="FREQ=DAILY;BYHOUR=1;BYMINUTE=30")
    assert times(timing, "2026-03-07T00:00:00Z", 3) == [
        "2026-03-07T06:30:00.000Z",
        "2026-03-08T06:30:00.000Z",
        "2026-03-09T05:30:00.000Z",
    ]


def test_cron_every_30_minutes_follows_real_time_across_spring_forward() -> None:
    # 01:00 EST, 01:30 EST, then 03:00 EDT: the skipped hour has no slots, nothing doubles.
    assert times(Timing(NY, cron="*/30 * * * *"), "2026-03-08T05:45:00Z", 5) == [
        "2026-03-08T06:00:00.000Z",
        "2026-03-08T06:30:00.000Z",
        "2026-03-08T07:00:00.000Z",
        "2026-03-08T07:30:00.000Z",
        "2026-03-08T08:00:00.000Z",
    ]


def test_cron_every_30_minutes_follows_real_time_across_fall_back() -> None:
    # 01:00 and 01:30 EDT, then 01:00 and 01:30 EST again, then 02:00 EST: every 30 real minutes.
    assert times(Timing(NY, cron="*/30 * * * *"), "2026-11-01T04:45:00Z", 5) == [
        "2026-11-01T05:00:00.000Z",
        "2026-11-01T05:30:00.000Z",
        "2026-11-01T06:00:00.000Z",
        "2026-11-01T06:30:00.000Z",
        "2026-11-01T07:00:00.000Z",
    ]


@pytest.mark.parametrize(
    "timing",
    [
        Timing(NY, interval=Every(1, Unit.HOUR), start=wall("2026-11-01T00:00")),
        Timing(NY, cron="@every 1h", start=wall("2026-11-01T00:00")),
        Timing(NY, cron="0 * * * *"),
    ],
    ids=["interval-hours", "every", "cron-hourly"],
)
def test_hourly_across_fall_back_is_absolute_hours(timing: Timing) -> None:
    # 00:00 EDT, 01:00 EDT, 01:00 EST, 02:00 EST: no hour doubled, none missing.
    assert times(timing, "2026-11-01T04:00:00Z") == [
        "2026-11-01T04:00:00.000Z",
        "2026-11-01T05:00:00.000Z",
        "2026-11-01T06:00:00.000Z",
        "2026-11-01T07:00:00.000Z",
    ]


def test_hourly_interval_across_spring_forward_is_absolute_hours() -> None:
    timing = Timing(NY, interval=Every(1, Unit.HOUR), start=wall("2026-03-08T00:00"))
    # 00:00 EST, 01:00 EST, 03:00 EDT, 04:00 EDT: one real hour apart each.
    assert times(timing, "2026-03-08T05:00:00Z") == [
        "2026-03-08T05:00:00.000Z",
        "2026-03-08T06:00:00.000Z",
        "2026-03-08T07:00:00.000Z",
        "2026-03-08T08:00:00.000Z",
    ]


def test_hourly_rrule_counts_wall_hours_and_fires_a_repeated_hour_once() -> None:
    # RRULE is wall time: 01:00 happens twice but fires once (EDT); 02:00 EST follows.
    timing = Timing(NY, rrule="FREQ=HOURLY", start=wall("2026-11-01T00:00"))
    assert times(timing, "2026-11-01T04:00:00Z") == [
        "2026-11-01T04:00:00.000Z",
        "2026-11-01T05:00:00.000Z",
        "2026-11-01T07:00:00.000Z",
        "2026-11-01T08:00:00.000Z",
    ]


def test_hourly_rrule_on_spring_forward_fires_the_skipped_hour_once() -> None:
    # 02:00 does not exist: read as 02:00 EST = 07:00Z, the same instant as 03:00 EDT.
    timing = Timing(NY, rrule="FREQ=HOURLY", start=wall("2026-03-08T00:00"))
    assert times(timing, "2026-03-08T05:00:00Z") == [
        "2026-03-08T05:00:00.000Z",
        "2026-03-08T06:00:00.000Z",
        "2026-03-08T07:00:00.000Z",
        "2026-03-08T08:00:00.000Z",
    ]


# -- Other zones ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timing", "accepted", "expected"),
    [
        pytest.param(
            Timing("Europe/London", rrule="FREQ=DAILY;BYHOUR=1;BYMINUTE=30"),
            "2026-03-28T00:00:00Z",
            # 01:30 on 03-29 is in the gap: read as GMT (01:30Z = 02:30 BST).
            ["2026-03-28T01:30:00.000Z", "2026-03-29T01:30:00.000Z", "2026-03-30T00:30:00.000Z"],
            id="london-spring-rrule",
        ),
        pytest.param(
            Timing("Europe/London", cron="30 1 * * *"),
            "2026-03-28T00:00:00Z",
            # Cron runs it right after the jump: 02:00 BST = 01:00Z.
            ["2026-03-28T01:30:00.000Z", "2026-03-29T01:00:00.000Z", "2026-03-30T00:30:00.000Z"],
            id="london-spring-cron",
        ),
        pytest.param(
            Timing("Europe/London", rrule="FREQ=DAILY;BYHOUR=1;BYMINUTE=30"),
            "2026-10-24T00:00:00Z",
            # 01:30 on 10-25 happens twice: BST (00:30Z) fires, GMT (01:30Z) does not.
            ["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
            id="london-fall-rrule",
        ),
        pytest.param(
            Timing("Europe/London", cron="30 1 * * *"),
            "2026-10-24T00:00:00Z",
            ["2026-10-24T00:30:00.000Z", "2026-10-25T00:30:00.000Z", "2026-10-26T01:30:00.000Z"],
            id="london-fall-cron",
        ),
        pytest.param(
            Timing("Australia/Lord_Howe", rrule="FREQ=DAILY;BYHOUR=2;BYMINUTE=15"),
            "2026-10-02T00:00:00Z",
            # 02:15 on 10-04 is in the 30-minute gap: read at +10:30 = 15:45Z on 10-03.
            ["2026-10-02T15:45:00.000Z", "2026-10-03T15:45:00.000Z", "2026-10-04T15:15:00.000Z"],
            id="lord-howe-spring-rrule",
        ),
        pytest.param(
            Timing("Australia/Lord_Howe", cron="15 2 * * *"),
            "2026-10-02T00:00:00Z",
            # Cron: right after the jump, 02:30 at +11:00 = 15:30Z on 10-03.
            ["2026-10-02T15:45:00.000Z", "2026-10-03T15:30:00.000Z", "2026-10-04T15:15:00.000Z"],
            id="lord-howe-spring-cron",
        ),
        pytest.param(
            Timing("Australia/Lord_Howe", rrule="FREQ=DAILY;BYHOUR=1;BYMINUTE=45"),
            "2026-04-03T00:00:00Z",
            # 01:45 on 04-05 happens at +11:00 (14:45Z) and at +10:30 (15:15Z): the first fires.
            ["2026-04-03T14:45:00.000Z", "2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z"],
            id="lord-howe-fall-rrule",
        ),
        pytest.param(
            Timing("Australia/Lord_Howe", cron="45 1 * * *"),
            "2026-04-03T00:00:00Z",
            ["2026-04-03T14:45:00.000Z", "2026-04-04T14:45:00.000Z", "2026-04-05T15:15:00.000Z"],
            id="lord-howe-fall-cron",
        ),
        pytest.param(
            Timing("Pacific/Chatham", interval=Every(1, Unit.DAY), start=wall("2026-09-26T03:00")),
            "2026-09-25T00:00:00Z",
            # 03:00 on 09-27 is in the gap: read at +12:45 = 14:15Z on 09-26 (04:00 CHADT).
            ["2026-09-25T14:15:00.000Z", "2026-09-26T14:15:00.000Z", "2026-09-27T13:15:00.000Z"],
            id="chatham-spring-interval",
        ),
        pytest.param(
            Timing("Pacific/Chatham", cron="0 3 * * *"),
            "2026-09-25T00:00:00Z",
            # Cron: right after the jump, 03:45 CHADT = 14:00Z on 09-26.
            ["2026-09-25T14:15:00.000Z", "2026-09-26T14:00:00.000Z", "2026-09-27T13:15:00.000Z"],
            id="chatham-spring-cron",
        ),
        pytest.param(
            Timing("Pacific/Chatham", rrule="FREQ=DAILY;BYHOUR=3;BYMINUTE=0"),
            "2026-04-03T00:00:00Z",
            # 03:00 on 04-05 happens at +13:45 (13:15Z) and +12:45 (14:15Z): the first fires.
            ["2026-04-03T13:15:00.000Z", "2026-04-04T13:15:00.000Z", "2026-04-05T14:15:00.000Z"],
            id="chatham-fall-rrule",
        ),
        pytest.param(
            Timing("America/Havana", cron="*/30 0 * * *"),
            "2026-03-07T00:00:00Z",
            # Havana springs forward at midnight on 03-08: that day has no 00:xx at all, and a
            # wildcard-minute line follows real time, so it skips the day.
            [
                "2026-03-07T05:00:00.000Z",
                "2026-03-07T05:30:00.000Z",
                "2026-03-09T04:00:00.000Z",
            ],
            id="havana-midnight-gap-wildcard-cron",
        ),
        pytest.param(
            Timing("America/Havana", cron="30 0 * * *"),
            "2026-03-07T00:00:00Z",
            # A fixed-time line runs right after the jump: 01:00 CDT = 05:00Z.
            ["2026-03-07T05:30:00.000Z", "2026-03-08T05:00:00.000Z", "2026-03-09T04:30:00.000Z"],
            id="havana-midnight-gap-fixed-cron",
        ),
        pytest.param(
            Timing("America/Havana", rrule="FREQ=DAILY;BYHOUR=0;BYMINUTE=30"),
            "2026-03-07T00:00:00Z",
            # RFC 5545: 00:30 is read with the offset before the gap (-05:00) = 05:30Z.
            ["2026-03-07T05:30:00.000Z", "2026-03-08T05:30:00.000Z", "2026-03-09T04:30:00.000Z"],
            id="havana-midnight-gap-rrule",
        ),
        pytest.param(
            Timing("Asia/Kolkata", cron="0 9 * * MON-FRI"),
            "2026-03-06T00:00:00Z",
            # No DST: 09:00 IST is 03:30Z; Friday 03-06, then Monday and Tuesday.
            ["2026-03-06T03:30:00.000Z", "2026-03-09T03:30:00.000Z", "2026-03-10T03:30:00.000Z"],
            id="kolkata-weekdays",
        ),
        pytest.param(
            Timing("Asia/Calcutta", rrule="FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0"),
            "2026-03-06T00:00:00Z",
            # The link name works like Asia/Kolkata.
            ["2026-03-09T03:30:00.000Z", "2026-03-11T03:30:00.000Z", "2026-03-16T03:30:00.000Z"],
            id="calcutta-link",
        ),
    ],
)
def test_edges_in_other_zones(timing: Timing, accepted: str, expected: list[str]) -> None:
    assert times(timing, accepted, 3) == expected


# -- Month ends and leap years --------------------------------------------------------------


def test_monthly_interval_from_jan_31_clamps_to_month_end_across_a_leap_year() -> None:
    timing = Timing(NY, interval=Every(1, Unit.MONTH), start=wall("2028-01-31T09:00"))
    # Counted from the anchor (no drift): Feb 29 (leap), then back to the 31st; DST on 03-12.
    assert times(timing, "2028-01-01T00:00:00Z", 5) == [
        "2028-01-31T14:00:00.000Z",
        "2028-02-29T14:00:00.000Z",
        "2028-03-31T13:00:00.000Z",
        "2028-04-30T13:00:00.000Z",
        "2028-05-31T13:00:00.000Z",
    ]


def test_monthly_interval_from_jan_31_in_a_common_year_gives_feb_28() -> None:
    timing = Timing("UTC", interval=Every(1, Unit.MONTH), start=wall("2027-01-31T09:00"))
    assert times(timing, "2027-01-01T00:00:00Z", 3) == [
        "2027-01-31T09:00:00.000Z",
        "2027-02-28T09:00:00.000Z",
        "2027-03-31T09:00:00.000Z",
    ]


def test_yearly_interval_from_feb_29_clamps_to_feb_28() -> None:
    timing = Timing("UTC", interval=Every(1, Unit.YEAR), start=wall("2028-02-29T12:00"))
    assert times(timing, "2028-01-01T00:00:00Z", 3) == [
        "2028-02-29T12:00:00.000Z",
        "2029-02-28T12:00:00.000Z",
        "2030-02-28T12:00:00.000Z",
    ]


def test_rrule_monthly_from_the_31st_skips_short_months_as_rfc_5545_says() -> None:
    # RFC 5545 drops dates that do not exist; BYMONTHDAY=-1 asks for the month's last day.
    timing = Timing("UTC", rrule="FREQ=MONTHLY", start=wall("2028-01-31T09:00"))
    assert times(timing, "2028-01-01T00:00:00Z", 3) == [
        "2028-01-31T09:00:00.000Z",
        "2028-03-31T09:00:00.000Z",
        "2028-05-31T09:00:00.000Z",
    ]
    last_day = Timing("UTC", rrule="FREQ=MONTHLY;BYMONTHDAY=-1", start=wall("2028-01-31T09:00"))
    assert times(last_day, "2028-01-01T00:00:00Z", 3) == [
        "2028-01-31T09:00:00.000Z",
        "2028-02-29T09:00:00.000Z",
        "2028-03-31T09:00:00.000Z",
    ]


# -- Occurrence n+1 comes from occurrence n's scheduled time ---------------------------------


@pytest.mark.parametrize(
    "timing",
    [
        Timing(NY, interval=Every(90, Unit.MINUTE), start=wall("2026-11-01T00:00")),
        Timing(NY, interval=Every(1, Unit.DAY), start=wall("2026-11-01T01:30")),
        Timing(NY, cron="*/20 1-3 * * *"),
        Timing(NY, rrule="FREQ=HOURLY;INTERVAL=2", start=wall("2026-11-01T00:00")),
    ],
    ids=["interval-minutes", "interval-days", "cron", "rrule"],
)
def test_the_next_time_does_not_depend_on_when_the_last_one_ran(timing: Timing) -> None:
    recurrence = build_recurrence(timing, utc("2026-11-01T00:00:00Z"))
    first = recurrence.first_at_or_after(utc("2026-11-01T00:00:00Z"))
    assert first is not None
    second = recurrence.next_after(first)
    assert second is not None
    # However late occurrence 1 ran, occurrence 2 stays where it was: no drift.
    for late in (timedelta(milliseconds=1), timedelta(seconds=59), (second - first) / 2):
        assert recurrence.next_after(first + late) == second


# -- RRULE: COUNT, UNTIL, EXDATE, RDATE, DTSTART ---------------------------------------------


def test_rrule_count_counts_from_a_start_in_the_past() -> None:
    # COUNT=5 from 03-02 09:00: 03-02…03-06. Accepted on 03-05, only 03-05 and 03-06 remain.
    timing = Timing(NY, rrule="FREQ=DAILY;COUNT=5", start=wall("2026-03-02T09:00"))
    assert times(timing, "2026-03-05T12:00:00Z", 5) == [
        "2026-03-05T14:00:00.000Z",
        "2026-03-06T14:00:00.000Z",
    ]


def test_rrule_whose_count_ran_out_before_acceptance_is_refused() -> None:
    timing = Timing(NY, rrule="FREQ=DAILY;COUNT=3", start=wall("2026-03-01T09:00"))
    with pytest.raises(InvalidInput) as raised:
        check_timing(timing, utc("2026-03-10T00:00:00Z"), timedelta(seconds=1))
    assert "in the past" in raised.value.fields["schedule.rrule"][0]


@pytest.mark.parametrize(
    ("rule", "expected_last"),
    [
        # UNTIL in UTC (what RFC 5545 asks for with a zoned DTSTART) is an instant: 14:00Z.
        ("FREQ=DAILY;UNTIL=20260305T140000Z", "2026-03-05T14:00:00.000Z"),
        # UNTIL without Z is local wall time in the schedule's zone.
        ("FREQ=DAILY;UNTIL=20260305T090000", "2026-03-05T14:00:00.000Z"),
        # UNTIL as a date is the whole local day.
        ("FREQ=DAILY;UNTIL=20260305", "2026-03-05T14:00:00.000Z"),
        # One millisecond too early excludes 03-05.
        ("FREQ=DAILY;UNTIL=20260305T135959Z", "2026-03-04T14:00:00.000Z"),
    ],
)
def test_rrule_until_is_inclusive_in_every_notation(rule: str, expected_last: str) -> None:
    timing = Timing(NY, rrule=rule, start=wall("2026-03-02T09:00"))
    assert times(timing, "2026-03-01T00:00:00Z", 10)[-1] == expected_last


def test_rrule_exdate_and_rdate_in_local_utc_and_tzid_notations() -> None:
    text = "\n".join(
        [
            "RRULE:FREQ=DAILY;COUNT=6",
            "EXDATE:20260303T090000",  # local wall time
            "EXDATE:20260304T140000Z",  # the same as 09:00 EST
            "EXDATE;TZID=Europe/Paris:20260305T150000",  # 15:00 in Paris = 09:00 in New York
            "RDATE:20260303T120000",
            "RDATE;TZID=Asia/Kolkata:20260310T093000",  # 04:00Z
        ]
    )
    timing = Timing(NY, rrule=text, start=wall("2026-03-02T09:00"))
    assert times(timing, "2026-03-01T00:00:00Z", 10) == [
        "2026-03-02T14:00:00.000Z",
        "2026-03-03T17:00:00.000Z",
        "2026-03-06T14:00:00.000Z",
        "2026-03-07T14:00:00.000Z",
        "2026-03-10T04:00:00.000Z",
    ]


def test_rrule_exdate_as_a_date_excludes_that_whole_local_day() -> None:
    text = "RRULE:FREQ=HOURLY;BYHOUR=9,17\nEXDATE;VALUE=DATE:20261225"
    timing = Timing("Europe/Berlin", rrule=text, start=wall("2026-12-24T00:00"))
    assert times(timing, "2026-12-24T00:00:00Z", 4) == [
        "2026-12-24T08:00:00.000Z",
        "2026-12-24T16:00:00.000Z",
        "2026-12-26T08:00:00.000Z",
        "2026-12-26T16:00:00.000Z",
    ]


def test_rrule_without_start_counts_from_midnight_of_the_day_it_is_accepted() -> None:
    # DTSTART is 00:00 local on the day of acceptance: FREQ=HOURLY is on the hour.
    timing = Timing("Asia/Tokyo", rrule="FREQ=HOURLY;INTERVAL=3")
    assert times(timing, "2026-06-01T04:10:00Z", 3) == [
        # 13:10 JST: the next 3-hourly slot from 00:00 JST is 15:00 JST = 06:00Z.
        "2026-06-01T06:00:00.000Z",
        "2026-06-01T09:00:00.000Z",
        "2026-06-01T12:00:00.000Z",
    ]


def test_rrule_with_a_start_years_ago_is_exact_across_a_gap() -> None:
    # 7-minute wall-time steps from 2016-01-01 00:00 reach 01:56, 02:03, 02:10 … on 2026-03-08.
    # 02:03 and 02:10 do not exist and are read as EST (07:03Z, 07:10Z) — RFC 5545 — so they
    # interleave with 03:06 EDT (07:06Z), the rule's first real wall time after the jump.
    timing = Timing(NY, rrule="FREQ=MINUTELY;INTERVAL=7", start=wall("2016-01-01T00:00"))
    assert times(timing, "2026-03-08T06:57:00Z", 4) == [
        "2026-03-08T07:03:00.000Z",
        "2026-03-08T07:06:00.000Z",
        "2026-03-08T07:10:00.000Z",
        "2026-03-08T07:13:00.000Z",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DTSTART:20260101T090000,20260102T090000\nRRULE:FREQ=DAILY", "one date-time"),
        ("DTSTART:2026\nRRULE:FREQ=DAILY", "DTSTART"),
        ("RRULE:FREQ=DAILY\nEXRULE;X=1:FREQ=WEEKLY", "no parameters"),
        ("FREQ=YEARLY;BYEASTER=400", "BYEASTER"),
        ("FREQ=DAILY;COUNT=3;UNTIL=20261231T000000Z", "COUNT and UNTIL"),
        ("FREQ=SOMETIMES", "FREQ"),
        ("BYHOUR=9", "FREQ"),
        ("FREQ=DAILY;INTERVAL=0", "INTERVAL"),
        ("FREQ=DAILY;BYMONTH=13", "BYMONTH"),
        ("FREQ=DAILY;BYMONTHDAY=32", "BYMONTHDAY"),
        ("FREQ=DAILY;BYHOUR=24", "hour"),
        ("FREQ=WEEKLY;BYDAY=-1FR", "MONTHLY or YEARLY"),
        ("FREQ=MONTHLY;BYDAY=6MO", "no such weekday"),
        ("FREQ=DAILY;BYFORTNIGHT=1", "unknown rule part"),
        ("FREQ=DAILY;UNTIL=2026-12-31", "UNTIL"),
        ("RRULE:FREQ=DAILY\nRDATE;VALUE=DATE:20261225", "RDATE needs date-times"),
        ("RRULE:FREQ=DAILY\nEXDATE:20260230T090000", "not a real date"),
        ("RRULE:FREQ=DAILY\nEXDATE;TZID=Mars/Olympus:20260101T090000", "unknown time zone"),
        ("BEGIN:VEVENT", "unexpected line"),
    ],
)
def test_rrule_text_that_is_refused_says_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rrule(text, load_zone(NY))


def test_rrule_text_may_be_lower_case_and_prefixed() -> None:
    assert parse_rrule("rrule:freq=weekly;byday=mo,fr", load_zone("UTC")).rules[0].freq == "WEEKLY"


# -- Cron: names, L, #, macros, @every, @at ---------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("0 9 * JAN,JUL MON-FRI", ["2027-01-01T09:00:00.000Z", "2027-01-04T09:00:00.000Z"]),
        ("0 0 L * *", ["2026-11-30T00:00:00.000Z", "2026-12-31T00:00:00.000Z"]),
        ("0 0 LW * *", ["2026-11-30T00:00:00.000Z", "2026-12-31T00:00:00.000Z"]),
        ("0 17 * * 5L", ["2026-11-27T17:00:00.000Z", "2026-12-25T17:00:00.000Z"]),
        ("0 9 * * MON#1", ["2026-12-07T09:00:00.000Z", "2027-01-04T09:00:00.000Z"]),
        ("0 9 * * 1#1", ["2026-12-07T09:00:00.000Z", "2027-01-04T09:00:00.000Z"]),
        ("@hourly", ["2026-11-22T12:00:00.000Z", "2026-11-22T13:00:00.000Z"]),
        ("@daily", ["2026-11-23T00:00:00.000Z", "2026-11-24T00:00:00.000Z"]),
        ("@weekly", ["2026-11-29T00:00:00.000Z", "2026-12-06T00:00:00.000Z"]),
        ("@monthly", ["2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"]),
        ("@yearly", ["2027-01-01T00:00:00.000Z", "2028-01-01T00:00:00.000Z"]),
        ("@every 90m", ["2026-11-22T13:30:00.000Z", "2026-11-22T15:00:00.000Z"]),
        ("@at 1795000000", ["2026-11-18T11:06:40.000Z"]),
        ("@at 1800000000", ["2027-01-15T08:00:00.000Z"]),
    ],
)
def test_cron_notations(line: str, expected: list[str]) -> None:
    # Accepted Sunday 2026-11-22 12:00Z: "at or after", so @hourly fires at 12:00 itself.
    # A past @at still fires once, right away.
    assert times(Timing("UTC", cron=line), "2026-11-22T12:00:00Z", 2) == expected


def test_cron_every_with_a_start_fires_at_the_start_then_each_duration() -> None:
    timing = Timing("UTC", cron="@every 1h30m", start=wall("2026-11-22T12:10"))
    assert times(timing, "2026-11-22T12:00:00Z", 3) == [
        "2026-11-22T12:10:00.000Z",
        "2026-11-22T13:40:00.000Z",
        "2026-11-22T15:10:00.000Z",
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 0 9 * * * * *", "seven"),
        ("0 0 9 ? * 2", "names"),
        ("0 9 * *", "five fields"),
        ("61 * * * *", "malformed"),
        ("0 25 * * *", "malformed"),
        ("0 0 30 2 *", "never fires"),
        ("0 0 31 4,6 *", "never fires"),
        ("0 9 * * MON#6", "malformed"),
        ("0 0 L-31 * *", "malformed"),
        ("0 0 12 ? * L", "malformed"),
        ("0 0 0 1 1 ? H", "year"),
        ("@reboot", "unknown macro"),
        ("@every 0s", "positive"),
        ("@every soon", "not a duration"),
        ("@at yesterday", "Unix time"),
        ("@at 999999999999999", "9999"),
    ],
)
def test_cron_lines_that_are_refused_say_why(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cron_recurrence(line, load_zone("UTC"), utc("2026-11-22T12:00:00Z"))


def test_parse_duration() -> None:
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("2d 12h") == timedelta(hours=60)
    assert parse_duration("500ms") == timedelta(milliseconds=500)


# -- One time, bounds, max_occurrences -------------------------------------------------------


def test_at_is_local_without_an_offset_and_an_instant_with_one() -> None:
    local = Timing("Asia/Kolkata", at=wall("2027-06-01T09:00"))
    instant = Timing("Asia/Kolkata", at=utc("2027-06-01T09:00:00+02:00"))
    assert times(local, "2027-01-01T00:00:00Z") == ["2027-06-01T03:30:00.000Z"]
    assert times(instant, "2027-01-01T00:00:00Z") == ["2027-06-01T07:00:00.000Z"]


def test_start_and_end_may_be_local_or_instants() -> None:
    timing = Timing(
        "Europe/Paris",
        interval=Every(1, Unit.DAY),
        start=wall("2027-06-01T09:00"),
        end=utc("2027-06-03T07:00:00Z"),  # exactly the third occurrence: inclusive
    )
    assert times(timing, "2027-01-01T00:00:00Z", 5) == [
        "2027-06-01T07:00:00.000Z",
        "2027-06-02T07:00:00.000Z",
        "2027-06-03T07:00:00.000Z",
    ]


def test_max_occurrences_counts_from_acceptance() -> None:
    # Seed 001's "repeating" task: 3 times, every 24 hours, from acceptance.
    timing = Timing("UTC", interval=Every(24, Unit.HOUR), max_occurrences=3)
    assert times(timing, "2026-11-22T12:00:00Z", 10) == [
        "2026-11-23T12:00:00.000Z",
        "2026-11-24T12:00:00.000Z",
        "2026-11-25T12:00:00.000Z",
    ]


def test_interval_without_start_fires_first_one_interval_after_acceptance() -> None:
    days = Timing(NY, interval=Every(1, Unit.DAY))
    assert times(days, "2026-03-07T15:20:00.250Z", 2) == [
        "2026-03-08T14:20:00.250Z",  # 10:20:00.250 EST, then the same wall time in EDT
        "2026-03-09T14:20:00.250Z",
    ]


def test_an_ambiguous_start_is_the_earlier_instant() -> None:
    timing = Timing(NY, interval=Every(30, Unit.MINUTE), start=wall("2026-11-01T01:30"))
    first = first_occurrence(timing, utc("2026-11-01T00:00:00Z"))
    assert first is not None and iso_z(first) == "2026-11-01T05:30:00.000Z"


def test_a_one_time_schedule_outside_its_bounds_never_fires() -> None:
    before_start = Timing("UTC", at=wall("2027-01-01T00:00"), start=wall("2027-02-01T00:00"))
    assert first_occurrence(before_start, utc("2026-01-01T00:00:00Z")) is None


# -- Validation: what users get wrong ---------------------------------------------------------

NOW = utc("2026-11-22T12:00:00Z")


@pytest.mark.parametrize(
    ("timing", "field", "message"),
    [
        (Timing("Mars/Olympus", cron="0 9 * * *"), "schedule.timezone", "unknown time zone"),
        (Timing("UTC", cron="0 0 30 2 *"), "schedule.cron", "never fires"),
        (Timing("UTC", cron="0 0 0 9 * * * *"), "schedule.cron", "five fields"),
        (
            Timing("UTC", rrule="FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"),
            "schedule.rrule",
            "never fires",
        ),
        (
            Timing("UTC", rrule="RRULE:FREQ=DAILY\nEXDATE;VALUE=DATE:20261123"),
            None,
            None,
        ),
        (
            Timing("UTC", rrule="FREQ=DAILY;UNTIL=20250101", start=wall("2024-12-30T09:00")),
            "schedule.rrule",
            "in the past",
        ),
        (Timing("UTC", rrule="FREQ=DAILY;UNTIL=20250101"), "schedule.rrule", "never fires"),
        (
            Timing("UTC", cron="0 9 * * *", start=wall("2027-01-02"), end=wall("2027-01-01")),
            "schedule.end",
            "before start",
        ),
        (Timing("UTC", cron="0 9 * * *", end=wall("2026-01-01")), "schedule.end", "passed"),
        (
            Timing("UTC", at=wall("2027-01-01T00:00"), end=wall("2026-12-01T00:00")),
            "schedule.end",
            "before the one time",
        ),
        (Timing("UTC", cron="@every 100ms"), "schedule.cron", "minimum interval"),
        (Timing("UTC", rrule="FREQ=SECONDLY;BYSECOND=0,1,2"), None, None),
        (Timing("UTC", rrule="FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0,0"), None, None),
    ],
)
def test_check_timing_names_the_field(
    timing: Timing, field: str | None, message: str | None
) -> None:
    if field is None:
        check_timing(timing, NOW, timedelta(seconds=1))
        return
    with pytest.raises(InvalidInput) as raised:
        check_timing(timing, NOW, timedelta(seconds=1))
    assert field in raised.value.fields, raised.value.fields
    assert message is not None and message in raised.value.fields[field][0]


def test_the_minimum_interval_is_configurable() -> None:
    every_minute = Timing("UTC", cron="* * * * *")
    check_timing(every_minute, NOW, timedelta(minutes=1))
    with pytest.raises(InvalidInput) as raised:
        check_timing(every_minute, NOW, timedelta(minutes=5))
    assert "schedule.cron" in raised.value.fields


def test_seed_names_are_used_in_errors() -> None:
    """The domain names a field canonically; the API names it as the seed form does."""
    timing = Timing("UTC", interval=Every(1, Unit.SECOND), end=wall("2020-01-01"))
    with pytest.raises(InvalidInput) as raised, as_sent(BLUEPRINT.names):
        check_timing(timing, NOW, timedelta(seconds=1))
    assert "schedule.end_date" in raised.value.fields


def test_a_rule_that_never_fires_is_refused_quickly() -> None:
    # This thread's CPU time, not the wall clock: on a loaded two-core machine the four checks
    # (under a second of CPU) took 14 s of wall time.
    started = time.thread_time()
    for rule in (
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        "FREQ=DAILY;BYMONTH=4;BYMONTHDAY=31",
        "FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=31",
        "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6",
    ):
        with pytest.raises(InvalidInput):
            check_timing(Timing("UTC", rrule=rule), NOW, timedelta(seconds=1))
    # Bounded search (SEARCH_HORIZON, a 400-year calendar cycle at worst), never an endless loop.
    assert time.thread_time() - started < 10


def test_a_no_end_sentinel_west_of_utc_is_clamped_not_an_error() -> None:
    timing = Timing(NY, cron="0 9 * * *", end=wall("9999-12-31T23:59:59"))
    check_timing(timing, NOW, timedelta(seconds=1))
    assert times(timing, "2026-11-22T12:00:00Z", 1) == ["2026-11-22T14:00:00.000Z"]


# -- Descriptions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (
            Timing("Asia/Kolkata", cron="0 9 * * MON-FRI"),
            "At 09:00 on Monday through Friday, Asia/Kolkata",
        ),
        (Timing("UTC", cron="@hourly"), "At the start of every hour, UTC"),
        (Timing("UTC", cron="0 17 * * 5L"), "At 17:00 on the last Friday of the month, UTC"),
        (Timing("UTC", cron="@every 1h30m"), "Every 1 hour 30 minutes (elapsed time), UTC"),
        (Timing("UTC", cron="@at 1800000000"), "Once, at 2027-01-15T08:00:00.000Z, UTC"),
        (
            Timing(NY, at=utc("2026-12-01T14:00:00Z")),
            "Once, at 2026-12-01 09:00, America/New_York",
        ),
        (
            Timing("UTC", interval=Every(3, Unit.HOUR), max_occurrences=5),
            "Every 3 hours (elapsed time), the first one interval after the schedule is "
            "accepted, UTC, at most 5 times",
        ),
        (
            Timing("Europe/Paris", interval=Every(1, Unit.MONTH), start=wall("2028-01-31T08:00")),
            "Every month at 08:00, from 2028-01-31 08:00, Europe/Paris",
        ),
        (
            Timing("Europe/Paris", rrule="FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0"),
            "Every week on Monday and Wednesday at 09:00, Europe/Paris",
        ),
        (
            Timing("Europe/Paris", rrule="FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=17;COUNT=10"),
            "Every month on the last Friday at 17:00, 10 times in all, Europe/Paris",
        ),
        (
            Timing("UTC", rrule="FREQ=MONTHLY", start=wall("2026-01-31T08:00")),
            "Every month on day 31 at 08:00, UTC, from 2026-01-31 08:00",
        ),
        (
            Timing("UTC", rrule="FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=-1;UNTIL=20301231"),
            "Every year in February on the last day of the month at 00:00, "
            "until 2030-12-31 23:59:59, UTC",
        ),
        (
            Timing("UTC", rrule="RRULE:FREQ=DAILY;BYHOUR=9\nEXDATE;VALUE=DATE:20261225"),
            "Every day at 09:00, except 1 excluded date, UTC",
        ),
    ],
)
def test_descriptions_in_plain_english(timing: Timing, expected: str) -> None:
    assert describe(timing) == expected


# -- COUNT from a far-past start: whole cycles skipped, the same times as walking -------------


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=HOURLY;INTERVAL=5;BYHOUR=1,2,13;COUNT=4000",
        "FREQ=DAILY;INTERVAL=3;BYDAY=MO,FR;COUNT=500",
        "FREQ=MINUTELY;INTERVAL=7;BYDAY=TU;BYHOUR=9;COUNT=20000",
        "FREQ=WEEKLY;BYDAY=MO,TH;BYSETPOS=-1;COUNT=400",
        "FREQ=HOURLY;INTERVAL=11;COUNT=2600",
    ],
)
def test_count_rules_from_a_far_past_start_match_a_full_walk(rule: str) -> None:
    start = wall("2023-02-03T04:05:06")
    accepted = utc("2026-03-06T12:00:00Z")
    walked = [
        moment.replace(tzinfo=UTC)
        for moment in rrulestr(rule, dtstart=start)
        if moment.replace(tzinfo=UTC) >= accepted
    ][:5]
    assert walked, "the rule must still fire after acceptance"
    assert upcoming(Timing("UTC", rrule=rule, start=start), accepted, 5) == walked


# -- RRULE sets: EXRULE, BYEASTER, parts with their own DTSTART; far but real rules -----------

NOW_2026 = "2026-03-06T12:00:00Z"


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        pytest.param(
            Timing(
                "UTC",
                rrule="RRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0\n"
                "EXRULE:FREQ=WEEKLY;BYDAY=SA,SU;BYHOUR=9;BYMINUTE=0",
            ),
            ["2026-03-09T09:00:00.000Z", "2026-03-10T09:00:00.000Z", "2026-03-11T09:00:00.000Z"],
            id="exrule-removes-weekends",
        ),
        pytest.param(
            Timing("UTC", rrule="FREQ=YEARLY;BYEASTER=0;BYHOUR=10;BYMINUTE=0"),
            ["2026-04-05T10:00:00.000Z", "2027-03-28T10:00:00.000Z", "2028-04-16T10:00:00.000Z"],
            id="byeaster",
        ),
        pytest.param(
            # Good Friday in New York: 10:00 EDT.
            Timing(NY, rrule="FREQ=YEARLY;BYEASTER=-2;BYHOUR=10;BYMINUTE=0"),
            ["2026-04-03T14:00:00.000Z", "2027-03-26T14:00:00.000Z", "2028-04-14T14:00:00.000Z"],
            id="byeaster-in-a-zone",
        ),
        pytest.param(
            Timing(
                "UTC",
                rrule="DTSTART:20260101T090000\nRRULE:FREQ=WEEKLY;BYDAY=MO\n"
                "DTSTART:20260310T170000\nRRULE:FREQ=DAILY;COUNT=2",
            ),
            ["2026-03-09T09:00:00.000Z", "2026-03-10T17:00:00.000Z", "2026-03-11T17:00:00.000Z"],
            id="parts-with-their-own-start",
        ),
        pytest.param(
            Timing("UTC", rrule="FREQ=YEARLY;INTERVAL=100;COUNT=3", start=wall("2026-06-01T09:00")),
            ["2026-06-01T09:00:00.000Z", "2126-06-01T09:00:00.000Z", "2226-06-01T09:00:00.000Z"],
            id="far-but-real-rrule",
        ),
        pytest.param(
            Timing("UTC", cron="0 0 0 1 1 ? 2030,2150"),
            ["2030-01-01T00:00:00.000Z", "2150-01-01T00:00:00.000Z"],
            id="far-but-real-year-field",
        ),
    ],
)
def test_rule_sets_and_far_rules_fire_every_time(timing: Timing, expected: list[str]) -> None:
    # Three asked for: the far rules have only three (COUNT) or two (their years) in all.
    assert times(timing, NOW_2026, 3) == expected
    check_timing(timing, utc(NOW_2026), timedelta(seconds=1))


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        (
            Timing("UTC", cron="0 9 * * MON-FRI"),
            ["2026-03-04T09:00:00.000Z", "2026-03-05T09:00:00.000Z", "2026-03-06T09:00:00.000Z"],
        ),
        (
            Timing("UTC", cron="* * * * * *"),
            ["2026-03-06T11:59:57.000Z", "2026-03-06T11:59:58.000Z", "2026-03-06T11:59:59.000Z"],
        ),
        # Across the fall-back in New York, a wildcard line's repeated hour happens twice.
        (
            Timing(NY, cron="30 * * * *"),
            ["2026-11-01T05:30:00.000Z", "2026-11-01T06:30:00.000Z", "2026-11-01T07:30:00.000Z"],
        ),
    ],
)
def test_previous_times_before_a_moment_oldest_first(timing: Timing, expected: list[str]) -> None:
    before = utc(NOW_2026) if timing.timezone == "UTC" else utc("2026-11-01T08:00:00Z")
    found = previous(timing, before, 3)
    assert [iso_z(moment) for moment in found] == expected
