"""``POST /scheduler-service/v1/schedules/bulk``: pause, resume, delete or patch every schedule
a selector matches (``scheduler_service.service.bulk``). On the schedules' blueprint."""

from __future__ import annotations

from typing import Any

from flask import Response, g

from scheduler_service.auth import request_actor
from scheduler_service.presenting.bulk_schemas import BulkAnswerSchema
from scheduler_service.presenting.views import json_answer
from scheduler_service.requests.bulk import BulkSchema
from scheduler_service.requests.headers import IdempotencyHeader, idempotent_request
from scheduler_service.requests.patch import patched_request
from scheduler_service.routes.common import present, service
from scheduler_service.routes.schedules import blp
from scheduler_service.service.bulk import BulkAction, DryRun
from shared.model import PauseIntent, ScheduleDefinition
from shared.ports import Role

BULK_ANSWER = BulkAnswerSchema()


@blp.route("/schedules/bulk", methods=["POST"])
@blp.requires(Role.WRITE)
@blp.arguments(BulkSchema, error_status_code=400)
@blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)
@blp.response(200, BulkAnswerSchema)
@blp.doc(operationId="bulkSchedules")
@blp.problem(
    409,
    "The Idempotency-Key was used with another request, or its first request is still at work "
    "(with Retry-After: repeat it then for that one's answer)",
)
@blp.problems(400, 413, 415)
def bulk_schedules(body: dict[str, Any], headers: dict[str, Any]) -> Response:
    """Pause, resume, delete or patch every schedule a selector matches

    The selector's criteria (`tag`, `name_prefix`, `ids`, `status`) all hold; at least one is
    required: an empty selector is a 400, never every schedule. A `dry_run` answers how many
    match and the first few, and changes nothing.

    A real one works a page at a time, each page a batch of guarded writes, for about two
    seconds per request, and answers what it did: `done` false with a `continue` token when
    more remain. Send the same body with `continue` set to it (and the same `Idempotency-Key`)
    until `done`; each part is stateless and safe to repeat: schedules already changed count
    as `unchanged`, and with an `Idempotency-Key` a repeated part answers as it first did (a
    repeat that comes while the first is still at work is a 409 naming the key, with
    `Retry-After`: repeated then, it gets the first's answer).
    A `patch` is checked as `PATCH /schedule/{id}` checks it, on every schedule of the first
    page before anything changes (a 400 naming the field); a schedule of a later page that it
    does not fit is counted as failed, with its reason.
    """
    selector = body["selector"]
    bulk = service().bulk
    if body["dry_run"]:
        found = bulk.dry_run(g.tenant, selector)
        shown = DryRun(found.matched, [present(schedule) for schedule in found.sample])
        return json_answer(BULK_ANSWER, shown, 200)
    patch = body.get("patch")

    def patched(stored: ScheduleDefinition) -> ScheduleDefinition:
        return patched_request(stored, patch or {}).definition

    answer = bulk.run(
        g.tenant,
        body["action"],
        selector,
        body.get("continue_token"),
        idempotent_request(headers),
        patched if body["action"] is BulkAction.PATCH else None,
        actor=request_actor(),
        intent=PauseIntent(by=g.caller_name),
    )
    replayed = {"Idempotent-Replayed": "true"} if answer.replayed else {}
    return json_answer(BULK_ANSWER, answer, 200, replayed)
