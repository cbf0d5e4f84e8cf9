"""A business calendar's dates from an iCalendar file (RFC 5545) of holidays, read with the
``icalendar`` library.

Each ``VEVENT`` is a holiday: an all-day event (``DTSTART;VALUE=DATE``) is its date, or its
dates up to its ``DTEND`` (exclusive) for an event of several days. A recurring event (``RRULE``,
``RDATE``, ``EXDATE``) counts its occurrences from the start of last year to the end of the year
``ICS_YEARS_AHEAD`` years ahead of ``today``; one that recurs more often than daily is refused.
A timed event is refused: a calendar holds whole days. Every refusal is an ``InvalidInput``
naming ``ics``, with what was wrong where.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

import icalendar
from dateutil.rrule import rrulestr

from shared.calendars import MAX_DATES, calendar_dates
from shared.errors import InvalidInput

# How far ahead of today a recurring holiday is counted.
ICS_YEARS_AHEAD = 10
# The recurrences a calendar of whole days can hold.
_DAILY_OR_SLOWER = frozenset({"DAILY", "WEEKLY", "MONTHLY", "YEARLY"})
# The longest event, in days.
_MAX_EVENT_DAYS = 366


def dates_from_ics(text: str, today: date) -> tuple[date, ...]:
    """The dates of the holidays ``text`` holds, sorted, each once."""
    try:
        calendar = icalendar.Calendar.from_ical(text)
    except ValueError as exc:
        raise InvalidInput({"ics": f"not an iCalendar file: {exc}"}) from None
    window = (date(today.year - 1, 1, 1), date(today.year + ICS_YEARS_AHEAD, 12, 31))
    found: set[date] = set()
    for index, event in enumerate(calendar.walk("VEVENT")):
        where = f"event {index + 1}" + (f" ({event['SUMMARY']})" if "SUMMARY" in event else "")
        try:
            found.update(_event_dates(event, window))
        except (ValueError, TypeError, KeyError, icalendar.InvalidCalendar) as exc:
            raise InvalidInput({"ics": f"{where}: {exc}"}) from None
        if len(found) > MAX_DATES:
            break
    return calendar_dates(found, "ics")


def _event_dates(event: Any, window: tuple[date, date]) -> Iterator[date]:
    start = _day(event, "DTSTART")
    end = _day(event, "DTEND") if "DTEND" in event else start + timedelta(days=1)
    length = (end - start).days
    if not 1 <= length <= _MAX_EVENT_DAYS:
        raise ValueError(f"DTEND must be 1 to {_MAX_EVENT_DAYS} days after DTSTART")
    for first in _starts(event, start, window):
        for offset in range(length):
            day = first + timedelta(days=offset)
            if window[0] <= day <= window[1] or "RRULE" not in event:
                yield day


def _day(event: Any, name: str) -> date:
    value = event[name].dt
    if isinstance(value, datetime) or not isinstance(value, date):
        raise ValueError(f"{name} is {value}: a calendar holds whole days (DTSTART;VALUE=DATE)")
    return value


def _starts(event: Any, start: date, window: tuple[date, date]) -> Iterator[date]:
    """The first day of each occurrence of the event."""
    excluded = {item.dt for items in _listed(event, "EXDATE") for item in items.dts}
    if "RRULE" in event:
        rule = event["RRULE"]
        frequency = (rule.get("FREQ") or [""])[0]
        if frequency not in _DAILY_OR_SLOWER:
            raise ValueError(
                f"RRULE FREQ={frequency}: a calendar of whole days recurs DAILY at most"
            )
        recurrence = rrulestr(
            "RRULE:" + rule.to_ical().decode(), dtstart=datetime.combine(start, datetime.min.time())
        )
        low = datetime.combine(window[0] - timedelta(days=_MAX_EVENT_DAYS), datetime.min.time())
        high = datetime.combine(window[1], datetime.min.time())
        # Daily at most: a few thousand periods to walk, whatever the rule.
        for moment in recurrence.xafter(low, inc=True):
            if moment > high:
                break
            if moment.date() not in excluded:
                yield moment.date()
    elif start not in excluded:
        yield start
    for items in _listed(event, "RDATE"):
        for item in items.dts:
            if not isinstance(item.dt, datetime) and isinstance(item.dt, date):
                yield item.dt


def _listed(event: Any, name: str) -> list[Any]:
    value = event.get(name)
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
