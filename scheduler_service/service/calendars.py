"""A tenant's business calendars: listed, read, created, replaced and deleted
(``shared.calendars``). A tenant reaches only its own: another tenant's is ``NotFound``.

A replace takes effect on the next time computed for every schedule naming the calendar:
the poller reads the calendars at every poll, and the replace brings the stored next time of
those schedules back to now (one write, ``CalendarStore.recheck_schedules``), so that the next
poll computes it again with the new dates. A delete is refused while a live schedule names
the calendar."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from shared.calendar_files import dates_from_ics
from shared.calendars import MAX_CALENDARS, MAX_ICS_CHARS, calendar_dates
from shared.errors import InvalidInput, NotFound, SchedulerError
from shared.ports import Calendar, Clock, Store

# A replace that loses its compare-and-set to another reads the calendar again, this often.
_ATTEMPTS = 5
# A refused delete names this many of the schedules naming the calendar, and counts this many.
LISTED = 10
MAX_COUNTED = 1000


class NoCalendar(NotFound):
    """No calendar of that name: unknown, or another tenant's (the API answers 404)."""


class CalendarExists(SchedulerError):
    """A create of a name the tenant has a calendar of already (the API answers 409)."""


class CalendarConflict(SchedulerError):
    """A replace that kept losing to concurrent ones, or a delete of a calendar schedules name
    (the API answers 409)."""


@dataclass(frozen=True)
class CalendarGiven:
    """What a create or replace gives: the dates, or an iCalendar file's text (one of the
    two), and a description."""

    dates: Sequence[date] | None
    ics: str | None
    description: str = ""


class Calendars:
    def __init__(self, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def listed(self, tenant: str) -> list[Calendar]:
        return self.store.list_calendars(tenant)

    def get(self, tenant: str, name: str) -> Calendar:
        found = self.store.get_calendars(tenant, [name]).get(name)
        if found is None:
            raise NoCalendar(name)
        return found

    def create(self, tenant: str, name: str, given: CalendarGiven) -> Calendar:
        days = self._dates(given)
        if len(self.store.list_calendars(tenant)) >= MAX_CALENDARS:
            raise InvalidInput({"name": f"a tenant keeps at most {MAX_CALENDARS} calendars"})
        calendar = Calendar(tenant, name, days, 1, self.clock.now(), given.description)
        if not self.store.create_calendar(calendar):
            raise CalendarExists(f"a calendar {name!r} exists: replace it with PUT")
        return calendar

    def replace(self, tenant: str, name: str, given: CalendarGiven) -> Calendar:
        days = self._dates(given)
        for _ in range(_ATTEMPTS):
            stored = self.get(tenant, name)
            revision = stored.revision + 1
            calendar = Calendar(tenant, name, days, revision, self.clock.now(), given.description)
            if self.store.replace_calendar(calendar):
                self.store.recheck_schedules(tenant, name, calendar.updated_at)
                return calendar
        raise CalendarConflict(f"calendar {name!r} is being changed by others: try again")

    def delete(self, tenant: str, name: str) -> None:
        naming = self.store.schedules_naming(tenant, name, MAX_COUNTED + 1)
        if naming:
            count = f"{MAX_COUNTED} or more" if len(naming) > MAX_COUNTED else str(len(naming))
            listed = ", ".join(naming[:LISTED])
            more = ", …" if len(naming) > LISTED else ""
            raise CalendarConflict(
                f"{count} schedule(s) name calendar {name!r} in calendar.exclude ({listed}{more}):"
                " remove it from them first"
            )
        if not self.store.delete_calendar(tenant, name):
            raise NoCalendar(name)

    def _dates(self, given: CalendarGiven) -> tuple[date, ...]:
        dates, ics = given.dates, given.ics
        if (dates is None) == (ics is None):
            message = "give the calendar's dates, or an iCalendar file in ics: one of the two"
            raise InvalidInput({"dates": message, "ics": message})
        if ics is None:
            return calendar_dates(dates or ())
        if len(ics) > MAX_ICS_CHARS:
            raise InvalidInput({"ics": f"{len(ics)} characters; at most {MAX_ICS_CHARS}"})
        return dates_from_ics(ics, self.clock.now().date())
