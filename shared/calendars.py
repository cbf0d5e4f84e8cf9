"""Business calendars: a tenant's named sets of local dates that are not business days, and
what a schedule's ``calendar`` does with them.

A tenant keeps its calendars by name (``POST /calendars``, ``shared.ports.CalendarStore``); a
schedule names some of them in ``calendar.exclude``. A *business day*, in the schedule's own
time zone, is a day that is neither a Saturday nor a Sunday nor a date of any calendar it
names. The bounds here keep a calendar, a tenant's calendars and a schedule's list cheap to
read on every plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date

from shared.errors import InvalidInput

# A calendar's name: a path segment, as a schedule's id is.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
NAME_RULE = "1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit"
# The most dates one calendar holds (forty years of a country's holidays, or more).
MAX_DATES = 1000
# The most calendars a tenant keeps.
MAX_CALENDARS = 100
# The most calendars one schedule names.
MAX_EXCLUDED = 10
MAX_DESCRIPTION = 500
# The longest iCalendar text a calendar is made from, in characters.
MAX_ICS_CHARS = 200_000


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a calendar; ``None`` if it can."""
    if NAME_PATTERN.fullmatch(name) is None:
        return f"a calendar's name is {NAME_RULE}"
    return None


def calendar_dates(days: Iterable[date], field: str = "dates") -> tuple[date, ...]:
    """``days`` sorted, each once; ``InvalidInput`` naming ``field`` beyond ``MAX_DATES``."""
    dates = tuple(sorted(set(days)))
    if len(dates) > MAX_DATES:
        raise InvalidInput({field: f"{len(dates)} dates; a calendar holds at most {MAX_DATES}"})
    return dates
