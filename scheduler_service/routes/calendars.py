"""``/scheduler-service/v1/calendars``: the tenant's business calendars (``shared.calendars``),
which schedules name in ``calendar.exclude``. Managed by admin keys only; a tenant sees, uses
and deletes only its own."""

from __future__ import annotations

from typing import Any

from flask import Response, g, url_for
from flask.views import MethodView

from scheduler_service.presenting.calendar_schemas import CalendarListSchema, CalendarSchema
from scheduler_service.presenting.views import json_answer
from scheduler_service.requests.calendars import CalendarBodySchema, check_calendar_name
from scheduler_service.routes.common import Blueprint, service
from scheduler_service.service.calendars import CalendarGiven
from shared.errors import InvalidInput
from shared.ports import Calendar, Role

blp = Blueprint(
    "calendars",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Calendars: the tenant's business calendars, the dates schedules exclude",
)
CALENDAR = CalendarSchema()
NO_CALENDAR = "No such calendar (unknown, or another tenant's)"
LOCATION = {"Location": {"description": "the calendar's URL", "schema": {"type": "string"}}}


@blp.route("/calendars")
class CalendarsResource(MethodView):
    @blp.requires(Role.ADMIN)
    @blp.response(200, CalendarListSchema)
    @blp.doc(operationId="listCalendars")
    @blp.problems()
    def get(self) -> dict[str, Any]:
        """The tenant's calendars, by name, without their dates."""
        return {"items": service().calendars.listed(g.tenant)}

    @blp.requires(Role.ADMIN)
    @blp.arguments(CalendarBodySchema, error_status_code=400)
    @blp.response(201, CalendarSchema, headers=LOCATION)
    @blp.doc(operationId="createCalendar")
    @blp.problem(409, "The tenant has a calendar of that name: replace it with PUT")
    @blp.problems(400, 413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Make a calendar from its dates, or from an iCalendar file of holidays"""
        if "name" not in body:
            raise InvalidInput({"name": "Missing data for required field."})
        calendar = service().calendars.create(g.tenant, body["name"], _given(body))
        return _answer(calendar, 201)


@blp.route("/calendars/<name>")
class CalendarResource(MethodView):
    @blp.requires(Role.ADMIN)
    @blp.response(200, CalendarSchema)
    @blp.doc(operationId="getCalendar")
    @blp.problem(404, NO_CALENDAR)
    @blp.problems(400)
    def get(self, name: str) -> Response:
        """The calendar with its dates."""
        check_calendar_name(name)
        return _answer(service().calendars.get(g.tenant, name), 200)

    @blp.requires(Role.ADMIN)
    @blp.arguments(CalendarBodySchema, error_status_code=400)
    @blp.response(200, CalendarSchema)
    @blp.doc(operationId="replaceCalendar")
    @blp.problem(404, NO_CALENDAR)
    @blp.problem(409, "Changed by others at the same time, again and again: try again")
    @blp.problems(400, 413, 415)
    def put(self, body: dict[str, Any], name: str) -> Response:
        """Replace the calendar's dates

        Every schedule naming it follows the new dates from the next time it computes
        (docs/time-semantics.md, Business calendars)."""
        check_calendar_name(name)
        if body.get("name", name) != name:
            raise InvalidInput({"name": f"does not match the name in the path ({name!r})"})
        calendar = service().calendars.replace(g.tenant, name, _given(body))
        return _answer(calendar, 200)

    @blp.requires(Role.ADMIN)
    @blp.response(204)
    @blp.doc(operationId="deleteCalendar")
    @blp.problem(404, NO_CALENDAR)
    @blp.problem(409, "Schedules name the calendar (the first are named): change them first")
    @blp.problems(400)
    def delete(self, name: str) -> Response:
        """Delete the calendar; refused while a schedule names it."""
        check_calendar_name(name)
        service().calendars.delete(g.tenant, name)
        return Response(status=204)


def _given(body: dict[str, Any]) -> CalendarGiven:
    return CalendarGiven(body.get("dates"), body.get("ics"), body["description"])


def _answer(calendar: Calendar, status: int) -> Response:
    location = url_for("calendars.CalendarResource", name=calendar.name)
    return json_answer(CALENDAR, calendar, status, {"Location": location})
