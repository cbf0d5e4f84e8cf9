"""Reads: a tenant's schedules, their histories and dead letters, as stored.

Every method takes the caller's tenant: a schedule of another tenant is ``NotFound``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from shared.calendar_reads import schedules_calendars
from shared.calendars import BusinessCalendar
from shared.changes import Change
from shared.dispatch import next_fire_time
from shared.errors import NotFound
from shared.model import Execution, Schedule, ScheduleStatus
from shared.ports import Clock, DeadLetterRequest, HistoryRequest, Page, ScheduleFilter, Store


@dataclass(eq=False)
class Reads:
    store: Store
    clock: Clock

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        schedule = self.store.get_schedule(tenant, schedule_id)
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)
        return schedule

    def business_calendar(self, schedule: Schedule) -> BusinessCalendar | None:
        """The business days of the calendars the schedule names, as they are now."""
        key = (schedule.tenant, schedule.schedule_id)
        return schedules_calendars(self.store, [schedule]).get(key)

    def next_fire_time(self, schedule: Schedule) -> datetime | None:
        """When the schedule fires next, as of now, as the store keeps it
        (``shared.dispatch.next_fire_time``: nothing is computed)."""
        return next_fire_time(schedule, self.clock.now())

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        return self.store.list_schedules(tenant, query, limit, cursor)

    def schedules_by_id(self, tenant: str, schedule_ids: Iterable[str]) -> dict[str, Schedule]:
        """The tenant's live schedules of these ids (not deleted ones), by id, in one read."""
        found = self.store.get_schedules([(tenant, schedule_id) for schedule_id in schedule_ids])
        return {
            schedule_id: schedule
            for (_, schedule_id), schedule in found.items()
            if schedule.status is not ScheduleStatus.DELETED
        }

    def list_executions(self, history: HistoryRequest) -> tuple[Schedule | None, Page[Execution]]:
        """The schedule as stored (``None`` once removed) and a page of its history: its runs,
        or with ``status`` its records in that status (``ExecutionStore.list_executions``). A
        deleted schedule's history stays readable until retention removes it; its tombstone may be
        removed first, and then the records left are still its history. ``NotFound`` for a
        schedule unknown or deleted with no history (a delete of an unknown id leaves a
        tombstone: it shows nothing)."""
        schedule = self.store.get_schedule(history.tenant, history.schedule_id)
        page = self.store.list_executions(history)
        gone = schedule is None or schedule.status is ScheduleStatus.DELETED
        if gone and not page.items and history.cursor is None:
            raise NotFound(history.schedule_id)
        return schedule, page

    def list_changes(
        self, tenant: str, schedule_id: str, limit: int, cursor: str | None
    ) -> tuple[Schedule | None, Page[Change]]:
        """The schedule as stored (``None`` once removed) and a page of its change history,
        newest first. A deleted schedule's changes stay readable as long as its runs (until
        retention removes them); ``NotFound`` for a schedule unknown, another tenant's, or
        deleted with no change left (as ``list_executions``)."""
        schedule = self.store.get_schedule(tenant, schedule_id)
        page = self.store.list_changes(tenant, schedule_id, limit, cursor)
        gone = schedule is None or schedule.status is ScheduleStatus.DELETED
        if gone and not page.items and cursor is None:
            raise NotFound(schedule_id)
        return schedule, page

    def recent_changes(self, tenant: str, schedule_id: str, limit: int) -> list[Change]:
        """The newest ``limit`` changes of a schedule the caller has read already."""
        return self.store.list_changes(tenant, schedule_id, limit, None).items

    def execution(self, tenant: str, occurrence_id: str) -> Execution:
        """One occurrence's record (kept after its schedule is deleted, until retention);
        ``NotFound`` if the tenant has none by that id."""
        record = self.store.get_execution(tenant, occurrence_id)
        if record is None:
            raise NotFound(occurrence_id)
        return record

    def list_dead_letters(self, request: DeadLetterRequest) -> Page[Execution]:
        return self.store.list_dead_letters(request)
