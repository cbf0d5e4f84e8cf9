"""``/scheduler-service/v1/schedule…``: create, replace, read, delete, list, pause, resume,
trigger, history, preview.

Every view works within the caller's tenant (``g.tenant``, set from the API key by the app):
another tenant's schedule is a 404, never listed. Every answer, errors included, is declared
in the OpenAPI document; errors are RFC 7807 ``application/problem+json``.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from flask import Response, current_app, g, request, url_for
from flask.views import MethodView
from marshmallow import RAISE, ValidationError

from scheduler_service.presenting.problems import flatten
from scheduler_service.presenting.schemas import (
    AcceptedSchema,
    BackfillAnswerSchema,
    DeletedSchema,
    ExecutionPageSchema,
    OccurrenceSchema,
    PreviewAnswerSchema,
    ProblemSchema,
    SchedulePageSchema,
    ScheduleViewSchema,
    TriggeredSchema,
)
from scheduler_service.presenting.views import (
    SCHEDULE_VIEW,
    PageView,
    PauseView,
    PreviewView,
    ScheduleView,
    json_answer,
    masked_execution,
    masked_occurrence,
    schedule_view_of,
)
from scheduler_service.requests.bodies import Blueprint
from scheduler_service.requests.patch import SchedulePatchSchema, patched_body, stored_body
from scheduler_service.requests.queries import (
    IdempotencyHeader,
    ListExecutionsQuery,
    ListSchedulesQuery,
    encode_cursor,
)
from scheduler_service.requests.schedule import (
    SCHEDULE_ID,
    BackfillSchema,
    PreviewSchema,
    ScheduleBodySchema,
    ScheduleRequest,
    as_sent,
)
from scheduler_service.service import ScheduleService
from scheduler_service.service.creating import Accepted, IdempotentRequest
from shared.backfill import Backfill
from shared.errors import InvalidInput, NotFound
from shared.model import Execution, Occurrence, Schedule, ScheduleStatus
from shared.ports import ScheduleFilter

blp = Blueprint(
    "schedules",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Schedules: each fires an HTTP call at its times",
)


def service() -> ScheduleService:
    scheduler: ScheduleService = current_app.extensions["scheduler"]
    return scheduler


PROBLEM = "application/problem+json"
ACCEPTED = AcceptedSchema()
SCHEDULE_PAGE = SchedulePageSchema()
# What follows "<schedule id>:" in an occurrence id: its UTC time, or a trigger's.
_UTC = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
OCCURRENCE_SUFFIX = re.compile(rf"^(?:{_UTC}|manual:{_UTC}:[0-9a-f]{{1,32}})$")


def problem_response(status: int, description: str) -> Any:
    return blp.alt_response(
        status, schema=ProblemSchema, content_type=PROBLEM, description=description
    )


def problems(*statuses: int) -> Any:
    """Declare the error answers a view can give (401, 429 and 503 apply to every view)."""
    descriptions = {
        400: "Invalid input: every bad field is named in errors",
        401: "No API key, or an unknown one",
        403: "The tenant's quota of schedules is reached",
        404: "No such schedule (unknown, deleted, or another tenant's)",
        409: "Idempotency-Key reused with another request",
        413: "Body over the size limit",
        415: "Body not JSON",
        429: "Over the tenant's rate limit; retry after Retry-After seconds",
        503: "A backend is unavailable; retry",
    }

    def decorate(view: Any) -> Any:
        for status in sorted({*statuses, 401, 429, 503}, reverse=True):
            view = problem_response(status, descriptions[status])(view)
        return view

    return decorate


def present(schedule: Schedule) -> ScheduleView:
    """The schedule as clients see it, masked by the configured secret patterns."""
    scheduler = service()
    return schedule_view_of(
        schedule, scheduler.settings.secret_headers, scheduler.reads.next_fire_time(schedule)
    )


def schedule_answer(schedule: Schedule, status: int) -> Response:
    return json_answer(SCHEDULE_VIEW, present(schedule), status)


def idempotent_request(headers: dict[str, Any]) -> IdempotentRequest | None:
    key = headers.get("idempotency_key")
    if key is None:
        return None
    raw = request.get_json(silent=True)
    canonical = json.dumps(
        [request.method, request.path, raw], sort_keys=True, separators=(",", ":")
    )
    return IdempotentRequest(key, hashlib.sha256(canonical.encode()).hexdigest())


def accepted_response(accepted: Accepted) -> Response:
    headers = {"Location": url_for("schedules.ScheduleResource", schedule_id=accepted.schedule_id)}
    if accepted.replayed:
        headers["Idempotent-Replayed"] = "true"
    return json_answer(ACCEPTED, accepted, 202, headers)


ACCEPTED_HEADERS = {
    "Location": {"description": "the schedule's URL", "schema": {"type": "string"}},
    "Idempotent-Replayed": {
        "description": "true when this answers an earlier request with the same Idempotency-Key",
        "schema": {"type": "string"},
    },
}


@blp.route("/schedule", methods=["POST"])
@blp.arguments(ScheduleBodySchema, error_status_code=400)
@blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)
@blp.response(202, AcceptedSchema, headers=ACCEPTED_HEADERS)
@blp.doc(operationId="createSchedule")
@problems(400, 403, 409, 413, 415)
def create_schedule(body: ScheduleRequest, headers: dict[str, Any]) -> Response:
    """Create a schedule (asynchronously: a GET may answer 404 for a few milliseconds).

    With an `Idempotency-Key`, a repeat with the same body answers the same schedule and
    creates nothing; with another body, 409.
    """
    with as_sent(body.names):
        accepted = service().creation.accept_definition(
            g.tenant,
            body.schedule_id,
            body.definition,
            idempotent_request(headers),
            fire_if_past=body.fire_if_past,
        )
    return accepted_response(accepted)


@blp.route("/schedules", methods=["GET"])
@blp.arguments(ListSchedulesQuery, location="query", unknown=RAISE, error_status_code=400)
@blp.response(200, SchedulePageSchema)
@blp.doc(operationId="listSchedules")
@problems(400)
def list_schedules(query: dict[str, Any]) -> Response:
    """The tenant's schedules (never deleted ones), by id, a page at a time."""
    status = query.get("status")
    selection = ScheduleFilter(
        status=ScheduleStatus(status) if status else None,
        name_prefix=query.get("name"),
        tag=query.get("tag"),
        next_after=query.get("next_after"),
        next_before=query.get("next_before"),
    )
    page = service().reads.list_schedules(g.tenant, selection, _limit(query), query.get("cursor"))
    items = [present(schedule) for schedule in page.items]
    return json_answer(SCHEDULE_PAGE, PageView(items, encode_cursor(page.next_cursor, "s")), 200)


