"""When a schedule fires: each notation follows its own standard.

- ``at``: one instant.
- ``interval`` in seconds, minutes or hours: exact elapsed time from the anchor;
  DST does not move it.
- ``interval`` in days, weeks, months or years: the anchor's local wall time, counted from the
  anchor (occurrence k is anchor + k units: Jan 31 monthly gives Feb 28, Mar 31, Apr 30, no drift).
- ``rrule`` (RFC 5545) and calendar intervals resolve local wall times with ``fold=0``: a time in a
  spring-forward gap is read with the offset before the gap, a repeated time is the earlier instant.
- ``cron``: Debian cron's rules, as cronsim implements them: a fixed-time job in a skipped hour runs
  once right after the jump; a repeated hour fires once; wildcard-hour jobs follow real time.

Every engine answers ``next_after(t)``: the first occurrence strictly after the instant ``t``.
Occurrence n+1 is always computed from occurrence n's scheduled time, never from when it ran.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo

import pendulum
from cronsim import CronSim, CronSimError
from dateutil.rrule import rrule, rruleset, rrulestr

from shared.model import Every, Timing, Unit
from shared.timeutil import UTC, from_epoch_ms, load_zone, resolve_local, utc_ms

CRON_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_EXACT_SECONDS = {Unit.SECOND: 1, Unit.MINUTE: 60, Unit.HOUR: 3600}
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_DURATION_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Far enough to find the next Feb 29 or a yearly rule that skips years, short enough that a rule
# which never fires is refused quickly instead of being searched for ever.
SEARCH_HORIZON = timedelta(days=366 * 9)
# Wider than any UTC-offset change, so occurrences near a DST jump are compared as instants.
_OFFSET_SLACK = timedelta(hours=3)


class Recurrence(ABC):
    """A source of occurrences for one schedule, bounded by its ``start`` and ``end``."""

    @abstractmethod
    def next_after(self, moment: datetime) -> datetime | None:
        """The first occurrence strictly after ``moment`` (aware), or ``None`` if there is none."""

    def first_at_or_after(self, moment: datetime) -> datetime | None:
        return self.next_after(utc_ms(moment) - timedelta(milliseconds=1))

    def upcoming(self, after: datetime, count: int) -> Iterator[datetime]:
        """Up to ``count`` occurrences at or after ``after``."""
        moment = self.first_at_or_after(after)
        for _ in range(count):
            if moment is None:
                return
            yield moment
            moment = self.next_after(moment)


class OneTime(Recurrence):
    def __init__(self, at: datetime) -> None:
        self.at = utc_ms(at)

    def next_after(self, moment: datetime) -> datetime | None:
        return self.at if self.at > moment else None


class ExactInterval(Recurrence):
    """Every ``step`` of elapsed time from ``anchor``."""

    def __init__(self, anchor: datetime, step: timedelta) -> None:
        self.anchor = utc_ms(anchor)
        self.step = step

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        steps = (moment - self.anchor) // self.step + 1
        return utc_ms(self.anchor + steps * self.step)


class CalendarInterval(Recurrence):
    """Every ``number`` days/weeks/months/years of local wall time, counted from ``anchor_wall``."""

    def __init__(self, anchor_wall: datetime, zone: tzinfo, every: Every) -> None:
        self.anchor_wall = pendulum.instance(anchor_wall).naive()
        self.zone = zone
        self.every = every
        self.anchor = resolve_local(anchor_wall, zone)
        # Shortest possible length of one step, to estimate the step count of an instant.
        self._min_step = {
            Unit.DAY: timedelta(days=1),
            Unit.WEEK: timedelta(days=7),
            Unit.MONTH: timedelta(days=28),
            Unit.YEAR: timedelta(days=365),
        }[every.unit] * every.number

    def wall(self, index: int) -> datetime:
        """The local wall time of occurrence ``index``: the anchor plus ``index`` steps."""
        amount = index * self.every.number
        unit = {Unit.DAY: "days", Unit.WEEK: "weeks", Unit.MONTH: "months", Unit.YEAR: "years"}
        wall = self.anchor_wall.add(**{unit[self.every.unit]: amount})
        return datetime(*wall.timetuple()[:6], wall.microsecond)

    def occurrence(self, index: int) -> datetime:
        return resolve_local(self.wall(index), self.zone)

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        # An upper estimate of the index, then walk back to the first occurrence after moment.
        index = (moment - self.anchor) // self._min_step + 1
        while index > 0 and self.occurrence(index - 1) > moment:
            index -= 1
        while self.occurrence(index) <= moment:
            index += 1
        return self.occurrence(index)


class CronRecurrence(Recurrence):
    def __init__(self, expression: str, zone: tzinfo) -> None:
        self.expression = expression
        self.zone = zone
        CronSim(expression, datetime.now(zone))  # raises CronSimError when malformed

    def next_after(self, moment: datetime) -> datetime | None:
        local = moment.astimezone(self.zone)
        limit = moment + SEARCH_HORIZON
        for candidate in CronSim(self.expression, local):
            instant = utc_ms(candidate)
            if instant > limit:
                return None
            if instant > moment:
                return instant
        return None


class RRuleRecurrence(Recurrence):
    """RFC 5545 rules over local wall times; DTSTART is the schedule's start."""

    def __init__(self, text: str, anchor_wall: datetime, zone: tzinfo) -> None:
        self.zone = zone
        self.rule: rrule | rruleset = rrulestr(text, dtstart=anchor_wall, forceset=True)

    def next_after(self, moment: datetime) -> datetime | None:
        # Wall times near a DST jump do not resolve in order (02:30 in a gap is read after 03:00),
        # so collect the instants of a window of wall times and keep the earliest after moment.
        wall = moment.astimezone(self.zone).replace(tzinfo=None) - _OFFSET_SLACK
        limit = moment + SEARCH_HORIZON
        best: datetime | None = None
        stop_wall: datetime | None = None
        while True:
            wall_next = self.rule.after(wall)
            if wall_next is None or (stop_wall is not None and wall_next > stop_wall):
                return best
            instant = resolve_local(wall_next, self.zone)
            if instant > limit:
                return best
            if instant > moment and (best is None or instant < best):
                best = instant
                stop_wall = wall_next + 2 * _OFFSET_SLACK
            wall = wall_next


