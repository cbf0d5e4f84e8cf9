"""``interval`` and ``@every``: exact elapsed time, or calendar units at the anchor's wall
time (docs/time-semantics.md)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

import pendulum

from shared.recurrence.base import _MS, SEARCH_HORIZON, Recurrence, TooMuchWork, _spend, _wall
from shared.timeutil import resolve_local, utc_ms
from shared.timing import Every, Unit

_EXACT_SECONDS = {Unit.SECOND: 1, Unit.MINUTE: 60, Unit.HOUR: 3600}
_CALENDAR_UNITS = {Unit.DAY: "days", Unit.WEEK: "weeks", Unit.MONTH: "months", Unit.YEAR: "years"}
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


class ExactInterval(Recurrence):
    """Every ``step`` of elapsed time from ``anchor``."""

    def __init__(self, anchor: datetime, step: timedelta) -> None:
        if step <= timedelta(0):
            raise ValueError("an interval must be positive")
        self.anchor = utc_ms(anchor)
        self.step = step

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        steps = (moment - self.anchor) // self.step + 1
        try:
            return utc_ms(self.anchor + steps * self.step)
        except OverflowError:  # past year 9999
            return None


class CalendarInterval(Recurrence):
    """Every ``number`` days/weeks/months/years of local wall time, counted from ``anchor_wall``."""

    def __init__(self, anchor_wall: datetime, zone: tzinfo, every: Every) -> None:
        if every.unit.is_exact:
            raise ValueError(f"{every.unit.value} is elapsed time, not a calendar unit")
        self.anchor_wall = pendulum.instance(anchor_wall).naive()
        self.zone = zone
        self.every = every
        self.anchor = resolve_local(anchor_wall, zone)
        # The average length of one step in the Gregorian calendar, to estimate the step count
        # of an instant; the walk in ``next_after`` corrects the estimate either way.
        self._mean_step = {
            Unit.DAY: timedelta(days=1),
            Unit.WEEK: timedelta(days=7),
            Unit.MONTH: timedelta(days=146097 / 4800),
            Unit.YEAR: timedelta(days=146097 / 400),
        }[every.unit] * every.number

    def wall(self, index: int) -> datetime:
        """The local wall time of occurrence ``index``: the anchor plus ``index`` steps."""
        amount = index * self.every.number
        wall = self.anchor_wall.add(**{_CALENDAR_UNITS[self.every.unit]: amount})
        return datetime(*wall.timetuple()[:6], wall.microsecond)

    def occurrence(self, index: int) -> datetime:
        return resolve_local(self.wall(index), self.zone)

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        # An estimate of the index, then walk to the first occurrence after moment.
        index = max(0, round((moment - self.anchor) / self._mean_step))
        try:
            while index > 0 and self.occurrence(index - 1) > moment:
                _spend()
                index -= 1
            while (found := self.occurrence(index)) <= moment:
                _spend()
                index += 1
        except TooMuchWork:
            raise  # a ValueError too, but not the end of the calendar
        except (OverflowError, ValueError):  # past year 9999
            return None
        return found


def interval_recurrence(
    every: Every,
    zone: tzinfo,
    start: datetime | None,
    start_wall: datetime | None,
    accepted_at: datetime,
) -> Recurrence:
    """Every ``every`` from ``start`` (an instant; ``start_wall``, its local wall time), else
    from one step after ``accepted_at``: elapsed time for seconds, minutes and hours, calendar
    steps of local wall time for longer units."""
    if every.unit.is_exact:
        step = timedelta(seconds=every.number * _EXACT_SECONDS[every.unit])
        return ExactInterval(start if start is not None else accepted_at + step, step)
    if start_wall is not None:
        return CalendarInterval(start_wall, zone, every)
    accepted = CalendarInterval(_wall(accepted_at, zone), zone, every)
    return CalendarInterval(accepted.wall(1), zone, every)


def parse_duration(text: str) -> timedelta:
    """``1h30m``, ``90s``, ``2d``, ``500ms`` → a positive duration (seed 004's ``@every``)."""
    compact = text.replace(" ", "").lower()
    parts = _DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"not a duration: {text!r}; use e.g. 90s, 15m, 1h30m, 2d")
    milliseconds = sum(int(number) * _DURATION_MS[unit] for number, unit in parts)
    if milliseconds <= 0:
        raise ValueError("a duration must be positive")
    if milliseconds > SEARCH_HORIZON // _MS:
        raise ValueError(f"a duration of at most {SEARCH_HORIZON.days} days")
    return timedelta(milliseconds=milliseconds)
