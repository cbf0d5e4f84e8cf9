"""The blueprint's form: ``start_date`` (MM/DD/YYYY) + ``time_of_day`` (with ``am_pm``, or
24 h) in ``timeZone``, repeated every ``repeat_interval`` from there, up to the end of
``end_date`` local; no ``repeat_interval`` means once. It carries its own zone and bounds, and is
stored as an ``at`` or an ``interval`` (docs/time-semantics.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date, datetime, time, timedelta
from typing import Any, ClassVar

from shared.definition_rules import check_year
from shared.notations.base import InvalidMembers, Member, MemberKind, Notation
from shared.timing import Every, Timing


class _Unreadable(ValueError):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class Blueprint(Notation):
    name = "blueprint"
    label = "Start date, time of day, repeat interval"
    members: ClassVar[tuple[Member, ...]] = (
        Member(
            "start_date",
            MemberKind.DATE,
            description="MM/DD/YYYY, local date of the first run",
            label="Start date",
        ),
        Member(
            "end_date",
            MemberKind.DATE,
            description="MM/DD/YYYY, last local date (inclusive)",
            label="End date (included)",
        ),
        Member("timeZone", MemberKind.ZONE, label="Time zone"),
        Member(
            "time_of_day",
            MemberKind.TIME_OF_DAY,
            description="hh:mm, with am_pm, or HH:MM (24 h)",
            label="Time of day",
        ),
        Member("am_pm", MemberKind.CHOICE, choices=("AM", "PM"), in_console=False),
        Member("repeat_interval", MemberKind.INTERVAL, label="Repeat every (none: once)"),
    )
    bounded = False
    required = ("timeZone", "time_of_day")
    names: ClassVar[Mapping[str, str]] = {
        "timezone": "timeZone",
        "at": "start_date",
        "interval": "repeat_interval",
        "start": "start_date",
        "end": "end_date",
    }
    one_time_words = "start_date without repeat_interval"
    console_fire_if_past = True
    called = "start_date/time_of_day"
    given_as = "start_date + time_of_day"

    def is_one_time(self, members: Mapping[str, Any]) -> bool:
        return "repeat_interval" not in members

    def timing(self, members: Mapping[str, Any]) -> Timing:
        """Start at ``start_date`` + ``time_of_day`` local, repeat from there, stop after the
        end of ``end_date`` local."""
        errors: dict[str, list[str]] = {}

        def read(parse: Callable[..., Any], *args: Any) -> Any:
            try:
                return parse(*args)
            except _Unreadable as exc:
                errors[exc.name] = [str(exc)]
                return None

        start_day = read(_date, members["start_date"], "start_date")
        at_time = read(_time_of_day, members["time_of_day"], members.get("am_pm"))
        end_day = read(_date, members["end_date"], "end_date") if "end_date" in members else None
        if start_day is not None and end_day is not None and end_day < start_day:
            errors["end_date"] = ["end_date is before start_date"]
        if errors:
            raise InvalidMembers(errors)
        anchor = datetime.combine(start_day, at_time)
        end = None
        if end_day is not None:
            end = datetime.combine(end_day + timedelta(days=1), time()) - timedelta(milliseconds=1)
        interval = members.get("repeat_interval")
        if interval is None:
            return Timing(members["timeZone"], at=anchor, end=end)
        return Timing(
            members["timeZone"],
            interval=Every(interval["number"], interval["unit"]),
            start=anchor,
            end=end,
        )


def _date(value: str, name: str) -> date:
    try:
        day = datetime.strptime(value.strip(), "%m/%d/%Y").date()
    except ValueError:
        raise _Unreadable(name, "a date as MM/DD/YYYY, e.g. 05/02/2024") from None
    try:
        check_year(day.year)
    except ValueError as exc:
        raise _Unreadable(name, str(exc)) from None
    return day


def _time_of_day(value: str, am_pm: str | None) -> time:
    text = value.strip()
    try:
        if am_pm:
            return datetime.strptime(f"{text} {am_pm.upper()}", "%I:%M %p").time()
        return datetime.strptime(text, "%H:%M").time()
    except ValueError:
        expected = "hh:mm from 01:00 to 12:59 with am_pm" if am_pm else "HH:MM (24 h) or add am_pm"
        raise _Unreadable(
            "time_of_day", f"not a time of day: {value!r}; expected {expected}"
        ) from None


NOTATION = Blueprint()
