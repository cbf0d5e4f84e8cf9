"""Checks of a timing that need the recurrence engine: does it fire, and not too often?

Structural checks (types, ranges, formats) belong to the API's schemas; these are the domain's.
Errors name the field as the client wrote it (``schedule.cron``, ``schedule.start_date`` …).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from datetime import datetime, timedelta

from dateutil.rrule import rrulestr

from shared.errors import InvalidInput
from shared.model import Timing
from shared.recurrence import Bounded, OneTime, build_recurrence, cron_recurrence, instant_in
from shared.timeutil import iso_z, load_zone

# How many upcoming occurrences are compared against the minimum interval.
INTERVAL_SAMPLE = 50

CANONICAL_FIELDS = {
    "timezone": "timezone",
    "at": "at",
    "interval": "interval",
    "cron": "cron",
    "rrule": "rrule",
    "start": "start",
    "end": "end",
    "max_occurrences": "max_occurrences",
}


def check_timing(
    timing: Timing,
    now: datetime,
    min_interval: timedelta,
    prefix: str = "schedule",
    names: Mapping[str, str] = CANONICAL_FIELDS,
) -> None:
    """Raise ``InvalidInput`` naming the field if the timing can never be scheduled."""

    def field(name: str) -> str:
        return f"{prefix}.{names.get(name, name)}"

    try:
        zone = load_zone(timing.timezone)
    except ValueError as exc:
        raise InvalidInput({field("timezone"): str(exc)}) from None
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    if start is not None and end is not None and end < start:
        raise InvalidInput({field("end"): f"end ({iso_z(end)}) is before start ({iso_z(start)})"})
    if timing.cron is not None:
        try:
            cron_recurrence(timing.cron, zone, now)
        except ValueError as exc:
            raise InvalidInput({field("cron"): str(exc)}) from None
    if timing.rrule is not None:
        try:
            rrulestr(timing.rrule, dtstart=datetime(2000, 1, 1), forceset=True)
        except (ValueError, TypeError) as exc:
            raise InvalidInput({field("rrule"): f"not a valid RFC 5545 rule: {exc}"}) from None

    recurrence = build_recurrence(timing, now)
    if isinstance(recurrence, Bounded) and isinstance(recurrence.inner, OneTime):
        if end is not None and recurrence.inner.at > end:
            raise InvalidInput({field("end"): "end is before the one time the schedule fires"})
        return
    upcoming = list(recurrence.upcoming(now, INTERVAL_SAMPLE + 1))
    if not upcoming:
        if end is not None and end <= now:
            raise InvalidInput({field("end"): f"end ({iso_z(end)}) has already passed"})
        raise InvalidInput({field(timing.kind): "this rule never fires"})
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
