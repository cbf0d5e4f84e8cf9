"""``POST /scheduler-service/v1/schedule/{id}/diff``: what a ``PUT`` of the body would change,
nothing stored (``scheduler apply``'s plan). On the schedules' blueprint."""

from __future__ import annotations

from flask import g

from scheduler_service.presenting.schemas import ComparisonSchema
from scheduler_service.requests.paths import check_id
from scheduler_service.requests.schedule import ScheduleBodySchema, ScheduleRequest, as_sent
from scheduler_service.routes.common import service
from scheduler_service.routes.schedules import blp
from scheduler_service.service.comparing import Comparison, compare
from shared.errors import InvalidInput
from shared.ports import Role


@blp.posting(
    "/schedule/<schedule_id>/diff",
    Role.READ,
    ScheduleBodySchema,
    (200, ComparisonSchema),
    "diffSchedule",
)
def diff_schedule(body: ScheduleRequest, schedule_id: str) -> Comparison:
    """What a PUT of this body to the schedule would do, storing nothing

    The body is read and checked as the `PUT` reads it (the same 400 for a bad field; masked
    secrets keep the stored ones), then compared with the stored schedule: `create` (none
    stored, or deleted), `update` with the paths of the members it changes, or `unchanged`.
    Only the caller's tenant is read: another tenant's schedule of the same id is not seen.
    A read key may ask: nothing changes."""
    if body.schedule_id not in (None, schedule_id):
        raise InvalidInput({"id": f"does not match the id in the path ({schedule_id!r})"})
    check_id(schedule_id)
    with as_sent(body.names):
        return compare(
            service().creation,
            g.tenant,
            schedule_id,
            body.definition,
            fire_if_past=body.fire_if_past,
        )
