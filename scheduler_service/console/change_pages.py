"""A schedule's change history in the console: the newest changes on its page, and every change,
a page at a time, on a page of its own."""

from __future__ import annotations

from typing import Any

from flask import g, request

from scheduler_service.console.pages import blp, page, service
from scheduler_service.presenting.change_schemas import ChangeSchema
from scheduler_service.roles import requires
from shared.formats import CHANGE_CURSOR
from shared.model import ScheduleStatus
from shared.ports import Role

CHANGES_PAGE = 50
# The newest changes a schedule's page shows.
CHANGES_ON_SCHEDULE = 5
CHANGE_VIEW = ChangeSchema()


def change_rows(tenant: str, schedule_id: str, limit: int) -> list[dict[str, Any]]:
    """The schedule's newest ``limit`` changes as the API shows them."""
    _, found = service().reads.list_changes(tenant, schedule_id, limit, None)
    return [CHANGE_VIEW.dump(change) for change in found.items]


@blp.route("/schedules/<schedule_id>/changes")
@requires(Role.READ)
def changes(schedule_id: str) -> tuple[str, int]:
    """Newest first; ``?cursor=`` the page after the one that gave it. A deleted schedule's
    changes too, as long as retention keeps them."""
    errors: dict[str, list[str]] = {}
    cursor = request.args.get("cursor") or None
    if cursor is not None and not CHANGE_CURSOR.match(cursor):
        errors["cursor"] = ["not a cursor this page gave"]
        cursor = None
    stored, found = service().reads.list_changes(g.tenant, schedule_id, CHANGES_PAGE, cursor)
    html = page(
        "console/changes.html",
        schedule_id=schedule_id,
        name=stored.definition.name if stored is not None and stored.definition else "",
        deleted=stored is None or stored.status is ScheduleStatus.DELETED,
        changes=[CHANGE_VIEW.dump(change) for change in found.items],
        errors=errors,
        next_cursor=found.next_cursor,
        paged=cursor is not None,
    )
    return html, 400 if errors else 200
