"""The blueprint's schedule form: start_date + time_of_day + am_pm, repeat_interval, end_date."""

from __future__ import annotations

from datetime import datetime

import pytest
from marshmallow import ValidationError

from scheduler_service.requests.timing import ScheduleSpecSchema
from shared.model import Timing
from shared.notations import build_recurrence, first_occurrence
from shared.timeutil import UTC, iso_z

ACCEPTED = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def seed(**fields: object) -> Timing:
    timing, _names = ScheduleSpecSchema().load(fields)
    return timing


def times(timing: Timing, count: int, accepted: datetime = ACCEPTED) -> list[str]:
    return [iso_z(t) for t in build_recurrence(timing, accepted).upcoming(accepted, count)]


def test_the_blueprints_own_example_fires_every_two_minutes_from_its_local_start() -> None:
    timing = seed(
        start_date="05/02/2027",
        end_date="05/04/2027",
        timeZone="Asia/Calcutta",
        time_of_day="11:53",
        am_pm="AM",
        repeat_interval={"number": 2, "unit": "minute"},
    )
    assert times(timing, 3) == [
        "2027-05-02T06:23:00.000Z",
        "2027-05-02T06:25:00.000Z",
        "2027-05-02T06:27:00.000Z",
    ]
    recurrence = build_recurrence(timing, ACCEPTED)
    # The end is the end of 05/04 local (IST, +05:30): 23:59 IST is the last two-minute slot.
    last = recurrence.next_after(datetime(2027, 5, 4, 18, 28, tzinfo=UTC))
    assert last is not None and iso_z(last) == "2027-05-04T18:29:00.000Z"
    assert recurrence.next_after(last) is None


@pytest.mark.parametrize(
    ("time_of_day", "am_pm", "expected_utc"),
    [
        ("12:30", "AM", "2027-01-10T00:30:00.000Z"),
        ("12:00", "PM", "2027-01-10T12:00:00.000Z"),
        ("01:05", "pm", "2027-01-10T13:05:00.000Z"),
        ("23:15", None, "2027-01-10T23:15:00.000Z"),
    ],
)
def test_time_of_day_with_and_without_am_pm(
    time_of_day: str, am_pm: str | None, expected_utc: str
) -> None:
    fields: dict[str, object] = {
        "start_date": "01/10/2027",
        "timeZone": "UTC",
        "time_of_day": time_of_day,
    }
    if am_pm:
        fields["am_pm"] = am_pm
    first = first_occurrence(seed(**fields), ACCEPTED)
    assert first is not None and iso_z(first) == expected_utc


@pytest.mark.parametrize(
    ("fields", "expected_utc"),
    [
        pytest.param(
            {
                "start_date": "03/12/2027",
                "timeZone": "America/New_York",
                "time_of_day": "09:00",
                "am_pm": "AM",
                "repeat_interval": {"number": 1, "unit": "days"},
            },
            # New York springs forward on 2027-03-14: 09:00 EST is 14:00Z, 09:00 EDT is 13:00Z.
            [
                "2027-03-12T14:00:00.000Z",
                "2027-03-13T14:00:00.000Z",
                "2027-03-14T13:00:00.000Z",
                "2027-03-15T13:00:00.000Z",
            ],
            id="days keep the local wall time across spring forward",
        ),
        pytest.param(
            {
                "start_date": "11/07/2027",
                "timeZone": "America/New_York",
                "time_of_day": "12:00",
                "am_pm": "AM",
                "repeat_interval": {"number": 1, "unit": "Hours"},
            },
            # 2027-11-07 falls back at 02:00 EDT: every real hour fires once, none doubled or lost.
            [
                "2027-11-07T04:00:00.000Z",
                "2027-11-07T05:00:00.000Z",
                "2027-11-07T06:00:00.000Z",
                "2027-11-07T07:00:00.000Z",
            ],
            id="hours are elapsed time across fall back",
        ),
        pytest.param(
            {
                "start_date": "01/31/2028",
                "timeZone": "Europe/Paris",
                "time_of_day": "08:00",
                "repeat_interval": {"number": 1, "unit": "month"},
            },
            # 2028 is a leap year; each month counts from the anchor, so March is the 31st again.
            [
                "2028-01-31T07:00:00.000Z",
                "2028-02-29T07:00:00.000Z",
                "2028-03-31T06:00:00.000Z",
                "2028-04-30T06:00:00.000Z",
            ],
            id="months from the 31st clamp to the month's end without drift",
        ),
        pytest.param(
            {"start_date": "06/01/2027", "timeZone": "Asia/Kolkata", "time_of_day": "09:00"},
            ["2027-06-01T03:30:00.000Z"],
            id="without repeat_interval it fires once",
        ),
    ],
)
def test_the_times_a_seed_form_fires_at(fields: dict[str, object], expected_utc: list[str]) -> None:
    assert times(seed(**fields), 4) == expected_utc


@pytest.mark.parametrize(
    ("fields", "expected_utc"),
    [
        pytest.param(
            {"start_date": "01/01/2020", "timeZone": "UTC", "time_of_day": "10:00"},
            "2020-01-01T10:00:00.000Z",
            id="a one-time schedule in the past still fires right away",
        ),
        pytest.param(
            {
                "start_date": "11/20/2026",
                "timeZone": "UTC",
                "time_of_day": "10:00",
                "repeat_interval": {"number": 1, "unit": "day"},
            },
            "2026-11-23T10:00:00.000Z",
            id="a recurring schedule does not backfill before its acceptance",
        ),
    ],
)
def test_the_first_time_from_a_start_before_acceptance(
    fields: dict[str, object], expected_utc: str
) -> None:
    first = first_occurrence(seed(**fields), ACCEPTED)
    assert first is not None and iso_z(first) == expected_utc


VALID = {"start_date": "05/02/2027", "timeZone": "UTC", "time_of_day": "10:00"}


@pytest.mark.parametrize(
    ("changes", "bad_field"),
    [
        ({"start_date": "2027-05-02"}, "start_date"),
        ({"start_date": "02/30/2027"}, "start_date"),
        ({"start_date": None}, "start_date"),
        ({"timeZone": "Mars/Base"}, "timeZone"),
        ({"time_of_day": "13:00", "am_pm": "PM"}, "time_of_day"),
        ({"end_date": "05/01/2027"}, "end_date"),
        ({"repeat_interval": {"number": 0, "unit": "minute"}}, "repeat_interval"),
        ({"repeat_interval": {"number": 1, "unit": "fortnight"}}, "repeat_interval"),
    ],
)
def test_bad_seed_fields_are_named(changes: dict[str, object], bad_field: str) -> None:
    # None leaves the field out.
    fields = {name: value for name, value in {**VALID, **changes}.items() if value is not None}
    with pytest.raises(ValidationError) as raised:
        ScheduleSpecSchema().load(fields)
    assert bad_field in raised.value.messages
