"""Checks of a timing that need the recurrence engine: can it be read, does it fire, and not too
often?

Structural checks (types, ranges, formats) belong to the API's schemas; these are the domain's.
Errors name the field by its canonical name (``schedule.cron``, ``schedule.start`` …); the API
names it as the client wrote it (``schedule.start_date``).
The checks build the timing's recurrence, once, and give it back: the caller computes the
schedule's times from it rather than building it again. Every search is bounded by
``SEARCH_HORIZON``: a rule that never fires is refused, not looped on; and all of them together
by the CPU budget (``cpu_budget``): a rule too costly to compute is refused within a fraction of
a second.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime, timedelta

from shared.calendars import BusinessCalendar
from shared.errors import InvalidInput
from shared.notations import Anchors, build_recurrence, notation_of
from shared.recurrence import (
    SEARCH_HORIZON,
    Bounded,
    OneTime,
    Recurrence,
    TooMuchWork,
    cpu_budget,
    instant_in,
)
from shared.timeutil import iso_z, load_zone, utc_ms
from shared.timing import Timing

# How many upcoming occurrences are compared against the minimum interval.
INTERVAL_SAMPLE = 50


def check_timing(
    timing: Timing,
    now: datetime,
    min_interval: timedelta,
    prefix: str = "schedule",
    schedule_id: str | None = None,
    calendar: BusinessCalendar | None = None,
) -> Bounded:
    """The recurrence of the timing accepted at ``now`` (``build_recurrence``) on the business
    days of ``calendar`` if given, checked: raise ``InvalidInput`` naming the field if it can
    never be scheduled: unreadable, never firing (``calendar`` when only its days off stop
    it), firing more often than ``min_interval``, or too costly to compute. A cron line's
    ``H`` spreads by ``schedule_id``."""
    try:
        with cpu_budget():
            return _check_timing(timing, now, min_interval, prefix, schedule_id, calendar)
    except TooMuchWork as exc:
        raise InvalidInput({f"{prefix}.{timing.kind}": str(exc)}) from None


def _check_timing(
    timing: Timing,
    now: datetime,
    min_interval: timedelta,
    prefix: str,
    schedule_id: str | None,
    calendar: BusinessCalendar | None,
) -> Bounded:
    def field(name: str) -> str:
        return f"{prefix}.{name}"

    try:
        zone = load_zone(timing.timezone)
    except ValueError as exc:
        raise InvalidInput({field("timezone"): str(exc)}) from None
    # Each unreadable part is named, all in one answer.
    unreadable: dict[str, str] = {}
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    if start is not None and end is not None and end < start:
        unreadable[field("end")] = f"end ({iso_z(end)}) is before start ({iso_z(start)})"
    notation = notation_of(timing)
    inner: Recurrence | None = None
    try:
        # Read once, as build_recurrence reads it, and reused.
        inner = notation.recurrence(timing, Anchors(zone, start, utc_ms(now), schedule_id))
    except TooMuchWork:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        unreadable[field(timing.kind)] = notation.unreadable(exc)
    if unreadable:
        raise InvalidInput(unreadable)

    try:
        recurrence = build_recurrence(timing, now, schedule_id, inner=inner, calendar=calendar)
        upcoming = list(recurrence.upcoming(now, INTERVAL_SAMPLE + 1))
    except TooMuchWork:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise InvalidInput({field(timing.kind): f"cannot compute its times: {exc}"}) from None
    if not upcoming and calendar is not None:
        without = build_recurrence(timing, now, schedule_id, inner=inner)
        if without.first_fire(now) is not None:
            raise InvalidInput(
                {
                    "calendar": "the schedule never fires on a business day: each of its "
                    f"times falls on a day off and shift is {calendar.shift.value}"
                }
            )
        recurrence = without
    if not upcoming:
        raise InvalidInput(_why_it_never_fires(timing, recurrence, now, field))
    for earlier, later in itertools.pairwise(upcoming):
        if later - earlier < min_interval:
            raise InvalidInput(
                {
                    field(timing.kind): (
                        f"fires every {(later - earlier).total_seconds():g}s around "
                        f"{iso_z(earlier)}; the minimum interval is "
                        f"{min_interval.total_seconds():g}s"
                    )
                }
            )
    return recurrence


def _why_it_never_fires(
    timing: Timing, recurrence: Bounded, now: datetime, field: Callable[[str], str]
) -> dict[str, str]:
    """The field to blame, and why, for a timing with no occurrence after ``now``."""
    kind = timing.kind
    if isinstance(recurrence.inner, OneTime):
        at = recurrence.inner.at
        if recurrence.start is not None and at < recurrence.start:
            return {field("start"): f"start is after the one time the schedule fires ({iso_z(at)})"}
        return {field("end"): f"end is before the one time the schedule fires ({iso_z(at)})"}
    if recurrence.end is not None and recurrence.end <= now:
        return {field("end"): f"end ({iso_z(recurrence.end)}) has already passed"}
    # Did it fire before now (a COUNT or UNTIL reached, a start long ago)?
    since = recurrence.start if recurrence.start is not None else now - SEARCH_HORIZON
    earlier = recurrence.inner.first_at_or_after(since)
    if earlier is not None and earlier < now:
        hint = notation_of(timing).used_up_hint
        first = iso_z(earlier)
        years = SEARCH_HORIZON.days // 366
        return {
            field(kind): (
                f"no occurrence from now on within {years} years: its occurrences are in "
                f"the past (the first was {first}){hint}"
            )
        }
    if recurrence.end is not None:
        return {field(kind): f"no occurrence between its start and end ({iso_z(recurrence.end)})"}
    years = SEARCH_HORIZON.days // 366
    return {field(kind): f"this rule never fires (no occurrence within {years} years)"}
