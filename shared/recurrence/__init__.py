"""The engines: when a schedule fires, each notation by its own standard (docs/time-semantics.md).

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

Here: ``Bounded`` (start, end, count). The engines: ``intervals``, ``cron`` (with
``cronfields``), ``rrule`` (with ``dateutil_rules``); what they share (the ``Recurrence``
contract, the search bounds, the CPU budget): ``base``. Which engine a timing gets is its
notation's choice (``shared.notations``, ``build_recurrence``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from shared.recurrence.base import (
    _MS,
    CPU_BUDGET_SECONDS,
    SEARCH_HORIZON,
    OneTime,
    Recurrence,
    TooMuchWork,
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
from shared.recurrence.intervals import CalendarInterval, ExactInterval, parse_duration
from shared.recurrence.rrule import RRuleRecurrence, RulePart, RuleText, parse_rrule
from shared.timeutil import UTC


@dataclass(eq=False)
class Bounded(Recurrence):
    """Another recurrence limited to ``[start, end]`` and to ``max_occurrences`` occurrences."""

    inner: Recurrence
    start: datetime | None = None
    end: datetime | None = None
    max_occurrences: int | None = None

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
    "cpu_budget",
    "cron_fields",
    "cron_recurrence",
    "instant_in",
    "normalize_cron",
    "parse_at",
    "parse_duration",
    "parse_rate",
    "parse_rrule",
    "wall_in",
]
