"""The calendars' port: each tenant's business calendars, the local dates that are not business
days (``shared.calendars``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, datetime


@dataclass(frozen=True)
class Calendar:
    """A tenant's calendar as stored: its ``dates`` sorted, each once; ``revision`` is 1 when
    it is created and one more at each replace."""

    tenant: str
    name: str
    dates: tuple[date, ...]
    revision: int
    updated_at: datetime
    description: str = ""


class CalendarStore(ABC):
    """Each tenant's calendars, keyed by (tenant, name). A tenant never reads, replaces or
    deletes another tenant's."""

    @abstractmethod
    def get_calendars(self, tenant: str, names: Collection[str]) -> dict[str, Calendar]:
        """The tenant's calendars of these names, by name, in one read; a name it has no
        calendar of is absent."""

    @abstractmethod
    def list_calendars(self, tenant: str) -> list[Calendar]:
        """Every calendar of the tenant, by name (a tenant has at most
        ``shared.calendars.MAX_CALENDARS``)."""

    @abstractmethod
    def create_calendar(self, calendar: Calendar) -> bool:
        """Store a new calendar (``revision`` 1); ``False``, and nothing changes, when the
        tenant has one of that name already."""

    @abstractmethod
    def replace_calendar(self, calendar: Calendar) -> bool:
        """Replace the tenant's calendar of that name if it is stored at
        ``calendar.revision - 1``: of two writers of the same revision exactly one wins.
        ``False``, and nothing changes, when not (or when there is none)."""

    @abstractmethod
    def delete_calendar(self, tenant: str, name: str) -> bool:
        """Delete the tenant's calendar of that name; whether there was one."""

    @abstractmethod
    def schedules_naming(self, tenant: str, name: str, limit: int) -> list[str]:
        """The ids of the tenant's live schedules (active or paused) whose ``calendar`` names
        the calendar, in id order, ``limit`` at most."""

    @abstractmethod
    def recheck_schedules(self, tenant: str, name: str, at: datetime) -> int:
        """Bring the next time of the tenant's active schedules naming the calendar back to
        ``at`` where it is later, in one write, so that the poller computes it again with the
        calendar as it is now; how many it changed."""
