"""A schedule's times in plain English, for the preview and the stored schedule's view.

The words are a mental check for the user ("At 09:00 on Monday through Friday, Asia/Kolkata"),
not a contract: the occurrences are. Five-field cron lines are explained by cronsim, longer and
Quartz-style ones field by field; the rest is simple.
"""

from __future__ import annotations

import contextlib
import re
from datetime import datetime, timedelta

from cronsim import CronSim, CronSimError

from shared.model import Every, Timing
from shared.recurrence import (
    RulePart,
    cron_fields,
    normalize_cron,
    parse_at,
    parse_duration,
    parse_rate,
    parse_rrule,
    wall_in,
)
from shared.recurrence.cronfields import Weekdays
from shared.timeutil import from_epoch_ms, iso_z, load_zone

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


def describe(timing: Timing) -> str:
    """``At 09:00 on Monday through Friday, Asia/Kolkata``; bounds and limits follow."""
    try:
        core = _core(timing)
    except ValueError:
        core = f"By the {timing.kind} {_raw(timing)}"
    parts = [core, timing.timezone]
    if timing.start is not None and timing.interval is None:
        parts.append(f"from {_local(timing.start, timing.timezone)}")
    if timing.end is not None:
        parts.append(f"until {_local(timing.end, timing.timezone)}")
    if timing.max_occurrences is not None:
        parts.append(f"at most {_times(timing.max_occurrences)}")
    return ", ".join(parts)


def _raw(timing: Timing) -> str:
    return str(getattr(timing, timing.kind))


def _core(timing: Timing) -> str:
    if timing.at is not None:
        return f"Once, at {_local(timing.at, timing.timezone)}"
    if timing.interval is not None:
        return _interval(timing.interval, timing.start, timing.timezone)
    if timing.cron is not None:
        return _cron(timing.cron)
    if timing.rrule is not None:
        return _rrule(timing.rrule, timing)
    raise ValueError("no form")


