"""Marshmallow schemas of the API's answers about a tenant's business calendars."""

from __future__ import annotations

from typing import Any

from marshmallow import fields

from scheduler_service.presenting.fields import Instant, Open, shown


class CalendarSummarySchema(Open):
    name = shown(fields.String())
    description = shown(fields.String())
    revision = shown(fields.Integer(), "1 when made, one more at each replace")
    updated_at = shown(Instant())
    date_count = fields.Method("count_dates", metadata={"description": "how many dates it holds"})
    first_date = fields.Method("first", allow_none=True)
    last_date = fields.Method("last", allow_none=True)

    def count_dates(self, calendar: Any) -> int:
        return len(calendar.dates)

    def first(self, calendar: Any) -> str | None:
        return calendar.dates[0].isoformat() if calendar.dates else None

    def last(self, calendar: Any) -> str | None:
        return calendar.dates[-1].isoformat() if calendar.dates else None


class CalendarSchema(CalendarSummarySchema):
    dates = shown(fields.List(fields.Date()), "the local dates that are not business days, sorted")


class CalendarListSchema(Open):
    items = shown(
        fields.List(fields.Nested(CalendarSummarySchema)),
        "the tenant's calendars, by name, without their dates",
    )
