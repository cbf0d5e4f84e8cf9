"""When a schedule fires: each notation follows its own standard (docs/time-semantics.md).

- ``at`` and ``@at``: one instant. Accepted after it has passed, it fires once, right away.
- ``interval`` in seconds, minutes or hours, and ``@every``: exact elapsed time from the anchor;
  DST does not move it.
- ``interval`` in days, weeks, months or years: the anchor's local wall time, counted from the
  anchor (occurrence k is anchor + k units: Jan 31 monthly gives Feb 28, Mar 31, Apr 30, no drift).
- ``rrule`` (RFC 5545) and calendar intervals resolve local wall times with ``fold=0``: a time in a
  spring-forward gap is read with the offset before the gap, a repeated time is the earlier instant.
- ``cron``: cronsim matches the fields against local wall times; Debian cron's rules turn them into
  instants: a fixed-time job in a skipped hour runs once right after the jump, a repeated hour
  fires once, wildcard jobs follow real time.

Every engine answers ``next_after(t)``: the first occurrence strictly after the instant ``t``.
Occurrence n+1 is always computed from occurrence n's scheduled time, never from when it ran.
Every search stops at ``SEARCH_HORIZON``, so a rule that never fires is refused, not looped on.

Here: ``build_recurrence`` (a timing to its engine) and ``Bounded`` (start, end, count). The
engines: ``intervals``, ``cron`` (with ``cronfields``), ``rrule``; what they share (the
``Recurrence`` contract, the search bounds, the CPU budget): ``base``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, time, timedelta

from shared.model import Timing
from shared.recurrence.base import (
    _MS,
    CPU_BUDGET_SECONDS,
    SEARCH_HORIZON,
    OneTime,
    Recurrence,
    TooMuchWork,
    _wall,
    cpu_budget,
    instant_in,
    wall_in,
)
from shared.recurrence.cron import (
    CronRecurrence,
    cron_fields,
    cron_recurrence,
    normalize_cron,
    parse_at,
    parse_rate,
)
from shared.recurrence.intervals import (
    _EXACT_SECONDS,
    CalendarInterval,
    ExactInterval,
    parse_duration,
)
from shared.recurrence.rrule import RRuleRecurrence, RulePart, RuleText, parse_rrule
from shared.timeutil import UTC, load_zone, utc_ms

# The CPU a page (the console's schedule) may spend on showing a schedule's next times.
PAGE_BUDGET_SECONDS = 0.05


class Bounded(Recurrence):
    """Another recurrence limited to ``[start, end]`` and to ``max_occurrences`` occurrences."""

    def __init__(
        self,
        inner: Recurrence,
        start: datetime | None = None,
        end: datetime | None = None,
        max_occurrences: int | None = None,
    ) -> None:
        self.inner = inner
        self.start = start
        self.end = end
        self.max_occurrences = max_occurrences

    def _within(self, found: datetime | None) -> datetime | None:
        if found is None:
            return None
        if (self.start is not None and found < self.start) or (
            self.end is not None and found > self.end
        ):
            return None
        return found

    def next_after(self, moment: datetime) -> datetime | None:
        if self.start is not None and moment < self.start:
            moment = self.start - _MS
        return self._within(self.inner.next_after(moment))

    def first_fire(self, accepted_at: datetime) -> datetime | None:
        if self.start is not None:
            accepted_at = max(accepted_at, self.start)
        return self._within(self.inner.first_fire(accepted_at))

    def upcoming(self, accepted_at: datetime, count: int) -> Iterator[datetime]:
        """As ``Recurrence.upcoming``, and no more than ``max_occurrences``: the schedule
        fires that many times from its acceptance."""
        if self.max_occurrences is not None:
            count = min(count, self.max_occurrences)
        return super().upcoming(accepted_at, count)


def build_recurrence(
    timing: Timing,
    accepted_at: datetime,
    schedule_id: str | None = None,
    *,
    cron: Recurrence | None = None,
    rule: RuleText | None = None,
) -> Bounded:
    """The recurrence of a timing. ``accepted_at`` anchors forms that have no explicit start:
    an interval or ``@every`` then fires first one interval after it, and an RRULE's DTSTART is
    00:00 local on the day the schedule is accepted. A cron line's ``H`` spreads by
    ``schedule_id``.

    ``cron`` and ``rule`` are the timing's cron line or rule already read (``cron_recurrence``
    at the anchor and with the ``schedule_id`` given here, ``parse_rrule``): not read again."""
    zone = load_zone(timing.timezone)
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    accepted_at = utc_ms(accepted_at)
    inner: Recurrence
    if timing.at is not None:
        inner = OneTime(instant_in(timing.at, zone))
    elif timing.interval is not None:
        every = timing.interval
        if every.unit.is_exact:
            step = timedelta(seconds=every.number * _EXACT_SECONDS[every.unit])
            inner = ExactInterval(start if start is not None else accepted_at + step, step)
        elif timing.start is not None:
            inner = CalendarInterval(wall_in(timing.start, zone), zone, every)
        else:
            accepted = CalendarInterval(_wall(accepted_at, zone), zone, every)
            inner = CalendarInterval(accepted.wall(1), zone, every)
    elif timing.cron is not None:
        anchor = start if start is not None else accepted_at
        inner = cron or cron_recurrence(
            timing.cron, zone, anchor, starts_at_anchor=start is not None, schedule_id=schedule_id
        )
    elif timing.rrule is not None:
        if timing.start is not None:
            dtstart = wall_in(timing.start, zone)
        else:
            dtstart = datetime.combine(_wall(accepted_at, zone).date(), time())
        inner = RRuleRecurrence(rule or timing.rrule, dtstart, zone)
    else:
        raise ValueError("a timing needs one of at, interval, cron, rrule")
    return Bounded(inner, start, end, timing.max_occurrences)


def first_occurrence(
    timing: Timing, accepted_at: datetime, schedule_id: str | None = None
) -> datetime | None:
    """The first occurrence of a schedule accepted at ``accepted_at``.

    Earlier occurrences are not backfilled, except that a one-time schedule whose time has
    already passed fires once, right away (its time is returned; the poller sees it overdue).
    """
    with cpu_budget():
        return build_recurrence(timing, accepted_at, schedule_id).first_fire(accepted_at)


def upcoming(
    timing: Timing, accepted_at: datetime, count: int, schedule_id: str | None = None
) -> list[datetime]:
    """The first ``count`` occurrences of a schedule accepted at ``accepted_at``."""
    with cpu_budget():
        recurrence = build_recurrence(timing, accepted_at, schedule_id)
        return list(recurrence.upcoming(accepted_at, count))


def upcoming_for_a_page(
    timing: Timing,
    accepted_at: datetime,
    moment: datetime,
    count: int,
    schedule_id: str | None = None,
) -> list[datetime]:
    """The first ``count`` occurrences from ``moment`` of a schedule accepted at
    ``accepted_at``, for a page that shows what it can: those found within
    ``PAGE_BUDGET_SECONDS`` of CPU (none for a timing that cannot be read)."""
    found: list[datetime] = []
    try:
        with cpu_budget(PAGE_BUDGET_SECONDS):
            recurrence = build_recurrence(timing, accepted_at, schedule_id)
            for occurrence in recurrence.upcoming(moment, count):
                found.append(occurrence)
    except (ValueError, TypeError, OverflowError, IndexError):
        pass  # TooMuchWork is a ValueError
    return found


def previous(
    timing: Timing, moment: datetime, count: int, schedule_id: str | None = None
) -> list[datetime]:
    """The last ``count`` occurrences before ``moment``, oldest first, of a schedule taken as
    accepted ``SEARCH_HORIZON`` earlier (forms without a start count from acceptance)."""
    with cpu_budget():
        recurrence = build_recurrence(timing, moment - SEARCH_HORIZON, schedule_id)
        return recurrence.before(moment, count)


__all__ = [
    "CPU_BUDGET_SECONDS",
    "SEARCH_HORIZON",
    "UTC",
    "Bounded",
    "CalendarInterval",
    "CronRecurrence",
    "ExactInterval",
    "OneTime",
    "RRuleRecurrence",
    "Recurrence",
    "RulePart",
    "RuleText",
    "TooMuchWork",
    "build_recurrence",
    "cpu_budget",
    "cron_fields",
    "cron_recurrence",
    "first_occurrence",
    "instant_in",
    "normalize_cron",
    "parse_at",
    "parse_duration",
    "parse_rate",
    "parse_rrule",
    "previous",
    "upcoming",
    "upcoming_for_a_page",
    "wall_in",
]
