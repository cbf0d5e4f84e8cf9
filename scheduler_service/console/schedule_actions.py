"""One schedule's actions, from its page or its row in the list: pause, resume, trigger,
delete, skip and unskip."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import g, request, url_for
from marshmallow import ValidationError
from werkzeug import Response

from scheduler_service.auth import request_actor
from scheduler_service.console.pages import (
    PREFIX,
    blp,
    confirmed,
    console_target,
    htmx_redirect,
    page,
    service,
    with_parameters,
)
from scheduler_service.requests.schedule import PauseSchema, SkipSchema, UnskipQuerySchema
from scheduler_service.roles import requires
from shared.errors import InvalidInput
from shared.model import CONSOLE, PauseIntent
from shared.ports import Role

# A pause from the console: no end, no note unless its page's fields say so.
CONSOLE_PAUSE = PauseIntent(by=CONSOLE)


def pause_intent() -> PauseIntent:
    """The pause's ``until`` and ``note`` from the schedule page's fields (blank: none), as
    the API reads them; ``InvalidInput`` naming the field otherwise."""
    sent = {name: request.form[name] for name in ("until", "note") if request.form.get(name)}
    try:
        body = PauseSchema().load(sent)
    except ValidationError as exc:
        raise InvalidInput(
            {name: " ".join(map(str, why)) for name, why in exc.messages_dict.items()}
        ) from None
    return PauseIntent(body["until"], body["note"], CONSOLE)


def act_on(action: str, schedule_id: str, intent: PauseIntent = CONSOLE_PAUSE) -> None:
    scheduler = service()
    if action == "delete":
        scheduler.changes.delete(g.tenant, schedule_id, request_actor())
    elif action == "pause":
        scheduler.changes.pause(g.tenant, schedule_id, request_actor(), intent)
    elif action == "resume":
        scheduler.changes.resume(g.tenant, schedule_id, request_actor())
    else:
        scheduler.runs.trigger(g.tenant, schedule_id)


@blp.route(
    "/schedules/<schedule_id>/<any(pause, resume, trigger, delete):action>", methods=["POST"]
)
@requires(Role.WRITE)
def act(schedule_id: str, action: str) -> Response | str | tuple[str, int]:
    """One schedule's action, from its page or its row in the list (which names where to go
    back to in ``next``). A delete is confirmed first."""
    if action == "delete" and not confirmed():
        found = service().reads.get(g.tenant, schedule_id)
        back = console_target(url_for("console.schedule", schedule_id=schedule_id))
        return page(
            "console/confirm.html",
            question="Delete this schedule for good? It will not fire again.",
            names=[found.live_definition.name or schedule_id],
            action=request.path,
            fields=[("next", request.form.get("next", ""))],
            verb="Delete",
            back=back,
        )
    try:
        act_on(action, schedule_id, pause_intent() if action == "pause" else CONSOLE_PAUSE)
    except InvalidInput as exc:
        back = console_target(url_for("console.schedule", schedule_id=schedule_id))
        return refused_fields(exc.fields, back)
    if action == "delete":
        target = console_target(url_for("console.schedules"))
        if target.startswith(f"{PREFIX}/schedules/{schedule_id}"):
            target = url_for("console.schedules")
        return htmx_redirect(with_parameters(target, deleted=schedule_id, bulk=None))
    return htmx_redirect(console_target(url_for("console.schedule", schedule_id=schedule_id)))


@blp.route("/schedules/<schedule_id>/skip", methods=["POST"])
@requires(Role.WRITE)
def skip(schedule_id: str) -> Response | tuple[str, int]:
    """Skip the next ``count`` occurrences or the one ``at``, from the schedule's page (its
    fields read as the API reads them)."""
    sent = {name: request.form[name] for name in ("count", "at") if request.form.get(name)}
    back = console_target(url_for("console.schedule", schedule_id=schedule_id))
    try:
        if "count" in sent and sent["count"].isdigit():
            sent_count: Any = int(sent["count"])
            sent = {**sent, "count": sent_count}
        body = SkipSchema().load(sent)
        count, at = body.get("count"), body.get("at")
        service().changes.skip(g.tenant, schedule_id, request_actor(), count, at)
    except ValidationError as exc:
        return refused_fields({name: why for name, why in exc.messages_dict.items()}, back)
    except InvalidInput as exc:
        return refused_fields(exc.fields, back)
    return htmx_redirect(back)


@blp.route("/schedules/<schedule_id>/unskip", methods=["POST"])
@requires(Role.WRITE)
def unskip(schedule_id: str) -> Response | tuple[str, int]:
    """Undo the skips still to come, or the one ``at``."""
    back = console_target(url_for("console.schedule", schedule_id=schedule_id))
    try:
        at = UnskipQuerySchema().load({"at": request.form["at"]} if request.form.get("at") else {})
        service().changes.unskip(g.tenant, schedule_id, request_actor(), at["at"])
    except ValidationError as exc:
        return refused_fields({name: why for name, why in exc.messages_dict.items()}, back)
    except InvalidInput as exc:
        return refused_fields(exc.fields, back)
    return htmx_redirect(back)


def refused_fields(fields: Mapping[str, Any], back: str) -> tuple[str, int]:
    """The page that says which fields were refused and why, and where to go back to."""
    problem = "; ".join(
        f"{name}: {' '.join(map(str, why)) if isinstance(why, list) else why}"
        for name, why in fields.items()
    )
    return page("console/refused.html", problem=f"Not done. {problem}", back=back), 400
