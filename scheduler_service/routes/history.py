"""``/scheduler-service/v1/schedule/{id}/executions…``: a schedule's run history, and one
occurrence with every attempt. On the schedules' blueprint."""

from __future__ import annotations

from typing import Any

from flask import g

from scheduler_service.presenting.run_schemas import ExecutionPageSchema, OccurrenceSchema
from scheduler_service.presenting.views import (
    PageView,
    PauseView,
    masked_execution,
    masked_occurrence,
)
from scheduler_service.requests.paths import check_id, check_occurrence_id
from scheduler_service.requests.queries import ListExecutionsQuery, encode_cursor
from scheduler_service.routes.common import page_size, service
from scheduler_service.routes.schedules import blp
from shared.model import Execution, ScheduleStatus
from shared.ports import HistoryRequest, Role


@blp.listing(
    "/schedule/<schedule_id>/executions",
    ListExecutionsQuery,
    ExecutionPageSchema,
    "listExecutions",
    404,
)
def list_executions(query: dict[str, Any], schedule_id: str) -> PageView[Execution]:
    """The run history, newest first

    Status, attempts, HTTP status, duration, lateness, error. `?status=` lists the records of
    one status. The occurrences the poller had sent ahead of their time and that a later change,
    pause or delete superseded are not runs: they are counted on the schedule (`superseded`)
    and listed only with `?status=skipped` (`superseded: true`). A deleted schedule's history
    stays readable (`schedule_status: deleted`) until retention removes it; a paused one's says
    who paused it, when and why (`paused_by`, `paused_at`, `paused_reason`)."""
    check_id(schedule_id)
    schedule, page = service().reads.list_executions(
        HistoryRequest(
            g.tenant, schedule_id, page_size(query), query.get("cursor"), query.get("status")
        )
    )
    secret_patterns = service().settings.secret_headers
    return PageView(
        [masked_execution(item, secret_patterns) for item in page.items],
        encode_cursor(page.next_cursor, "e"),
        schedule.status if schedule else ScheduleStatus.DELETED,
        PauseView(schedule),
    )


@blp.route("/schedule/<schedule_id>/executions/<occurrence_id>", methods=["GET"])
@blp.requires(Role.READ)
@blp.response(200, OccurrenceSchema)
@blp.doc(operationId="getExecution")
@blp.problems(400, 404)
def get_execution(schedule_id: str, occurrence_id: str) -> Execution:
    """One occurrence with every attempt

    Its record as in the history, and `attempt_log`: each attempt that ended (the last 50),
    oldest first, with its start, duration, HTTP status, error, and the answer's status line and
    first bytes of its body. A replayed dead letter's new attempt is one more entry. The
    occurrence id is `<schedule id>:<UTC time>` (or `<schedule id>:manual:<UTC time>:<hex>`
    for a trigger), as listed in the history."""
    check_id(schedule_id)
    check_occurrence_id(occurrence_id, schedule_id)
    record = service().reads.execution(g.tenant, occurrence_id)
    return masked_occurrence(record, service().settings.secret_headers)
