"""A recurrence on business days only: another engine's occurrences, those on a day off dropped
or moved to the nearest business day (``shared.calendars``, docs/time-semantics.md).

A *business day* is a local date, in the schedule's zone, that is neither a Saturday nor a
Sunday nor one of ``holidays``. An occurrence on a business day stays as it is. One on another
day is, by ``shift``:

- ``skip``: dropped;
- ``next_business_day`` / ``previous_business_day``: moved to the first business day after
  (before) its date, at the same local wall time, read as the engine reads a wall time
  (``Recurrence.at_wall``: RFC 5545's ``fold=0`` for every notation but cron, whose
  fixed-time lines fire a skipped time right after the jump and whose wildcard lines skip it).
  Where a moved occurrence lands on a time the schedule fires at anyway (or another moved one
  does), it fires once.

Every search is by day: the occurrences that land on a business day are those of the days that
move to it (the day itself and the days off next to it); the first after a moment is the
earliest of each such day's first, found with the engine's own search from that moment's wall
time on it (a few steps, whatever the rate: an ``@every 1s`` costs no more than a daily one).
Past a day without one, the search jumps to the day the engine's next occurrence lands on.
Each step is charged to the CPU budget (``cpu_budget``), and a search goes no further than
``SEARCH_HORIZON``: a calendar that leaves no business day, or an engine that never fires on
one, ends in ``None`` or ``TooMuchWork``, never in a long loop.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import date, datetime, time, timedelta, tzinfo
from enum import StrEnum

from shared.recurrence.base import (
    _MS,
    SEARCH_HORIZON,
    Recurrence,
    _jump_near,
    _spend,
    instant_in,
)

_DAY = timedelta(days=1)
_SATURDAY = 5


class Shift(StrEnum):
    SKIP = "skip"
    NEXT_BUSINESS_DAY = "next_business_day"
    PREVIOUS_BUSINESS_DAY = "previous_business_day"


class BusinessDays(Recurrence):
    def __init__(
        self, inner: Recurrence, zone: tzinfo, holidays: Collection[date], shift: Shift
    ) -> None:
        self.inner = inner
        self.zone = zone
        self.holidays = frozenset(holidays)
        self.shift = shift

    def is_business_day(self, day: date) -> bool:
        return day.weekday() < _SATURDAY and day not in self.holidays

    def next_after(self, moment: datetime) -> datetime | None:
        horizon = moment + SEARCH_HORIZON
        today = self._day_of(moment)
        day = self._business_from(today, forward=True)
        while day is not None and self._start_of(day) <= horizon:
            found = self._first_landing(day, moment, day == today)
            if found is not None:
                return found
            day = self._after(day)
        return None

    def first_fire(self, accepted_at: datetime) -> datetime | None:
        # A one-time schedule accepted after its time fires once, right away: on a business
        # day; moved as any occurrence is; or not at all when the calendar skips its day.
        first = self.inner.first_fire(accepted_at)
        if first is not None and first < accepted_at:
            day = self._target(self._day_of(first))
            if day is None or day == self._day_of(first):
                return None if day is None else first
            return self._moved(first, day)
        return self.first_at_or_after(accepted_at)

    def _after(self, day: date) -> date | None:
        """The next business day after ``day`` that something may land on: the day after the
        source days of ``day``, or, past a stretch without occurrences, the day the engine's
        next one lands on."""
        last_source = self._sources(day)[-1]
        following = self.inner.first_at_or_after(self._start_of(last_source + _DAY))
        if following is None:
            return None
        target = self._target(self._day_of(following))
        if target is None:  # skipped: the business days after it
            target = self._business_from(self._day_of(following), forward=True)
        if target is None or target <= day:
            return self._business_from(day + _DAY, forward=True)
        return target

    def _first_landing(self, day: date, moment: datetime, same_day: bool) -> datetime | None:
        """The first instant after ``moment`` that lands on business day ``day``, from its
        own occurrences or those moved to it; ``same_day``: ``moment`` is on ``day``."""
        best: datetime | None = None
        for source in self._sources(day):
            found = self._first_from(source, day, moment, same_day)
            if found is not None and (best is None or found < best):
                best = found
        return best

    def _first_from(
        self, source: date, day: date, moment: datetime, same_day: bool
    ) -> datetime | None:
        """The first occurrence of ``source`` that lands on ``day`` after ``moment``. Within a
        day, wall times follow the occurrences (but for a repeated hour), so the search starts
        at ``moment``'s wall time on ``source``, less the size of an offset change near it."""
        if source == day:
            found = self.inner.next_after(max(moment, self._start_of(day) - _MS))
            return found if found is not None and self._day_of(found) == day else None
        start = self._start_of(source)
        if same_day:
            wall = moment.astimezone(self.zone).replace(tzinfo=None).time()
            at = instant_in(datetime.combine(source, wall), self.zone)
            start = max(start, at - _jump_near(self.zone, at))
        occurrence = self.inner.first_at_or_after(start)
        while occurrence is not None and self._day_of(occurrence) == source:
            _spend()
            moved = self._moved(occurrence, day)
            if moved is not None and moved > moment:
                return moved
            occurrence = self.inner.next_after(occurrence)
        return None

    def _sources(self, day: date) -> list[date]:
        """The days whose occurrences land on business day ``day``, in order."""
        if self.shift is Shift.SKIP:
            return [day]
        step = -_DAY if self.shift is Shift.NEXT_BUSINESS_DAY else _DAY
        sources = [day]
        other = day + step
        while not self.is_business_day(other):
            _spend()
            sources.append(other)
            other += step
        return sorted(sources)

    def _target(self, day: date) -> date | None:
        """The business day the occurrences of ``day`` land on (``None``: skipped)."""
        if self.is_business_day(day):
            return day
        if self.shift is Shift.SKIP:
            return None
        return self._business_from(day, forward=self.shift is Shift.NEXT_BUSINESS_DAY)

    def _business_from(self, day: date, *, forward: bool) -> date | None:
        """The first business day from ``day`` on (``forward``) or back; ``None`` past the
        search's horizon or the calendar's end."""
        step = _DAY if forward else -_DAY
        for _ in range(SEARCH_HORIZON.days):
            if self.is_business_day(day):
                return day
            _spend()
            try:
                day += step
            except OverflowError:
                return None
        return None

    def _on(self, day: date) -> list[datetime]:
        """The engine's occurrences whose local date is ``day``."""
        found: list[datetime] = []
        occurrence = self.inner.first_at_or_after(self._start_of(day))
        while occurrence is not None and self._day_of(occurrence) == day:
            _spend()
            found.append(occurrence)
            occurrence = self.inner.next_after(occurrence)
        return found

    def _moved(self, occurrence: datetime, day: date) -> datetime | None:
        wall = occurrence.astimezone(self.zone).replace(tzinfo=None)
        return self.inner.at_wall(datetime.combine(day, wall.time()), self.zone)

    def _day_of(self, moment: datetime) -> date:
        return moment.astimezone(self.zone).date()

    def _start_of(self, day: date) -> datetime:
        """The first instant of local date ``day``."""
        return instant_in(datetime.combine(day, time.min), self.zone)
