"""The calls of ``SchedulerClient`` on business calendars (admin keys)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import quote

from scheduler_client._transport import Transport
from scheduler_client.types import Calendar, CalendarList, CalendarSummary


class Calendars(Transport):
    def calendars(self) -> builtins.list[CalendarSummary]:
        """The tenant's calendars, by name, without their dates."""
        listing = cast(CalendarList, self._call("GET", "/calendars", idempotent=True))
        return listing["items"]

    def calendar(self, name: str) -> Calendar:
        """One calendar with its dates."""
        return cast(Calendar, self._call("GET", _calendar_path(name), idempotent=True))

    def create_calendar(
        self,
        name: str,
        *,
        dates: Sequence[str] | None = None,
        ics: str | None = None,
        description: str = "",
    ) -> Calendar:
        """Make a calendar from its ``dates`` (``YYYY-MM-DD``) or from an iCalendar file's
        text (``ics``): one of the two. A name the tenant has already is a ``Conflict``."""
        body = _calendar_body(dates, ics, description) | {"name": name}
        return cast(Calendar, self._call("POST", "/calendars", body=body, idempotent=False))

    def replace_calendar(
        self,
        name: str,
        *,
        dates: Sequence[str] | None = None,
        ics: str | None = None,
        description: str = "",
    ) -> Calendar:
        """Replace a calendar's dates; every schedule naming it follows them from its next
        time on."""
        body = _calendar_body(dates, ics, description)
        return cast(Calendar, self._call("PUT", _calendar_path(name), body=body, idempotent=True))

    def delete_calendar(self, name: str) -> None:
        """Delete a calendar; a ``Conflict`` naming them while schedules name it."""
        self._call("DELETE", _calendar_path(name), idempotent=False)


def _calendar_path(name: str) -> str:
    return f"/calendars/{quote(name, safe='')}"


def _calendar_body(
    dates: Sequence[str] | None, ics: str | None, description: str
) -> dict[str, Any]:
    body: dict[str, Any] = {"description": description}
    if dates is not None:
        body["dates"] = list(dates)
    if ics is not None:
        body["ics"] = ics
    return body
