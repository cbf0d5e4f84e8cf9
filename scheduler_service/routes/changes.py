"""``/scheduler-service/v1/schedule/{id}/changes``: a schedule's change history. On the
schedules' blueprint."""

from __future__ import annotations

from typing import Any

from flask import g

from scheduler_service.presenting.change_schemas import ChangePageSchema
from scheduler_service.presenting.views import PageView
from scheduler_service.requests.paths import check_id
from scheduler_service.requests.queries import ListChangesQuery, encode_cursor
from scheduler_service.routes.common import page_size, service
from scheduler_service.routes.schedules import blp
from shared.changes import Change
from shared.model import ScheduleStatus


@blp.listing(
    "/schedule/<schedule_id>/changes", ListChangesQuery, ChangePageSchema, "listChanges", 404
)
def list_changes(query: dict[str, Any], schedule_id: str) -> PageView[Change]:
    """The change history, newest first

    Every create, replace, patch, pause, resume, skip, delete, automatic pause (by
    `pause_after_failures`: actor `system`) and replay of a dead letter, with its time, the
    revision it made, who made it (the API key's id and name, the console, or the system) and
    the fields it changed, each with its old and new value as GET shows them: secrets masked (a
    secret's change says that it changed, never its value). A deleted schedule's changes stay
    readable (`schedule_status: deleted`) as long as its runs, until retention removes them
    (`SCHEDULER_EXECUTION_RETENTION_DAYS` after each change)."""
    check_id(schedule_id)
    schedule, page = service().reads.list_changes(
        g.tenant, schedule_id, page_size(query), query.get("cursor")
    )
    return PageView(
        page.items,
        encode_cursor(page.next_cursor, "c"),
        schedule.status if schedule else ScheduleStatus.DELETED,
    )
