"""The body of ``POST /calendars`` and ``PUT /calendars/{name}``: the dates, or an iCalendar
file of holidays (``shared.calendar_files``), one of the two; and a schedule's ``calendar``
(``CalendarRuleSchema``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validate, validates

from scheduler_service.requests.fields import Strict, domain
from shared.calendars import (
    MAX_DATES,
    MAX_DESCRIPTION,
    MAX_EXCLUDED,
    MAX_ICS_CHARS,
    NAME_RULE,
    CalendarRule,
    name_problem,
)
from shared.errors import InvalidInput
from shared.recurrence.business import Shift


def _check_name(name: str) -> None:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)


class CalendarBodySchema(Strict):
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


class CalendarRuleSchema(Strict):
    """A schedule's ``calendar``: the tenant's calendars it excludes, and the shift."""

    # ``exclude`` is a Schema's own attribute: the field is named apart.
    names = fields.List(
        fields.String(validate=domain(_check_name)),
        data_key="exclude",
        required=True,
        validate=validate.Length(min=1, max=MAX_EXCLUDED),
        metadata={
            "description": f"the names of the tenant's calendars (1 to {MAX_EXCLUDED}) whose "
            "dates are not business days; Saturdays and Sundays never are"
        },
    )
    shift = fields.String(
        load_default=Shift.SKIP.value,
        validate=validate.OneOf([shift.value for shift in Shift]),
        metadata={
            "description": "an occurrence on a day that is not a business day: skip drops it; "
            "next_business_day / previous_business_day move it to the nearest business day "
            "after / before, at the same local time (where the schedule fires at that time "
            "anyway, it fires once)"
        },
    )

    @validates("names")
    def each_once(self, names: list[str], **_: Any) -> None:
        """A name given twice is named where it is repeated (so each name's place in the
        rule is its place in the body, as the errors of the tenant's calendars name it)."""
        twice = {
            index: [f"{name!r} is named already"]
            for index, name in enumerate(names)
            if name in names[:index]
        }
        if twice:
            raise ValidationError(twice)

    @post_load
    def to_rule(self, data: dict[str, Any], **_: Any) -> CalendarRule:
        return CalendarRule(tuple(data["names"]), Shift(data["shift"]))