@blp.route("/schedule/<schedule_id>")
class ScheduleResource(MethodView):
    @blp.response(200, ScheduleViewSchema)
    @blp.doc(operationId="getSchedule")
    @problems(400, 404)
    def get(self, schedule_id: str) -> Response:
        """The stored schedule, its status, next time and run counts; 404 if unknown or deleted."""
        check_id(schedule_id)
        return schedule_answer(service().reads.get(g.tenant, schedule_id), 200)

    @blp.arguments(ScheduleBodySchema, error_status_code=400)
    @blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)
    @blp.response(202, AcceptedSchema, headers=ACCEPTED_HEADERS)
    @blp.doc(operationId="replaceSchedule")
    @problems(400, 403, 409, 413, 415)
    def put(self, body: ScheduleRequest, headers: dict[str, Any], schedule_id: str) -> Response:
        """Create or replace the schedule with this id (the same id, the same schedule)."""
        if body.schedule_id not in (None, schedule_id):
            raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
        check_id(schedule_id)
        with as_sent(body.names):
            accepted = service().creation.accept_definition(
                g.tenant,
                schedule_id,
                body.definition,
                idempotent_request(headers),
                fire_if_past=body.fire_if_past,
            )
        return accepted_response(accepted)

    @blp.arguments(SchedulePatchSchema, error_status_code=400)
    @blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)
    @blp.response(202, AcceptedSchema, headers=ACCEPTED_HEADERS)
    @blp.doc(operationId="patchSchedule")
    @problems(400, 404, 409, 413, 415)
    def patch(self, patch: dict[str, Any], headers: dict[str, Any], schedule_id: str) -> Response:
        """Change some fields without resending the rest

        A JSON merge patch (RFC 7396) onto the stored schedule (objects merge, `null`
        removes a member), then validated and accepted as a `PUT` of the result: a new
        revision, the same answers. Secret values not sent stay as stored. A `schedule`
        naming its form (`at`, `interval`, `cron`, `rrule`, `start_date`) replaces the
        stored one whole."""
        check_id(schedule_id)
        if patch.get("id") not in (None, schedule_id):
            raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
        stored = service().reads.get(g.tenant, schedule_id)
        changes = {name: value for name, value in patch.items() if name != "id"}
        merged = patched_body(stored_body(stored.live_definition), changes)
        try:
            body: ScheduleRequest = ScheduleBodySchema().load(merged)
        except ValidationError as exc:
            found: dict[str, list[str]] = {}
            for error in flatten(exc.messages):
                found.setdefault(error["field"], []).append(error["message"])
            raise InvalidInput(found) from None
        with as_sent(body.names):
            accepted = service().creation.accept_definition(
                g.tenant,
                schedule_id,
                body.definition,
                idempotent_request(headers),
                fire_if_past=body.fire_if_past,
            )
        return accepted_response(accepted)

    @blp.response(202, DeletedSchema)
    @blp.doc(operationId="deleteSchedule")
    @problems(400, 404)
    def delete(self, schedule_id: str) -> dict[str, str]:
        """Stop the schedule for good: no occurrence fires after this answer. An id no create
        could have used is a 400."""
        check_id(schedule_id)
        service().changes.delete(g.tenant, schedule_id)
        return {"id": schedule_id}


