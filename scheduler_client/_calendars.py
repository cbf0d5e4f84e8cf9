"""The calls of ``SchedulerClient`` on business calendars (admin keys)."""

from __future__ import annotations

import builtins
from typing import Any, Unpack, cast
from urllib.parse import quote

from scheduler_client._transport import Transport, only_known
from scheduler_client.types import Calendar, CalendarDays, CalendarList, CalendarSummary


class Calendars(Transport):
    def calendars(self) -> builtins.list[CalendarSummary]:
        """The tenant's calendars, by name, without their dates."""
        listing = cast(CalendarList, self._call("GET", "/calendars", idempotent=True))
        return listing["items"]

    def calendar(self, name: str) -> Calendar:
        """One calendar with its dates."""
        return cast(Calendar, self._call("GET", _calendar_path(name), idempotent=True))

    def create_calendar(self, name: str, **days: Unpack[CalendarDays]) -> Calendar:
        """Make a calendar from its ``dates`` (``YYYY-MM-DD``) or from an iCalendar file's
        text (``ics``): one of the two. A name the tenant has already is a ``Conflict``."""
        only_known("create_calendar", days, CalendarDays)
        body = _calendar_body(days) | {"name": name}
        return cast(Calendar, self._call("POST", "/calendars", body=body, idempotent=False))

    def replace_calendar(self, name: str, **days: Unpack[CalendarDays]) -> Calendar:
        """Replace a calendar's dates; every schedule naming it follows them from its next
        time on."""
        only_known("replace_calendar", days, CalendarDays)
        body = _calendar_body(days)
        return cast(Calendar, self._call("PUT", _calendar_path(name), body=body, idempotent=True))

    def delete_calendar(self, name: str) -> None:
        """Delete a calendar; a ``Conflict`` naming them while schedules name it."""
        self._call("DELETE", _calendar_path(name), idempotent=False)


def _calendar_path(name: str) -> str:
    return f"/calendars/{quote(name, safe='')}"


def _calendar_body(days: CalendarDays) -> dict[str, Any]:
    body: dict[str, Any] = {"description": days.get("description", "")}
    dates, ics = days.get("dates"), days.get("ics")
    if dates is not None:
        body["dates"] = list(dates)
    if ics is not None:
        body["ics"] = ics
    return body