class Bounded(Recurrence):
    """Another recurrence limited to ``[start, end]``."""

    def __init__(self, inner: Recurrence, start: datetime | None, end: datetime | None) -> None:
        self.inner = inner
        self.start = start
        self.end = end

    def next_after(self, moment: datetime) -> datetime | None:
        if self.start is not None and moment < self.start:
            moment = self.start - timedelta(milliseconds=1)
        found = self.inner.next_after(moment)
        if found is None or (self.end is not None and found > self.end):
            return None
        return found


def parse_duration(text: str) -> timedelta:
    """``1h30m``, ``90s``, ``2d`` → a positive duration (seed 004's ``@every``)."""
    compact = text.replace(" ", "").lower()
    parts = _DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"not a duration: {text!r}; use e.g. 90s, 15m, 1h30m, 2d")
    seconds = sum(int(number) * _DURATION_SECONDS[unit] for number, unit in parts)
    if seconds <= 0:
        raise ValueError("a duration must be positive")
    return timedelta(seconds=seconds)


def instant_in(moment: datetime, zone: tzinfo) -> datetime:
    """An instant from a naive wall time in ``zone`` or from an aware datetime."""
    return resolve_local(moment, zone) if moment.tzinfo is None else utc_ms(moment)


def wall_in(moment: datetime, zone: tzinfo) -> datetime:
    """The naive local wall time in ``zone`` of a naive wall time or an aware datetime."""
    return moment if moment.tzinfo is None else moment.astimezone(zone).replace(tzinfo=None)


def build_recurrence(timing: Timing, accepted_at: datetime) -> Recurrence:
    """The recurrence of a timing. ``accepted_at`` anchors forms that have no explicit start."""
    zone = load_zone(timing.timezone)
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    # Without a start, a recurring schedule runs first one interval after it is accepted.
    anchor = start if start is not None else utc_ms(accepted_at)
    anchor_wall = wall_in(timing.start if timing.start is not None else anchor, zone)
    inner: Recurrence
    if timing.at is not None:
        inner = OneTime(instant_in(timing.at, zone))
        return Bounded(inner, None, end)
    if timing.interval is not None:
        every = timing.interval
        if every.unit.is_exact:
            step = timedelta(seconds=every.number * _EXACT_SECONDS[every.unit])
            inner = ExactInterval(anchor if start is not None else anchor + step, step)
        else:
            inner = CalendarInterval(anchor_wall, zone, every)
            if start is None:
                inner = CalendarInterval(inner.wall(1), zone, every)
    elif timing.cron is not None:
        inner = cron_recurrence(timing.cron, zone, anchor, starts_at_anchor=start is not None)
    elif timing.rrule is not None:
        inner = RRuleRecurrence(timing.rrule, anchor_wall, zone)
    else:
        raise ValueError("a timing needs one of at, interval, cron, rrule")
    return Bounded(inner, start, end)


def cron_recurrence(
    expression: str, zone: tzinfo, anchor: datetime, starts_at_anchor: bool = True
) -> Recurrence:
    """Five-field cron, ``@hourly``-style macros, ``@every <duration>`` and ``@at <unix time>``.

    ``@every`` counts from ``anchor``: its first run is the anchor itself when
    ``starts_at_anchor`` (an explicit start), else one duration later.
    """
    text = " ".join(expression.split())
    lowered = text.lower()
    if lowered.startswith("@every "):
        step = parse_duration(text[len("@every ") :])
        return ExactInterval(anchor if starts_at_anchor else anchor + step, step)
    if lowered.startswith("@at "):
        seconds = text[len("@at ") :]
        if not seconds.isdigit():
            raise ValueError(f"@at needs a Unix time in seconds, got {seconds!r}")
        return OneTime(from_epoch_ms(int(seconds) * 1000))
    text = CRON_MACROS.get(lowered, text)
    if len(text.split()) != 5:
        raise ValueError("a cron line has five fields: minute hour day-of-month month day-of-week")
    try:
        return CronRecurrence(text.upper(), zone)
    except CronSimError as exc:
        raise ValueError(f"malformed cron line {expression!r}: {exc}") from exc


def first_occurrence(timing: Timing, accepted_at: datetime) -> datetime | None:
    """The first occurrence of a schedule accepted at ``accepted_at``.

    Earlier occurrences are not backfilled, except that a one-time schedule whose time has
    already passed fires once, right away (its time is returned; the poller sees it overdue).
    """
    recurrence = build_recurrence(timing, accepted_at)
    if isinstance(recurrence, Bounded) and isinstance(recurrence.inner, OneTime):
        at = recurrence.inner.at
        return at if recurrence.end is None or at <= recurrence.end else None
    return recurrence.first_at_or_after(accepted_at)


__all__ = [
    "UTC",
    "Bounded",
    "CalendarInterval",
    "CronRecurrence",
    "ExactInterval",
    "OneTime",
    "RRuleRecurrence",
    "Recurrence",
    "build_recurrence",
    "first_occurrence",
    "parse_duration",
]