@blp.route("/schedule/<schedule_id>/pause", methods=["POST"])
@blp.response(202, ScheduleViewSchema)
@blp.doc(operationId="pauseSchedule")
@problems(400, 404)
def pause_schedule(schedule_id: str) -> Response:
    """Stop firing until resumed; occurrences that fall in the pause are skipped. Pausing a
    paused or completed schedule changes nothing."""
    check_id(schedule_id)
    return schedule_answer(service().changes.pause(g.tenant, schedule_id), 202)


@blp.route("/schedule/<schedule_id>/resume", methods=["POST"])
@blp.response(202, ScheduleViewSchema)
@blp.doc(operationId="resumeSchedule")
@problems(400, 404)
def resume_schedule(schedule_id: str) -> Response:
    """Fire again from now on (the occurrences of the pause are not caught up)."""
    check_id(schedule_id)
    return schedule_answer(service().changes.resume(g.tenant, schedule_id), 202)


@blp.route("/schedule/<schedule_id>/trigger", methods=["POST"])
@blp.response(202, TriggeredSchema)
@blp.doc(operationId="triggerSchedule")
@problems(400, 404)
def trigger_schedule(schedule_id: str) -> Occurrence:
    """Run the schedule once now, beside its own times (even while paused).

    The run has its own occurrence id and appears in the history with `manual: true`.
    """
    check_id(schedule_id)
    return service().runs.trigger(g.tenant, schedule_id)


