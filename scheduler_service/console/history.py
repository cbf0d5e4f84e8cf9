"""A schedule's whole run history, a page at a time and by status, and one run's record."""

from __future__ import annotations

from typing import Any

from flask import g, request

from scheduler_service.console.pages import Paging, blp, given_cursor, page, service
from scheduler_service.presenting.views import execution_view, occurrence_view
from scheduler_service.roles import requires
from shared.formats import is_execution_cursor
from shared.model import ExecutionStatus
from shared.ports import HistoryRequest, Role

HISTORY_PAGE = 50
# The statuses the history filters by, as its select names them; all runs is no status.
STATUS_CHOICES = {
    "": "All runs",
    ExecutionStatus.SUCCEEDED.value: "Succeeded",
    ExecutionStatus.FAILED.value: "Failed",
    ExecutionStatus.RETRYING.value: "Retrying",
    ExecutionStatus.RUNNING.value: "Running",
    ExecutionStatus.SKIPPED.value: "Skipped (superseded or missed)",
}


@blp.route("/schedules/<schedule_id>/history")
@requires(Role.READ)
def history(schedule_id: str) -> tuple[str, int]:
    """Newest first; ``?status=`` one status (``skipped`` lists the occurrences a change
    superseded, which all runs leave out); ``?cursor=`` the page after the one that gave it."""
    errors: dict[str, list[str]] = {}
    status = request.args.get("status", "")
    if status not in STATUS_CHOICES:
        errors["status"] = [f"one of {', '.join(choice for choice in STATUS_CHOICES if choice)}"]
    cursor = given_cursor(errors, is_execution_cursor)
    scheduler = service()
    stored = None
    runs: list[dict[str, Any]] = []
    next_cursor = None
    if not errors:
        stored, found = scheduler.reads.list_executions(
            HistoryRequest(
                g.tenant,
                schedule_id,
                HISTORY_PAGE,
                cursor,
                ExecutionStatus(status) if status else None,
            )
        )
        runs = [execution_view(run, scheduler.settings.secret_headers) for run in found.items]
        next_cursor = found.next_cursor
    else:
        stored = scheduler.reads.get(g.tenant, schedule_id)
    name = stored.definition.name if stored is not None and stored.definition else ""
    html = page(
        "console/history.html",
        schedule_id=schedule_id,
        name=name,
        deleted=stored is None or stored.definition is None,
        runs=runs,
        status=status,
        choices=STATUS_CHOICES,
        errors=errors,
        paging=Paging(cursor, next_cursor),
    )
    return html, 400 if errors else 200


@blp.route("/runs/<occurrence_id>")
@requires(Role.READ)
def run(occurrence_id: str) -> str:
    """One occurrence's record, as its schedule's history shows it (the tenant's only)."""
    record = service().reads.execution(g.tenant, occurrence_id)
    return page("console/run.html", run=occurrence_view(record, service().settings.secret_headers))
