"""``POST /scheduler-service/v1/schedule/preview``: a timing's times and description, nothing
stored. On the schedules' blueprint."""

from __future__ import annotations

from typing import Any

from flask import g

from scheduler_service.presenting.schemas import PreviewAnswerSchema
from scheduler_service.presenting.views import PreviewView
from scheduler_service.requests.schedule import PreviewSchema, as_sent
from scheduler_service.routes.common import service
from scheduler_service.routes.schedules import blp
from shared.ports import Role


@blp.posting(
    "/schedule/preview", Role.READ, PreviewSchema, (200, PreviewAnswerSchema), "previewSchedule"
)
def preview(body: dict[str, Any]) -> PreviewView:
    """The next fire times of a schedule (UTC and local) and a plain-English description.

    Nothing is stored: the times are those of a schedule accepted now, or at `after` if given;
    or, with `before`, the last times before that moment (what should have fired), oldest first.
    With `calendar`, on the business days of the tenant's calendars it names, as a schedule
    with that `calendar` fires.
    """
    timing, names = body["schedule"]
    checks = service().checks
    calendar = checks.business_calendar(g.tenant, body["calendar"])
    with as_sent(names):
        found = checks.preview(
            timing, body["count"], body.get("after"), body.get("before"), body.get("id"), calendar
        )
    return PreviewView(found)