def _local(moment: datetime, zone_name: str) -> str:
    """A naive wall time as it is; an instant as the zone's wall time."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(load_zone(zone_name)).replace(tzinfo=None)
    pattern = "%Y-%m-%d %H:%M:%S" if moment.second or moment.microsecond else "%Y-%m-%d %H:%M"
    return moment.strftime(pattern)


def _plural(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def _times(number: int) -> str:
    return "once" if number == 1 else "twice" if number == 2 else f"{number} times"


def _every(number: int, unit: str) -> str:
    return f"Every {unit}" if number == 1 else f"Every {number} {unit}s"


def _interval(every: Every, start: datetime | None, zone_name: str) -> str:
    text = _every(every.number, every.unit.value)
    if every.unit.is_exact:
        text += " (elapsed time)"
    if start is None:
        return text + ", the first one interval after the schedule is accepted"
    if not every.unit.is_exact:
        wall = wall_in(start, load_zone(zone_name))
        text += f" at {wall.hour:02d}:{wall.minute:02d}"
    return text + f", from {_local(start, zone_name)}"


def _duration(step: timedelta) -> str:
    milliseconds = step // timedelta(milliseconds=1)
    words = []
    for size, unit in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute")):
        count, milliseconds = divmod(milliseconds, size)
        if count:
            words.append(_plural(count, unit))
    if milliseconds:
        seconds = milliseconds / 1000
        words.append(f"{seconds:g} second" + ("" if seconds == 1 else "s"))
    return " ".join(words)


def _cron(expression: str) -> str:
    text = normalize_cron(expression)
    lowered = text.lower()
    if lowered.startswith("@every "):
        return f"Every {_duration(parse_duration(text[len('@every ') :]))} (elapsed time)"
    if lowered.startswith("rate("):
        return f"Every {_duration(parse_rate(text))} (elapsed time)"
    if lowered.startswith("@at "):
        return f"Once, at {iso_z(from_epoch_ms(int(text[len('@at ') :]) * 1000))}"
    if lowered.startswith("at("):
        return f"Once, at {_local(parse_at(text), 'UTC')}"
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
        words.append(f"on day-of-month {_join(days)}")
    if week_day not in ("*", "?"):
        weekdays = [_glossed(term, _WEEKDAY_WORDS) for term in week_day.split(",")]
        words.append(f"on {_join(weekdays)}")
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


def _join(words: list[str]) -> str:
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _weekday(item: str) -> str:
    name = _WEEKDAYS[item[-2:]]
    if len(item) == 2:
        return name
    nth = int(item[:-2])
    return f"the {_ORDINALS.get(nth, f'{nth}.')} {name}"


def _weekdays(items: list[str]) -> str:
    if items == ["MO", "TU", "WE", "TH", "FR"]:
        return "Monday through Friday"
    return _join([_weekday(item) for item in items])


def _month_day(day: int) -> str:
    if day == -1:
        return "the last day"
    if day < 0:
        return f"day {day} from the end"
    return f"day {day}"


def _rrule(text: str, timing: Timing) -> str:
    spec = parse_rrule(text, load_zone(timing.timezone))
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


def _rule_words(part: RulePart, timing: Timing) -> str:
    fields = dict(item.split("=", 1) for item in part.body.split(";"))
    count, until = part.count, part.until
    freq = fields.pop("FREQ")
    unit = _FREQUENCIES[freq]
    dtstart = wall_in(timing.start, load_zone(timing.timezone)) if timing.start else None
    if part.dtstart is not None:
        dtstart = part.dtstart
    words = [_every(int(fields.pop("INTERVAL", "1")), unit).lower()]
    if part.dtstart is not None:
        words.append(f"from {_local(part.dtstart, timing.timezone)}")
    dated = any(
        key in fields for key in ("BYMONTHDAY", "BYDAY", "BYYEARDAY", "BYWEEKNO", "BYEASTER")
    )
    on_the_date = freq == "YEARLY" and "BYMONTH" not in fields and not dated
    if on_the_date:
        words.append(f"on {_MONTHS[dtstart.month - 1]} {dtstart.day}" if dtstart else "on the date")
    if "BYMONTH" in fields:
        months = [_MONTHS[int(item) - 1] for item in fields.pop("BYMONTH").split(",")]
        words.append(f"in {_join(months)}")
    if freq in ("YEARLY", "MONTHLY") and not dated and not on_the_date:
        words.append(f"on day {dtstart.day}" if dtstart else "on the day of the month")
    if freq == "WEEKLY" and not dated:
        weekday = list(_WEEKDAYS.values())[dtstart.weekday()] if dtstart else "the weekday"
        words.append(f"on {weekday}")
    if dtstart is None and freq in ("YEARLY", "MONTHLY", "WEEKLY") and not dated:
        words.append("it is accepted")
    if "BYMONTHDAY" in fields:
        days = [_month_day(int(item)) for item in fields.pop("BYMONTHDAY").split(",")]
        words.append(f"on {_join(days)} of the month")
    if "BYDAY" in fields:
        words.append(f"on {_weekdays(fields.pop('BYDAY').split(','))}")
    if "BYEASTER" in fields:
        offsets = [_easter(int(item)) for item in fields.pop("BYEASTER").split(",")]
        words.append(f"on {_join(offsets)}")
    words.extend(_time_words(fields, unit, dtstart))
    if fields:
        # Rarer parts (BYSETPOS, BYWEEKNO, BYYEARDAY, WKST) are shown as written.
        words.append("(" + ";".join(f"{key}={value}" for key, value in fields.items()) + ")")
    text = " ".join(words)
    if count is not None:
        text += f", {_times(count)} in all"
    if until is not None:
        text += f", until {_local(until, timing.timezone)}"
    return text


def _easter(offset: int) -> str:
    if offset == 0:
        return "Easter Sunday"
    return f"{_plural(abs(offset), 'day')} {'after' if offset > 0 else 'before'} Easter"


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
        return [f"at {_join(clock)}"]
    words = []
    if hours:
        words.append(f"at hour {_join([str(hour) for hour in hours])}")
    if minutes:
        words.append(f"at minute {_join([str(minute) for minute in minutes])}")
    if seconds:
        words.append(f"at second {_join([str(second) for second in seconds])}")
    return words
