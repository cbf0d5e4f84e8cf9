"""``cron`` lines (five to seven fields, Quartz and EventBridge forms, macros, ``H``), by
Debian cron's rules for DST."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from shared.recurrence.base import (
    _LAST_INSTANT,
    SEARCH_HORIZON,
    OneTime,
    Recurrence,
    _epoch_seconds,
    _exists,
    _horizon,
    _jump_near,
    _spend,
    _wall,
    instant_in,
)
from shared.recurrence.cronfields import CronFields, Weekdays, parse_fields
from shared.recurrence.intervals import ExactInterval, parse_duration
from shared.timeutil import UTC, from_epoch_ms, resolve_local, utc_ms

CRON_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class CronRecurrence(Recurrence):
    """A cron line in a zone, by Debian cron's rules.

    The fields match local wall times (``cronfields``); the wall times become instants here:
    - a fixed-time line (none of second, minute, hour starts with ``*``) fires each wall time
      once, at its first instant; a wall time the clocks skip fires at the first minute after
      the jump;
    - a wildcard line follows real time: a skipped wall time never happens, a repeated one
      happens twice.
    """

    def __init__(self, fields: CronFields, zone: tzinfo) -> None:
        self.fields = fields
        self.zone = zone

    def instants(self, wall: datetime) -> list[datetime]:
        """The instants at which a matching wall time fires."""
        if self.fields.fixed_time:
            while not _exists(wall, self.zone):
                wall += timedelta(minutes=1)
            return [resolve_local(wall, self.zone)]
        found = []
        for fold in (0, 1):
            local = wall.replace(tzinfo=self.zone, fold=fold)
            instant = utc_ms(local)
            if _wall(instant, self.zone) == wall and instant not in found:
                found.append(instant)
        return found

    def at_wall(self, wall: datetime, zone: tzinfo) -> datetime | None:
        """By the rules above: a fixed-time line's skipped wall time fires after the jump, a
        wildcard line's does not happen (``None``)."""
        instants = self.instants(wall)
        return instants[0] if instants else None

    def next_after(self, moment: datetime) -> datetime | None:
        limit = _horizon(moment)
        if self.fields.years is not None:
            # A year field names its years: search up to the last, however far.
            last_year = datetime(max(self.fields.years) + 1, 1, 2, tzinfo=UTC)
            limit = max(limit, min(last_year, _LAST_INSTANT))
        last_wall = _wall(limit, self.zone) + timedelta(days=2)
        best: datetime | None = None
        best_stop: datetime | None = None
        start = _wall(moment, self.zone) - _jump_near(self.zone, moment)
        try:
            for wall in self.fields.walls(start, _spend):
                if wall > last_wall or (best_stop is not None and wall > best_stop):
                    break
                for instant in self.instants(wall):
                    if moment < instant <= limit and (best is None or instant < best):
                        best = instant
                        best_stop = wall + _jump_near(self.zone, instant)
        except OverflowError:  # past year 9999
            pass
        return best


def normalize_cron(expression: str) -> str:
    """Whitespace collapsed and a macro (``@daily`` …) replaced by its five fields."""
    text = " ".join(expression.split())
    return CRON_MACROS.get(text.lower(), text)


