"""The notations a schedule can be written in, registered once, and what a timing's times are.

``NOTATIONS`` is the registry: one line per notation, the name of its module here, which
defines ``NOTATION`` (``shared.notations.base``). Every list of notations reads it: the API's
``schedule`` members and answers, the PATCH forms, the console's form, the words, the engines.
Its order is theirs (the API's members and messages, the console's choices).

Here too, for a ``Timing`` whatever its notation: ``build_recurrence`` (its notation's engine,
on business days only with a ``BusinessCalendar``, bounded by its start, end and
max_occurrences), ``first_occurrence`` and ``upcoming_for_a_page``, each within the CPU
budget; and for a stored ``Schedule``, ``schedule_recurrence``: the times it fires, which every
place that computes them (the poller's plan and lateness checks, backfill, skips, pauses and
resumes, the console) builds from it, its calendar included.
"""

from __future__ import annotations

from datetime import datetime
from importlib import import_module
from typing import TYPE_CHECKING

from shared.calendars import BusinessCalendar
from shared.notations.base import (
    Anchors,
    InvalidMembers,
    Member,
    MemberKind,
    Notation,
    TimingNotation,
)
from shared.recurrence import Bounded, Recurrence, cpu_budget, instant_in
from shared.recurrence.business import BusinessDays
from shared.timeutil import load_zone, utc_ms
from shared.timing import Timing

if TYPE_CHECKING:  # the model's records hold timings: it is read here, never imported at run
    from shared.model import Schedule

NOTATIONS: tuple[Notation, ...] = tuple(
    import_module(f"shared.notations.{module}").NOTATION
    for module in (
        "at",
        "interval",
        "cron",
        "rrule",
        "blueprint",
    )
)
# The notations a stored timing is in, by name (its ``kind``).
TIMING_NOTATIONS = {
    notation.name: notation for notation in NOTATIONS if isinstance(notation, TimingNotation)
}
# The CPU a page (the console's schedule) may spend on showing a schedule's next times.
PAGE_BUDGET_SECONDS = 0.05


def notation_of(timing: Timing) -> TimingNotation:
    """The notation ``timing`` is in."""
    return timing_notation(timing.kind)


def timing_notation(kind: str) -> TimingNotation:
    try:
        return TIMING_NOTATIONS[kind]
    except KeyError:
        raise ValueError(
            f"no notation {kind!r}; a timing is in one of {', '.join(TIMING_NOTATIONS)}"
        ) from None


def build_recurrence(
    timing: Timing,
    accepted_at: datetime,
    schedule_id: str | None = None,
    *,
    inner: Recurrence | None = None,
    calendar: BusinessCalendar | None = None,
) -> Bounded:
    """The recurrence of a timing: its notation's engine, on the business days of ``calendar``
    if given (``shared.recurrence.business``), bounded by its start, end and max_occurrences
    (which bound the times it fires, shifted ones included). ``accepted_at`` anchors forms that
    have no explicit start (an interval or ``@every`` then fires first one interval after it;
    an RRULE's DTSTART is 00:00 local on that day). A cron line's ``H`` spreads by
    ``schedule_id``.

    ``inner`` is the engine already built (``shared.validation`` reads the value once)."""
    zone = load_zone(timing.timezone)
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    if inner is None:
        anchors = Anchors(zone, start, utc_ms(accepted_at), schedule_id)
        inner = notation_of(timing).recurrence(timing, anchors)
    if calendar is not None:
        inner = BusinessDays(inner, zone, calendar.holidays, calendar.shift)
    return Bounded(inner, start, end, timing.max_occurrences)


def schedule_recurrence(schedule: Schedule, calendar: BusinessCalendar | None) -> Bounded:
    """The times a stored schedule fires: its live timing, anchored at its acceptance and its
    id (``build_recurrence``), on the business days of ``calendar``, the calendars its
    ``calendar`` rule names as they are now (``shared.calendar_reads.business_calendars``).

    A schedule whose rule names calendars is computed only with them: ``ValueError`` where
    ``calendar`` is missing, so that no place computes times the schedule never fires."""
    definition = schedule.live_definition
    if definition.calendar is not None and calendar is None:
        raise ValueError(
            f"schedule {schedule.schedule_id} names calendars: its times need them read"
        )
    return build_recurrence(
        definition.timing, schedule.accepted_at, schedule.schedule_id, calendar=calendar
    )


def first_occurrence(
    timing: Timing,
    accepted_at: datetime,
    schedule_id: str | None = None,
    calendar: BusinessCalendar | None = None,
) -> datetime | None:
    """The first occurrence of a schedule accepted at ``accepted_at``.

    Earlier occurrences are not backfilled, except that a one-time schedule whose time has
    already passed fires once, right away (its time is returned; the poller sees it overdue).
    """
    with cpu_budget():
        recurrence = build_recurrence(timing, accepted_at, schedule_id, calendar=calendar)
        return recurrence.first_fire(accepted_at)


def upcoming_for_a_page(
    schedule: Schedule, calendar: BusinessCalendar | None, moment: datetime, count: int
) -> list[datetime]:
    """The first ``count`` times from ``moment`` of a stored schedule on the business days of
    ``calendar`` (``schedule_recurrence``), for a page that shows what it can: those found
    within ``PAGE_BUDGET_SECONDS`` of CPU (none for a timing that cannot be read)."""
    found: list[datetime] = []
    try:
        with cpu_budget(PAGE_BUDGET_SECONDS):
            for occurrence in schedule_recurrence(schedule, calendar).upcoming(moment, count):
                found.append(occurrence)
    except (ValueError, TypeError, OverflowError, IndexError):
        pass  # TooMuchWork is a ValueError
    return found


__all__ = [
    "NOTATIONS",
    "PAGE_BUDGET_SECONDS",
    "TIMING_NOTATIONS",
    "Anchors",
    "InvalidMembers",
    "Member",
    "MemberKind",
    "Notation",
    "TimingNotation",
    "build_recurrence",
    "first_occurrence",
    "notation_of",
    "schedule_recurrence",
    "timing_notation",
    "upcoming_for_a_page",
]
