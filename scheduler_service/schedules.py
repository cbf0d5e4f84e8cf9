"""``/scheduler-service/v1/schedule…``: create, replace, read, delete, pause, resume, history."""

from __future__ import annotations

from typing import Any

from flask import current_app, g, request, url_for
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from scheduler_service.schemas import SCHEDULE_ID, PreviewSchema, ScheduleBodySchema
from scheduler_service.service import (
    Accepted,
    ScheduleService,
    execution_view,
    schedule_view,
    time_pair,
)
from shared.errors import InvalidInput, NotFound
from shared.model import ScheduleDefinition
from shared.recurrence import instant_in
from shared.timeutil import load_zone, parse_iso

blp = Blueprint(
    "schedules",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Schedules: each fires an HTTP call at its times",
)


def service() -> ScheduleService:
    scheduler: ScheduleService = current_app.extensions["scheduler"]
    return scheduler


def definition_from(body: dict[str, Any]) -> tuple[ScheduleDefinition, dict[str, str]]:
    timing, names = body["schedule"]
    raw = request.get_json(silent=True) or {}
    definition = ScheduleDefinition(
        timing=timing,
        payload=body["payload"],
        name=body["name"],
        description=body["description"],
        type=body["type"].upper(),
        priority=body["priority"],
        retry=body["retry"],
        misfire=body["misfire"],
        tags=tuple(body["tags"]),
        metadata=body["metadata"],
        request={"schedule": raw.get("schedule", {})},
    )
    return definition, names


def accepted_response(accepted: Accepted) -> tuple[dict[str, Any], int, dict[str, str]]:
    pair = time_pair(accepted.next_schedule_time, accepted.timezone)
    location = url_for("schedules.ScheduleResource", schedule_id=accepted.schedule_id)
    return (
        {
            "id": accepted.schedule_id,
            "status": "accepted",
            "revision": accepted.revision,
            "next_schedule_time": pair["utc"],
            "next_schedule_time_local": pair["local"],
        },
        202,
        {"Location": location},
    )


class AcceptedSchema(Schema):
    id = fields.String()
    status = fields.String()
    revision = fields.Integer()
    next_schedule_time = fields.String(allow_none=True)
    next_schedule_time_local = fields.String(allow_none=True)


@blp.route("/schedule", methods=["POST"])
@blp.arguments(ScheduleBodySchema)
@blp.response(202, AcceptedSchema)
def create_schedule(body: dict[str, Any]) -> tuple[dict[str, Any], int, dict[str, str]]:
    """Create a schedule (asynchronously: a GET may answer 404 for a few milliseconds)."""
    definition, names = definition_from(body)
    return accepted_response(
        service().accept_definition(g.tenant, body.get("id"), definition, names)
    )


@blp.route("/schedule/<schedule_id>")
class ScheduleResource(MethodView):
    @blp.response(200)
    def get(self, schedule_id: str) -> dict[str, Any]:
        """The stored schedule, its status, next time and run counts; 404 if unknown or deleted."""
        return schedule_view(service().get(g.tenant, schedule_id))

    @blp.arguments(ScheduleBodySchema)
    @blp.response(202, AcceptedSchema)
    def put(
        self, body: dict[str, Any], schedule_id: str
    ) -> tuple[dict[str, Any], int, dict[str, str]]:
        """Create or replace the schedule with this id."""
        if body.get("id") not in (None, schedule_id):
            raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
        if not SCHEDULE_ID.match(schedule_id):
            raise InvalidInput({"id": "1-128 characters: letters, digits, . _ ~ -"})
        definition, names = definition_from(body)
        accepted = service().accept_definition(g.tenant, schedule_id, definition, names)
        return accepted_response(accepted)

    @blp.response(202)
    def delete(self, schedule_id: str) -> dict[str, Any]:
        """Stop the schedule for good: no occurrence fires after this answer."""
        service().delete(g.tenant, schedule_id)
        return {"id": schedule_id, "status": "deleted"}


@blp.route("/schedule/<schedule_id>/pause", methods=["POST"])
def pause_schedule(schedule_id: str) -> Any:
    """Stop firing until resumed; occurrences that fall in the pause are skipped."""
    return schedule_view(service().pause(g.tenant, schedule_id)), 202


@blp.route("/schedule/<schedule_id>/resume", methods=["POST"])
def resume_schedule(schedule_id: str) -> Any:
    """Fire again from now on."""
    return schedule_view(service().resume(g.tenant, schedule_id)), 202


@blp.route("/schedule/<schedule_id>/executions", methods=["GET"])
def list_executions(schedule_id: str) -> Any:
    """The run history, newest first."""
    scheduler = service()
    scheduler.get(g.tenant, schedule_id)
    limit = _int_arg("limit", 50, 1, 500)
    page = scheduler.store.list_executions(g.tenant, schedule_id, limit, request.args.get("cursor"))
    return {"items": [execution_view(item) for item in page.items], "next_cursor": page.next_cursor}


@blp.route("/schedule/preview", methods=["POST"])
@blp.arguments(PreviewSchema)
def preview(body: dict[str, Any]) -> Any:
    """The next fire times of a schedule, without storing it."""
    timing, names = body["schedule"]
    scheduler = service()
    now = scheduler.clock.now()
    after = now
    if "after" in body:
        after = instant_in(parse_iso(body["after"]), load_zone(timing.timezone))
    scheduler.check(timing, names, after)
    times = scheduler.upcoming(timing, after, body["count"])
    return {"occurrences": [time_pair(moment, timing.timezone) for moment in times]}


def _int_arg(name: str, default: int, low: int, high: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput({name: f"not a whole number: {raw!r}"}) from None
    if not low <= value <= high:
        raise InvalidInput({name: f"must be between {low} and {high}"})
    return value


__all__ = ["NotFound", "blp"]