def cron_recurrence(
    expression: str,
    zone: tzinfo,
    anchor: datetime,
    starts_at_anchor: bool = True,
    schedule_id: str | None = None,
) -> Recurrence:
    """Cron lines of five, six (seconds first) or seven fields (and a year), ``@hourly``-style
    macros, ``@every <duration>``, ``@at <unix time>`` and EventBridge's ``rate(…)``,
    ``cron(…)`` and ``at(…)``. ``H`` picks its values from ``schedule_id``.

    ``@every`` and ``rate`` count from ``anchor``: the first run is the anchor itself when
    ``starts_at_anchor`` (an explicit start), else one step later.
    """
    text = normalize_cron(expression)
    lowered = text.lower()
    if lowered.startswith(("@every ", "rate(")):
        step = (
            parse_duration(text[len("@every ") :])
            if lowered.startswith("@every ")
            else parse_rate(text)
        )
        return ExactInterval(anchor if starts_at_anchor else anchor + step, step)
    if lowered.startswith("@at "):
        seconds = text[len("@at ") :]
        if not seconds.isdigit():
            raise ValueError(f"@at needs a Unix time in whole seconds, got {seconds!r}")
        if int(seconds) >= _epoch_seconds(_LAST_INSTANT):
            raise ValueError(f"@at {seconds} is after the year 9999")
        return OneTime(from_epoch_ms(int(seconds) * 1000))
    if lowered.startswith("at("):
        return OneTime(instant_in(parse_at(text), zone))
    if text.startswith("@"):
        known = ", ".join([*CRON_MACROS, "@every <duration>", "@at <unix time>"])
        raise ValueError(f"unknown macro {text.split()[0]!r}; use one of {known}")
    fields, weekdays = cron_fields(text)
    try:
        parsed = parse_fields(fields, schedule_id, weekdays)
    except ValueError as exc:
        raise ValueError(f"malformed cron line {expression!r}: {exc}") from None
    if not _has_a_day(parsed):
        raise ValueError(f"cron line {expression!r} never fires: no month it names has that day")
    return CronRecurrence(parsed, zone)


def _has_a_day(fields: CronFields) -> bool:
    """Whether some month the line names has a day it matches: leap years and weekdays repeat
    every 28 years within a century, or in the years of a year field."""
    years = sorted(fields.years) if fields.years is not None else range(2000, 2028)
    return any(fields.days(year, month) for year in years for month in fields.months)


_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|hour|day)s?\s*\)$", re.IGNORECASE)
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_AT = re.compile(r"^at\(\s*(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\s*\)$", re.IGNORECASE)
_EVENTBRIDGE_CRON = re.compile(r"^cron\((.*)\)$", re.IGNORECASE)


def parse_rate(text: str) -> timedelta:
    """EventBridge ``rate(5 minutes)``: elapsed time, in minutes, hours or days."""
    match = _RATE.match(text)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{text!r}: EventBridge writes rate(value unit), e.g. rate(5 minutes)")
    seconds = int(match.group(1)) * _RATE_UNITS[match.group(2).lower()]
    if seconds > SEARCH_HORIZON.total_seconds():
        raise ValueError(f"a rate of at most {SEARCH_HORIZON.days} days")
    return timedelta(seconds=seconds)


def parse_at(text: str) -> datetime:
    """EventBridge ``at(2027-01-01T09:00:00)``: a local wall time in the schedule's zone."""
    match = _AT.match(text)
    if match is None:
        raise ValueError(f"{text!r}: EventBridge writes at(yyyy-mm-ddThh:mm:ss)")
    try:
        return datetime.fromisoformat(match.group(1))
    except ValueError:
        raise ValueError(f"{text!r} is not a real date and time") from None


def cron_fields(text: str) -> tuple[tuple[str, ...], Weekdays]:
    """The seven-or-fewer fields of a cron line, seconds first, and how its day-of-week numbers
    read: five fields get ``0`` seconds (Unix numbers), six and seven are Quartz/Spring order
    (names only: the two number days differently), ``cron(…)`` is EventBridge's six fields
    ``min hour dom month dow year`` (1 is Sunday)."""
    match = _EVENTBRIDGE_CRON.match(text)
    if match is not None:
        fields = match.group(1).upper().split()
        if len(fields) != 6:
            raise ValueError(
                "EventBridge's cron(…) has six fields: minutes hours day-of-month month "
                f"day-of-week year; got {len(fields)}"
            )
        return ("0", *fields), Weekdays.QUARTZ
    fields = text.upper().split()
    if len(fields) == 5:
        return ("0", *fields), Weekdays.UNIX
    if len(fields) in (6, 7):
        return tuple(fields), Weekdays.NAMES
    raise ValueError(
        "a cron line has five fields (minute hour day-of-month month day-of-week), six "
        f"(seconds first, as Quartz and Spring) or seven (and a year); got {len(fields)}"
    )
