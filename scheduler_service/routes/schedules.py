"""``/scheduler-service/v1/schedule…``: create, replace, change, read, delete and list
schedules. The blueprint ``blp`` is the schedules' resource: its other routes are in
``actions`` (pause, resume, trigger, backfill), ``history`` (the runs) and ``preview``.

Every route works within the caller's tenant (``g.tenant``, set from the API key by the app):
another tenant's schedule is a 404, never listed. Every answer, errors included, is declared
in the OpenAPI document; errors are RFC 7807 ``application/problem+json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from flask import Response, g, url_for
from flask.views import MethodView
from marshmallow import Schema

from scheduler_service.auth import request_actor
from scheduler_service.presenting.schemas import (
    AcceptedSchema,
    DeletedSchema,
    SchedulePageSchema,
    ScheduleViewSchema,
)
from scheduler_service.presenting.views import PageView, json_answer
from scheduler_service.requests.headers import (
    IdempotencyHeader,
    idempotent_request,
    trace_parent,
)
from scheduler_service.requests.patch import (
    PATCH_DESCRIPTION,
    SchedulePatchSchema,
    patched_request,
)
from scheduler_service.requests.paths import check_id
from scheduler_service.requests.queries import ListSchedulesQuery, encode_cursor
from scheduler_service.requests.schedule import ScheduleBodySchema, ScheduleRequest, as_sent
from scheduler_service.routes.common import (
    REPLAYED,
    Blueprint,
    View,
    page_size,
    present,
    schedule_answer,
    service,
)
from scheduler_service.service.creating import Accepted
from shared.changes import ChangeAction
from shared.errors import InvalidInput
from shared.model import ScheduleStatus
from shared.ports import Role, ScheduleFilter
from shared.schedule_listing import SORTS

blp = Blueprint(
    "schedules",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Schedules: each fires an HTTP call at its times",
)

ACCEPTED = AcceptedSchema()
SCHEDULE_PAGE = SchedulePageSchema()
ACCEPTED_HEADERS = {
    "Location": {"description": "the schedule's URL", "schema": {"type": "string"}},
    **REPLAYED,
}


def accept(
    body: ScheduleRequest,
    schedule_id: str | None,
    headers: dict[str, Any],
    operation: str,
    action: ChangeAction | None = None,
) -> Response:
    """A create, replace or change accepted (``202``, ``Location``), or refused with its fields
    named as the body named them; recorded in the history as ``action`` (by default a create,
    or a replace of a stored schedule). Its occurrences continue the request's W3C
    ``traceparent`` (an invalid one is ignored, as the specification says: a new trace
    begins)."""
    with as_sent(body.names):
        accepted = service().creation.accept_definition(
            g.tenant,
            schedule_id,
            body.definition,
            idempotent_request(headers),
            actor=request_actor(),
            action=action,
            fire_if_past=body.fire_if_past,
            parent=trace_parent(headers),
            operation=operation,
        )
    return accepted_response(accepted)


def definition_write(
    body: type[Schema], operation_id: str, *problems: int, description: str | None = None
) -> Callable[[View], View]:
    """A writer's route that sends a schedule's definition (``body``) with an optional
    ``Idempotency-Key`` and is answered ``202`` Accepted, or one of ``problems`` beside the
    errors every such write can get."""
    documented = {"operationId": operation_id, "description": description}

    def decorate(view: View) -> View:
        routed = blp.problems(400, 409, 413, 415, *problems)(view)
        routed = blp.doc(**{key: value for key, value in documented.items() if value})(routed)
        routed = blp.response(202, AcceptedSchema, headers=ACCEPTED_HEADERS)(routed)
        routed = blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)(routed)
        routed = blp.arguments(body, error_status_code=400)(routed)
        return cast(View, blp.requires(Role.WRITE)(routed))

    return decorate


def accepted_response(accepted: Accepted) -> Response:
    headers = {"Location": url_for("schedules.ScheduleResource", schedule_id=accepted.schedule_id)}
    if accepted.replayed:
        headers["Idempotent-Replayed"] = "true"
    return json_answer(ACCEPTED, accepted, 202, headers)


@blp.route("/schedule", methods=["POST"])
@definition_write(ScheduleBodySchema, "createSchedule", 403)
def create_schedule(body: ScheduleRequest, headers: dict[str, Any]) -> Response:
    """Create a schedule (asynchronously: a GET may answer 404 for a few milliseconds).

    With an `Idempotency-Key`, a repeat with the same body answers the same schedule and
    creates nothing; with another body, 409.
    """
    return accept(body, body.schedule_id, headers, "create")


@blp.listing("/schedules", ListSchedulesQuery, SchedulePageSchema, "listSchedules")
def list_schedules(query: dict[str, Any]) -> Response:
    """The tenant's schedules (never deleted ones), by id unless ?sort= says otherwise, a page
    at a time; ?q= searches their names, tags and URL hosts."""
    status = query.get("status")
    order, descending = SORTS[query.get("sort", "id")]
    selection = ScheduleFilter(
        status=ScheduleStatus(status) if status else None,
        name_prefix=query.get("name"),
        tag=query.get("tag"),
        next_after=query.get("next_after"),
        next_before=query.get("next_before"),
        search=query["q"].strip() if "q" in query else None,
        order=order,
        descending=descending,
    )
    found = service().reads.list_schedules(
        g.tenant, selection, page_size(query), query.get("cursor")
    )
    items = [present(schedule) for schedule in found.items]
    return json_answer(SCHEDULE_PAGE, PageView(items, encode_cursor(found.next_cursor, "s")), 200)


@blp.route("/schedule/<schedule_id>")
class ScheduleResource(MethodView):
    @blp.requires(Role.READ)
    @blp.response(200, ScheduleViewSchema)
    @blp.doc(operationId="getSchedule")
    @blp.problems(400, 404)
    def get(self, schedule_id: str) -> Response:
        """The stored schedule, its status, next time and run counts; 404 if unknown or deleted."""
        check_id(schedule_id)
        return schedule_answer(service().reads.get(g.tenant, schedule_id), 200)

    @definition_write(ScheduleBodySchema, "replaceSchedule", 403)
    def put(self, body: ScheduleRequest, headers: dict[str, Any], schedule_id: str) -> Response:
        """Create or replace the schedule with this id (the same id, the same schedule)."""
        if body.schedule_id not in (None, schedule_id):
            raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
        check_id(schedule_id)
        return accept(body, schedule_id, headers, "replace")

    @definition_write(SchedulePatchSchema, "patchSchedule", 404, description=PATCH_DESCRIPTION)
    def patch(self, patch: dict[str, Any], headers: dict[str, Any], schedule_id: str) -> Response:
        """Change some fields without resending the rest

        The document's description is ``PATCH_DESCRIPTION`` (it names the registry's forms)."""
        check_id(schedule_id)
        if patch.get("id") not in (None, schedule_id):
            raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
        stored = service().reads.get(g.tenant, schedule_id)
        return accept(
            patched_request(stored.live_definition, patch),
            schedule_id,
            headers,
            "patch",
            ChangeAction.PATCH,
        )

    @blp.requires(Role.WRITE)
    @blp.response(202, DeletedSchema)
    @blp.doc(operationId="deleteSchedule")
    @blp.problems(400, 404)
    def delete(self, schedule_id: str) -> dict[str, str]:
        """Stop the schedule for good: no occurrence fires after this answer. An id no create
        could have used is a 400."""
        check_id(schedule_id)
        service().changes.delete(g.tenant, schedule_id, request_actor())
        return {"id": schedule_id}
