"""``/scheduler-service/v1/schedule/{id}/…``: what an owner does to a schedule beside changing
it: pause, resume, trigger one run now, backfill a past range. On the schedules' blueprint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from flask import Response, g
from marshmallow import Schema

from scheduler_service.auth import request_actor
from scheduler_service.presenting.schemas import (
    BackfillAnswerSchema,
    ScheduleViewSchema,
    TriggeredSchema,
)
from scheduler_service.requests.paths import check_id
from scheduler_service.requests.schedule import (
    BackfillSchema,
    PauseSchema,
    SkipSchema,
    UnskipQuerySchema,
)
from scheduler_service.routes.common import View, schedule_answer, service
from scheduler_service.routes.schedules import blp
from shared.backfill import Backfill
from shared.model import Occurrence, PauseIntent
from shared.ports import Role


def action(name: str, answer: type[Schema]) -> Callable[[View], View]:
    """The route of ``POST /schedule/{id}/<name>``: an action of a writer on one schedule,
    with no body, answering ``202`` with ``answer`` (operation ``<name>Schedule``)."""

    def decorate(view: View) -> View:
        routed = blp.problems(400, 404)(view)
        routed = blp.doc(operationId=f"{name}Schedule")(routed)
        routed = blp.response(202, answer)(routed)
        routed = blp.requires(Role.WRITE)(routed)
        return cast(View, blp.route(f"/schedule/<schedule_id>/{name}", methods=["POST"])(routed))

    return decorate


@blp.posting(
    "/schedule/<schedule_id>/pause",
    Role.WRITE,
    PauseSchema,
    (202, ScheduleViewSchema),
    "pauseSchedule",
    404,
    required=False,
)
def pause_schedule(body: dict[str, Any], schedule_id: str) -> Response:
    """Stop firing until resumed, or until a time

    Occurrences that fall in the pause are skipped. With `until` it resumes by itself then,
    the misfire policy applied to the occurrences the pause missed; `note` says why. The
    schedule shows both, and who set the pause (`pause_set_by`: the API key's name,
    `console`, or `system`). Pausing a paused or completed schedule changes nothing."""
    check_id(schedule_id)
    intent = PauseIntent(body.get("until"), body.get("note"), g.caller_name)
    return schedule_answer(
        service().changes.pause(g.tenant, schedule_id, request_actor(), intent), 202
    )


@action("resume", ScheduleViewSchema)
def resume_schedule(schedule_id: str) -> Response:
    """Fire again from now on (the occurrences of the pause are not caught up)."""
    check_id(schedule_id)
    return schedule_answer(service().changes.resume(g.tenant, schedule_id, request_actor()), 202)


@action("trigger", TriggeredSchema)
def trigger_schedule(schedule_id: str) -> Occurrence:
    """Run the schedule once now, beside its own times (even while paused).

    The run has its own occurrence id and appears in the history with `manual: true`.
    """
    check_id(schedule_id)
    return service().runs.trigger(g.tenant, schedule_id)


@blp.posting(
    "/schedule/<schedule_id>/backfill",
    Role.WRITE,
    BackfillSchema,
    (202, BackfillAnswerSchema),
    "backfillSchedule",
    404,
)
def backfill_schedule(body: dict[str, Any], schedule_id: str) -> Backfill:
    """Run the occurrences of a past range that did not run

    The range: `from` included, `to` excluded, at most 366 days and 1,000 occurrences. Those
    that did not run: `fire_all` each, `fire_once` only the latest. Each has its normal
    occurrence id (and `Idempotency-Key`), so the receiver can deduplicate; those that already
    succeeded, failed (see dead letters) or are in flight are left out, and so are those the
    schedule would never have fired (before its `start`, after its `end`, beyond its
    `max_occurrences`). They run now, as manual runs: even while paused, whatever the grace."""
    check_id(schedule_id)
    runs = service().runs
    return runs.backfill(g.tenant, schedule_id, body["start"], body["end"], body["policy"])


@blp.posting(
    "/schedule/<schedule_id>/skip",
    Role.WRITE,
    SkipSchema,
    (202, ScheduleViewSchema),
    "skipOccurrences",
    404,
)
def skip_occurrences(body: dict[str, Any], schedule_id: str) -> Response:
    """Skip some of the next occurrences

    The next `count` occurrences, or the one at `at`. `count` counts the occurrences the
    schedule's rule has from now (paused or not; fewer where a bounded rule has fewer left);
    `at` must be an occurrence the schedule has, still to come, else a `400` naming `at`.
    Each is skipped at its time, even if already sent to the executors: recorded `skipped`
    (`superseded: true`, listed by `?status=skipped`), never called. The schedule shows the
    skips still to come in `skips`; `DELETE …/skip` undoes them before they are due. A
    manual run, a backfill or a replay still runs."""
    check_id(schedule_id)
    changes = service().changes
    skipped = changes.skip(
        g.tenant, schedule_id, request_actor(), body.get("count"), body.get("at")
    )
    return schedule_answer(skipped, 202)


@blp.route("/schedule/<schedule_id>/skip", methods=["DELETE"])
@blp.requires(Role.WRITE)
@blp.arguments(UnskipQuerySchema, location="query", error_status_code=400)
@blp.response(202, ScheduleViewSchema)
@blp.doc(operationId="undoSkips")
@blp.problems(400, 404)
def undo_skips(query: dict[str, Any], schedule_id: str) -> Response:
    """Undo skips still to come

    Every one, or with `?at=` the one at that time (a `400` naming `at` where none is pending
    then)."""
    check_id(schedule_id)
    changes = service().changes
    return schedule_answer(changes.unskip(g.tenant, schedule_id, request_actor(), query["at"]), 202)