@blp.route("/schedule/<schedule_id>/backfill", methods=["POST"])
@blp.arguments(BackfillSchema, error_status_code=400)
@blp.response(202, BackfillAnswerSchema)
@blp.doc(operationId="backfillSchedule")
@problems(400, 404, 413, 415)
def backfill_schedule(body: dict[str, Any], schedule_id: str) -> Backfill:
    """Run the occurrences of a past range that did not run

    The range: `from` included, `to` excluded, at most 366 days and 1,000 occurrences. Those
    that did not run: `fire_all` each, `fire_once` only the latest. Each has its normal
    occurrence id (and `Idempotency-Key`), so the receiver can deduplicate; those that already
    succeeded, failed (see dead letters) or are in flight are left out, and so are those the
    schedule would never have fired (before its `start`, after its `end`, beyond its
    `max_occurrences`). They run now, as manual runs: even while paused, whatever the grace."""
    check_id(schedule_id)
    return service().runs.backfill(
        g.tenant, schedule_id, body["start"], body["end"], body["policy"]
    )


@blp.route("/schedule/<schedule_id>/executions", methods=["GET"])
@blp.arguments(ListExecutionsQuery, location="query", unknown=RAISE, error_status_code=400)
@blp.response(200, ExecutionPageSchema)
@blp.doc(operationId="listExecutions")
@problems(400, 404)
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
        g.tenant, schedule_id, _limit(query), query.get("cursor"), query.get("status")
    )
    secret_patterns = service().settings.secret_headers
    return PageView(
        [masked_execution(item, secret_patterns) for item in page.items],
        encode_cursor(page.next_cursor, "e"),
        schedule.status if schedule else ScheduleStatus.DELETED,
        PauseView(schedule),
    )


@blp.route("/schedule/<schedule_id>/executions/<occurrence_id>", methods=["GET"])
@blp.response(200, OccurrenceSchema)
@blp.doc(operationId="getExecution")
@problems(400, 404)
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


def check_id(schedule_id: str) -> None:
    """An id a schedule can have, or ``InvalidInput`` naming ``id``."""
    if not SCHEDULE_ID.match(schedule_id):
        raise InvalidInput(
            {"id": "1-128 characters: letters, digits, . _ ~ -, starting with a letter or digit"}
        )


def check_occurrence_id(occurrence_id: str, schedule_id: str | None = None) -> None:
    """An id an occurrence (of ``schedule_id``, if given) can have, or ``InvalidInput`` naming
    ``occurrence_id``: ``<schedule id>:<UTC time>`` or a trigger's
    ``<schedule id>:manual:<UTC time>:<hex>``."""
    owner, _, suffix = occurrence_id.partition(":")
    if schedule_id is None and SCHEDULE_ID.match(owner) and OCCURRENCE_SUFFIX.match(suffix):
        return
    if owner == schedule_id and OCCURRENCE_SUFFIX.match(suffix):
        return
    of = f" of {schedule_id}" if schedule_id is not None else ""
    raise InvalidInput(
        {
            "occurrence_id": f"not an occurrence id{of}: <schedule id>:<UTC time>, e.g. "
            f"{schedule_id or 'report'}:2026-03-08T07:30:00.000Z, as the history lists it"
        }
    )


def _limit(query: dict[str, Any]) -> int:
    settings = service().settings
    limit: int = query.get("limit", settings.default_page_size)
    if limit > settings.max_page_size:
        raise InvalidInput({"limit": f"at most {settings.max_page_size}"})
    return limit


@blp.route("/schedule/preview", methods=["POST"])
@blp.arguments(PreviewSchema, error_status_code=400)
@blp.response(200, PreviewAnswerSchema)
@blp.doc(operationId="previewSchedule")
@problems(400, 413, 415)
def preview(body: dict[str, Any]) -> PreviewView:
    """The next fire times of a schedule (UTC and local) and a plain-English description.

    Nothing is stored: the times are those of a schedule accepted now, or at `after` if given;
    or, with `before`, the last times before that moment (what should have fired), oldest first.
    """
    timing, names = body["schedule"]
    with as_sent(names):
        found = service().checks.preview(
            timing, body["count"], body.get("after"), body.get("before"), body.get("id")
        )
    return PreviewView(found)


__all__ = ["NotFound", "blp"]
