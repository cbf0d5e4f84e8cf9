"""Create and edit a schedule through a form of every field, with a live preview."""

from __future__ import annotations

from collections.abc import Mapping

from flask import g, redirect, request, url_for
from marshmallow import ValidationError
from werkzeug import Response

from scheduler_service.auth import request_actor
from scheduler_service.console import forms
from scheduler_service.console.pages import blp, page, service, view_of
from scheduler_service.console.schedule_page import NEXT_TIMES
from scheduler_service.presenting.problems import flatten
from scheduler_service.presenting.views import time_pair
from scheduler_service.requests.schedule import (
    PreviewSchema,
    ScheduleBodySchema,
    ScheduleRequest,
    as_sent,
)
from scheduler_service.roles import requires
from scheduler_service.service.creating import QuotaExceeded
from shared.errors import InvalidInput
from shared.model import Schedule
from shared.ports import Role


def form_page(
    values: Mapping[str, str],
    errors: list[dict[str, str]],
    editing: Schedule | None,
) -> str:
    return page(
        "console/form.html",
        values={**forms.DEFAULTS, **values} if editing is None else dict(values),
        errors=forms.place_errors(errors),
        editing=view_of(editing) if editing is not None else None,
        **forms.template_choices(),
    )


def submit(values: Mapping[str, str], editing: Schedule | None) -> Response | tuple[str, int]:
    body, errors = forms.request_body(values, editing)
    try:
        loaded: ScheduleRequest = ScheduleBodySchema().load(body)
    except ValidationError as exc:
        # An input the form could not read is left out of the body: what the API says of it
        # (that it is missing) is not shown beside the form's own message.
        unread = {error["field"] for error in errors}
        errors.extend(error for error in flatten(exc.messages) if error["field"] not in unread)
    if errors:
        return form_page(values, errors, editing), 422
    schedule_id = editing.schedule_id if editing is not None else loaded.schedule_id
    try:
        with as_sent(loaded.names):
            accepted = service().creation.accept_definition(
                g.tenant,
                schedule_id,
                loaded.definition,
                actor=request_actor(),
                fire_if_past=loaded.fire_if_past,
                operation="create" if editing is None else "replace",
            )
    except InvalidInput as exc:
        failed = [
            {"field": name, "message": message}
            for name, messages in exc.fields.items()
            for message in messages
        ]
        return form_page(values, failed, editing), 422
    except QuotaExceeded as exc:
        return form_page(values, [{"field": "", "message": str(exc)}], editing), 403
    target = url_for("console.schedule", schedule_id=accepted.schedule_id, accepted=1)
    return redirect(target, 303)


@blp.route("/schedules/new", methods=["GET", "POST"])
@requires(Role.WRITE)
def create() -> Response | str | tuple[str, int]:
    if request.method == "GET":
        return form_page({}, [], None)
    return submit(request.form, None)


@blp.route("/schedules/<schedule_id>/edit", methods=["GET", "POST"])
@requires(Role.WRITE)
def edit(schedule_id: str) -> Response | str | tuple[str, int]:
    stored = service().reads.get(g.tenant, schedule_id)
    if request.method == "GET":
        return form_page(forms.form_values(view_of(stored)), [], stored)
    return submit(request.form, stored)


@blp.route("/preview", methods=["POST"])
@requires(Role.READ)
def preview() -> str:
    """The next times and the description of the form's schedule, or why there are none."""
    schedule_part = forms.schedule_part(request.form)
    errors: list[dict[str, str]] = []
    times: list[dict[str, str | None]] = []
    description = ""
    try:
        loaded = PreviewSchema().load({"schedule": schedule_part, "count": NEXT_TIMES})
        timing, names = loaded["schedule"]
        with as_sent(names):
            found = service().checks.preview(timing, NEXT_TIMES)
        times = [time_pair(moment, found.timezone) for moment in found.times]
        description = found.description
    except ValidationError as exc:
        errors = flatten(exc.messages)
    except InvalidInput as exc:
        errors = [
            {"field": name, "message": message}
            for name, messages in exc.fields.items()
            for message in messages
        ]
    return page("console/preview.html", times=times, description=description, errors=errors)
