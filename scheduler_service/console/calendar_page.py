"""The tenant's business calendars (admin): listed with their dates, made or replaced from
dates or an iCalendar file, deleted when no schedule names them (``shared.calendars``)."""

from __future__ import annotations

from datetime import date

from flask import g, request, url_for
from werkzeug import Response

from scheduler_service.console.pages import blp, htmx_redirect, page, service
from scheduler_service.roles import requires
from scheduler_service.service.calendars import (
    CalendarConflict,
    CalendarExists,
    CalendarGiven,
    NoCalendar,
)
from shared.calendars import name_problem
from shared.errors import InvalidInput
from shared.ports import Role


@blp.route("/calendars")
@requires(Role.ADMIN)
def calendars() -> str:
    return calendars_page()


def calendars_page(problem: str | None = None) -> str:
    listed = service().calendars.listed(g.tenant)
    stored = service().calendars.store.get_calendars(g.tenant, [item.name for item in listed])
    return page(
        "console/calendars.html",
        calendars=[stored[item.name] for item in listed if item.name in stored],
        problem=problem,
        done=request.args.get("done"),
    )


@blp.route("/calendars", methods=["POST"])
@requires(Role.ADMIN)
def save_calendar() -> Response | tuple[str, int]:
    """Make the calendar, or replace the one of that name: from the dates (one a line, or
    separated by commas or spaces) or, if given, the iCalendar text."""
    name = request.form.get("name", "").strip()
    ics = request.form.get("ics", "").strip() or None
    text = request.form.get("dates", "").replace(",", " ").split()
    description = request.form.get("description", "")
    calendars_ = service().calendars
    try:
        problem = name_problem(name)
        if problem is not None:
            raise InvalidInput({"name": problem})
        dates = None if ics is not None else [_date(day) for day in text]
        given = CalendarGiven(dates, ics, description)
        try:
            calendars_.create(g.tenant, name, given)
        except CalendarExists:
            calendars_.replace(g.tenant, name, given)
    except InvalidInput as exc:
        return calendars_page(str(exc)), 400
    except CalendarConflict as exc:
        return calendars_page(str(exc)), 409
    return htmx_redirect(url_for("console.calendars", done=f"saved {name}"))


@blp.route("/calendars/<name>/delete", methods=["POST"])
@requires(Role.ADMIN)
def delete_calendar(name: str) -> Response | tuple[str, int]:
    try:
        service().calendars.delete(g.tenant, name)
    except NoCalendar:
        return calendars_page(f"No calendar {name!r}."), 404
    except CalendarConflict as exc:
        return calendars_page(str(exc)), 409
    return htmx_redirect(url_for("console.calendars", done=f"deleted {name}"))


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidInput({"dates": f"{text!r} is not a date (YYYY-MM-DD)"}) from None
