"""``cron``: a cron line in its dialects (docs/time-semantics.md): five fields (Unix), six and
seven (Quartz, Spring: seconds first, a year), EventBridge's ``cron(…)``, ``rate(…)`` and
``at(…)``, the macros, ``@every``, ``@at`` and Jenkins' hashed ``H``. The engine is
``shared.recurrence.cron`` (with ``cronfields``), by Debian cron's rules for DST."""

from __future__ import annotations

import contextlib
import re
from datetime import datetime
from typing import Any

from cronsim import CronSim, CronSimError

from shared.notations.base import Anchors, TimingNotation
from shared.notations.words import duration, join, local
from shared.recurrence import (
    Recurrence,
    cron_fields,
    cron_recurrence,
    normalize_cron,
    parse_at,
    parse_duration,
    parse_rate,
)
from shared.recurrence.cronfields import Weekdays
from shared.timeutil import from_epoch_ms, iso_z
from shared.timing import Timing


class Cron(TimingNotation):
    name = "cron"
    label = "Cron line"
    view_label = "cron line"
    member_label = "Cron line"
    member_example = "30 9 * * 1-5, @hourly, @every 90s"
    max_length = 200
    one_time_words = "an EventBridge at(…)"

    def is_one_time(self, members: Any) -> bool:
        return str(members.get("cron", "")).strip().lower().startswith("at(")

    def recurrence(self, timing: Timing, anchors: Anchors) -> Recurrence:
        # @every and rate(…) count from the start, else from the acceptance.
        start = anchors.start
        anchor = start if start is not None else anchors.accepted_at
        return cron_recurrence(
            _line(timing.value), anchors.zone, anchor, start is not None, anchors.schedule_id
        )

    def describe(self, timing: Timing) -> str:
        text = normalize_cron(_line(timing.value))
        lowered = text.lower()
        if lowered.startswith("@every "):
            return f"Every {duration(parse_duration(text[len('@every ') :]))} (elapsed time)"
        if lowered.startswith("rate("):
            return f"Every {duration(parse_rate(text))} (elapsed time)"
        if lowered.startswith("@at "):
            return f"Once, at {iso_z(from_epoch_ms(int(text[len('@at ') :]) * 1000))}"
        if lowered.startswith("at("):
            return f"Once, at {local(parse_at(text), 'UTC')}"
        fields, weekdays = cron_fields(text)
        second, *rest = fields
        if len(rest) == 6 and rest[-1] in ("*", "?"):
            rest.pop()
        numbered = weekdays is Weekdays.QUARTZ and any(char.isdigit() for char in rest[4])
        if second == "0" and len(rest) == 5 and "H" not in text.upper() and not numbered:
            # A line cronsim can read (seconds 0, no year, ``?`` as ``*``): its own words.
            with contextlib.suppress(CronSimError):
                line = " ".join("*" if item == "?" else item for item in rest)
                explained: str = CronSim(line, datetime(2000, 1, 1)).explain()
                return explained
        return _cron_words(fields)


def _line(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a cron line is a string, not {value!r}")
    return value


_DAY_WORDS = (
    (re.compile(r"^L$"), "the last day"),
    (re.compile(r"^L-(\d+)$"), r"\1 days before the last day"),
    (re.compile(r"^LW$"), "the last weekday"),
    (re.compile(r"^(\d+)W$"), r"the weekday nearest day \1"),
)
_WEEKDAY_WORDS = (
    (re.compile(r"^([\w-]+)#(\d)$"), r"the #\2 \1 of the month"),
    (re.compile(r"^(\w+)L$"), r"the last \1 of the month"),
)


def _cron_words(fields: tuple[str, ...]) -> str:
    """Field-by-field words for the lines cronsim cannot explain (seconds, years, Quartz)."""
    second, minute, hour, month_day, month, week_day = fields[:6]
    if all(item.isdigit() for item in (second, minute, hour)):
        clock = f"{int(hour):02d}:{int(minute):02d}"
        words = [f"At {clock}" + (f":{int(second):02d}" if int(second) else "")]
    else:
        words = [f"At second {second}, minute {minute}, hour {hour}"]
    if month_day not in ("*", "?"):
        days = [_glossed(term, _DAY_WORDS) for term in month_day.split(",")]
        words.append(f"on day-of-month {join(days)}")
    if week_day not in ("*", "?"):
        weekdays = [_glossed(term, _WEEKDAY_WORDS) for term in week_day.split(",")]
        words.append(f"on {join(weekdays)}")
    if month != "*":
        words.append(f"in month {month}")
    if len(fields) == 7 and fields[6] not in ("*", "?"):
        words.append(f"in {fields[6]}")
    if any(item.startswith("H") for item in fields):
        words.append("(H: values picked from the schedule's id)")
    return " ".join(words)


def _glossed(term: str, glossary: tuple[tuple[re.Pattern[str], str], ...]) -> str:
    for pattern, words in glossary:
        if pattern.match(term):
            return pattern.sub(words, term)
    return term


NOTATION = Cron()
