"""A schedule's change history in the console: the newest changes on its page (asked for once the
page is shown, a request of their own), and every change, a page at a time, on a page of its
own."""

from __future__ import annotations

from flask import g

from scheduler_service.console.pages import Paging, blp, given_cursor, page, service
from scheduler_service.presenting.change_schemas import ChangeSchema
from scheduler_service.roles import requires
from shared.formats import CHANGE_CURSOR
from shared.model import ScheduleStatus
from shared.ports import Role

CHANGES_PAGE = 50
# The newest changes a schedule's page shows.
CHANGES_ON_SCHEDULE = 5
CHANGE_VIEW = ChangeSchema()


@blp.route("/schedules/<schedule_id>/changes/recent")
@requires(Role.READ)
def recent_changes(schedule_id: str) -> str:
    """The newest changes of a live schedule, for its page (which asks once it is shown)."""
    service().reads.get(g.tenant, schedule_id)
    found = service().reads.recent_changes(g.tenant, schedule_id, CHANGES_ON_SCHEDULE)
    return page(
        "console/recent_changes.html",
        schedule_id=schedule_id,
        changes=[CHANGE_VIEW.dump(change) for change in found],
    )


@blp.route("/schedules/<schedule_id>/changes")
@requires(Role.READ)
def changes(schedule_id: str) -> tuple[str, int]:
    """Newest first; ``?cursor=`` the page after the one that gave it. A deleted schedule's
    changes too, as long as retention keeps them."""
    errors: dict[str, list[str]] = {}
    cursor = given_cursor(errors, lambda given: CHANGE_CURSOR.match(given) is not None)
    if errors:
        cursor = None
    stored, found = service().reads.list_changes(g.tenant, schedule_id, CHANGES_PAGE, cursor)
    html = page(
        "console/changes.html",
        schedule_id=schedule_id,
        name=stored.definition.name if stored is not None and stored.definition else "",
        deleted=stored is None or stored.status is ScheduleStatus.DELETED,
        changes=[CHANGE_VIEW.dump(change) for change in found.items],
        errors=errors,
        paging=Paging(cursor, found.next_cursor),
    )
    return html, 400 if errors else 200
