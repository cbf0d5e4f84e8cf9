"""The body of ``POST /calendars`` and ``PUT /calendars/{name}``: the dates, or an iCalendar
file of holidays (``shared.calendar_files``), one of the two."""

from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from scheduler_service.requests.fields import domain
from shared.calendars import MAX_DATES, MAX_DESCRIPTION, MAX_ICS_CHARS, NAME_RULE, name_problem
from shared.errors import InvalidInput


def _check_name(name: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)


class CalendarBodySchema(Schema):
    class Meta:
        unknown = RAISE

    name = fields.String(
        validate=domain(_check_name),
        metadata={"description": f"the calendar's name: {NAME_RULE}; in a PUT, the path's"},
    )
    description = fields.String(
        load_default="",
        validate=validate.Length(max=MAX_DESCRIPTION),
        metadata={"description": "what the calendar is (shown in listings)"},
    )
    dates = fields.List(
        fields.Date(),
        validate=validate.Length(max=MAX_DATES),
        metadata={
            "description": f"the local dates that are not business days, YYYY-MM-DD; at most "
            f"{MAX_DATES}. Give dates or ics"
        },
    )
    ics = fields.String(
        validate=validate.Length(max=MAX_ICS_CHARS),
        metadata={
            "description": "an iCalendar file (RFC 5545) of holidays, as text: each all-day "
            "VEVENT is a date (or its dates to DTEND); a recurring one (RRULE) counts from the "
            "start of last year to ten years ahead; a timed event is refused. Give dates or ics"
        },
    )


def check_calendar_name(name: str) -> None:
    """A path's calendar name, or ``InvalidInput`` naming ``name``."""
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInput({"name": problem})
