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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from shared.errors import InvalidInput
from shared.recurrence.business import Shift

if TYPE_CHECKING:  # the ports import the model, which holds a CalendarRule
    from shared.ports.calendars import Calendar

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


@dataclass(frozen=True)
class CalendarRule:
    """What a schedule says of business days (``calendar``): the tenant's calendars it
    excludes, and what an occurrence on a day off does."""

    exclude: tuple[str, ...]
    shift: Shift = Shift.SKIP

    def to_document(self) -> dict[str, Any]:
        return {"exclude": list(self.exclude), "shift": self.shift.value}

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> CalendarRule:
        return cls(tuple(document["exclude"]), Shift(document.get("shift", Shift.SKIP.value)))


@dataclass(frozen=True)
class BusinessCalendar:
    """A ``CalendarRule`` with its calendars read: the dates that are not business days (beside
    the weekend), and the shift."""

    holidays: frozenset[date]
    shift: Shift

    @classmethod
    def of(cls, rule: CalendarRule, calendars: Iterable[Calendar]) -> BusinessCalendar:
        return cls(frozenset(day for calendar in calendars for day in calendar.dates), rule.shift)
