"""``rrule``: RFC 5545 rules and rule sets (docs/time-semantics.md), expanded by python-dateutil
over local wall times with the schedule's start as DTSTART (00:00 on the day it is accepted
without one). The engine is ``shared.recurrence.rrule``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.notations.base import Anchors, TimingNotation
from shared.notations.words import every, join, local, plural, times
from shared.recurrence import Recurrence, RulePart, parse_rrule, wall_in
from shared.recurrence.rrule import rrule_recurrence
from shared.timeutil import load_zone
from shared.timing import Timing

_WEEKDAYS = {
    "MO": "Monday",
    "TU": "Tuesday",
    "WE": "Wednesday",
    "TH": "Thursday",
    "FR": "Friday",
    "SA": "Saturday",
    "SU": "Sunday",
}
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_FREQUENCIES = {
    "SECONDLY": "second",
    "MINUTELY": "minute",
    "HOURLY": "hour",
    "DAILY": "day",
    "WEEKLY": "week",
    "MONTHLY": "month",
    "YEARLY": "year",
}
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", -1: "last"}


class RRule(TimingNotation):
    name = "rrule"
    label = "RRULE (RFC 5545)"
    view_label = "RRULE"
    member_label = "RRULE"
    member_example = "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0"
    max_length = 2000
    used_up_hint = (
        " (COUNT counts from the rule's DTSTART: the schedule's start, or 00:00 on the day "
        "it is accepted; max_occurrences counts from acceptance)"
    )

    def recurrence(self, timing: Timing, anchors: Anchors) -> Recurrence:
        zone = anchors.zone
        start_wall = None if timing.start is None else wall_in(timing.start, zone)
        return rrule_recurrence(_text(timing.value), zone, start_wall, anchors.accepted_at)

    def unreadable(self, error: Exception) -> str:
        # dateutil also raises TypeError (BYSECOND=61) and OverflowError (a huge INTERVAL).
        return f"not a valid RFC 5545 rule: {error}"

    def describe(self, timing: Timing) -> str:
        spec = parse_rrule(_text(timing.value), load_zone(timing.timezone))
        described = [_rule_words(part, timing) for part in spec.rules]
        described.extend(f"except {_rule_words(part, timing)}" for part in spec.exrules)
        if spec.rdates:
            extra = "date" if len(spec.rdates) == 1 else "dates"
            described.append(f"on {len(spec.rdates)} listed {extra}")
        text = "; ".join(described)
        text = text[0].upper() + text[1:]
        excluded = len(spec.exdates) + len(spec.exdays)
        if excluded:
            text += f", except {excluded} excluded " + ("date" if excluded == 1 else "dates")
        return text


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a rule is a string, not {value!r}")
    return value


def _rule_words(part: RulePart, timing: Timing) -> str:
    fields = dict(item.split("=", 1) for item in part.body.split(";"))
    count, until = part.count, part.until
    freq = fields.pop("FREQ")
    unit = _FREQUENCIES[freq]
    dtstart = wall_in(timing.start, load_zone(timing.timezone)) if timing.start else None
    if part.dtstart is not None:
        dtstart = part.dtstart
    words = [every(int(fields.pop("INTERVAL", "1")), unit).lower()]
    if part.dtstart is not None:
        words.append(f"from {local(part.dtstart, timing.timezone)}")
    dated = any(
        key in fields for key in ("BYMONTHDAY", "BYDAY", "BYYEARDAY", "BYWEEKNO", "BYEASTER")
    )
    on_the_date = freq == "YEARLY" and "BYMONTH" not in fields and not dated
    if on_the_date:
        words.append(f"on {_MONTHS[dtstart.month - 1]} {dtstart.day}" if dtstart else "on the date")
    if "BYMONTH" in fields:
        months = [_MONTHS[int(item) - 1] for item in fields.pop("BYMONTH").split(",")]
        words.append(f"in {join(months)}")
    if freq in ("YEARLY", "MONTHLY") and not dated and not on_the_date:
        words.append(f"on day {dtstart.day}" if dtstart else "on the day of the month")
    if freq == "WEEKLY" and not dated:
        weekday = list(_WEEKDAYS.values())[dtstart.weekday()] if dtstart else "the weekday"
        words.append(f"on {weekday}")
    if dtstart is None and freq in ("YEARLY", "MONTHLY", "WEEKLY") and not dated:
        words.append("it is accepted")
    if "BYMONTHDAY" in fields:
        days = [_month_day(int(item)) for item in fields.pop("BYMONTHDAY").split(",")]
        words.append(f"on {join(days)} of the month")
    if "BYDAY" in fields:
        words.append(f"on {_weekdays(fields.pop('BYDAY').split(','))}")
    if "BYEASTER" in fields:
        offsets = [_easter(int(item)) for item in fields.pop("BYEASTER").split(",")]
        words.append(f"on {join(offsets)}")
    words.extend(_time_words(fields, unit, dtstart))
    if fields:
        # Rarer parts (BYSETPOS, BYWEEKNO, BYYEARDAY, WKST) are shown as written.
        words.append("(" + ";".join(f"{key}={value}" for key, value in fields.items()) + ")")
    text = " ".join(words)
    if count is not None:
        text += f", {times(count)} in all"
    if until is not None:
        text += f", until {local(until, timing.timezone)}"
    return text


def _weekday(item: str) -> str:
    name = _WEEKDAYS[item[-2:]]
    if len(item) == 2:
        return name
    nth = int(item[:-2])
    return f"the {_ORDINALS.get(nth, f'{nth}.')} {name}"


def _weekdays(items: list[str]) -> str:
    if items == ["MO", "TU", "WE", "TH", "FR"]:
        return "Monday through Friday"
    return join([_weekday(item) for item in items])


def _month_day(day: int) -> str:
    if day == -1:
        return "the last day"
    if day < 0:
        return f"day {day} from the end"
    return f"day {day}"


def _easter(offset: int) -> str:
    if offset == 0:
        return "Easter Sunday"
    return f"{plural(abs(offset), 'day')} {'after' if offset > 0 else 'before'} Easter"


def _numbers(fields: dict[str, str], key: str) -> list[int]:
    return sorted(int(item) for item in fields.pop(key, "").split(",") if item)


def _time_words(fields: dict[str, str], unit: str, dtstart: datetime | None) -> list[str]:
    """The times of day; those the rule leaves out come from DTSTART (00:00 without a start)."""
    hours = _numbers(fields, "BYHOUR")
    minutes = _numbers(fields, "BYMINUTE")
    seconds = _numbers(fields, "BYSECOND")
    if unit in ("day", "week", "month", "year") and not hours:
        hours = [dtstart.hour if dtstart else 0]
    if unit not in ("minute", "second") and not minutes:
        minutes = [dtstart.minute if dtstart else 0]
    if hours and minutes and len(hours) * len(minutes) <= 6 and not seconds:
        clock = [f"{hour:02d}:{minute:02d}" for hour in hours for minute in minutes]
        return [f"at {join(clock)}"]
    words = []
    if hours:
        words.append(f"at hour {join([str(hour) for hour in hours])}")
    if minutes:
        words.append(f"at minute {join([str(minute) for minute in minutes])}")
    if seconds:
        words.append(f"at second {join([str(second) for second in seconds])}")
    return words


NOTATION = RRule()
