"""The dead letters: by schedule name, filtered by schedule, replayed or discarded one at a
time or ticked together, through the service the API uses (same tenant rules and refusals)."""

from __future__ import annotations

from typing import Any

from flask import g, request, url_for
from werkzeug import Response

from scheduler_service.auth import request_actor
from scheduler_service.console.pages import (
    Paging,
    blp,
    confirmed,
    console_target,
    given_cursor,
    htmx_redirect,
    limited_ids,
    page,
    service,
    this_page,
    with_parameters,
)
from scheduler_service.presenting.views import dead_letter_view
from scheduler_service.roles import requires
from scheduler_service.service.running import NoDeadLetter, NotReplayable
from shared.formats import is_execution_cursor
from shared.ports import DeadLetterRequest, Role, ScheduleFilter, ScheduleOrder

PAGE_SIZE = 50
BULK_MOST = PAGE_SIZE
# A filter by name reads the dead letters of at most this many schedules whose name matches.
FILTER_SCHEDULES = 50
FILTER_LENGTH = 200
# What a bulk action's notice is made of (``?bulk=replay&bulk_done=3`` and so on).
BULK_NOTICES = ("bulk", "bulk_done", "bulk_gone", "bulk_unreplayable")
# Why a replay or discard was refused, as the list shows it (``?gone=<id>`` and so on).
REFUSALS = {
    "gone": "No dead letter {id}: replayed or discarded already, or another tenant's.",
    "unreplayable": "Not replayed: the schedule of {id} is deleted, so a replay would not fire. "
    "Discard it instead.",
}


def filtered_schedules(text: str) -> tuple[set[str] | None, bool]:
    """The schedules whose dead letters the filter shows: the one of that id (deleted ones
    too) and those whose name, tag or target host matches (as the list searches); and whether
    more matched than are read. ``None``: no filter."""
    if not text:
        return None, False
    query = ScheduleFilter(search=text, order=ScheduleOrder.NAME)
    found = service().reads.list_schedules(g.tenant, query, FILTER_SCHEDULES, None)
    return {text, *(schedule.schedule_id for schedule in found.items)}, bool(found.next_cursor)


def dead_letters_page(problem: str | None, status: int) -> tuple[str, int]:
    errors: dict[str, list[str]] = {}
    cursor = given_cursor(errors, is_execution_cursor)
    text = request.args.get("schedule", "").strip()
    if len(text) > FILTER_LENGTH:
        errors["schedule"] = [f"at most {FILTER_LENGTH} characters"]
    items: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    next_cursor = None
    partial = False
    if not errors:
        scheduler = service()
        schedule_ids, partial = filtered_schedules(text)
        found = scheduler.reads.list_dead_letters(
            DeadLetterRequest(g.tenant, PAGE_SIZE, cursor, schedule_ids)
        )
        secret_patterns = scheduler.settings.secret_headers
        items = [dead_letter_view(item, secret_patterns) for item in found.items]
        stored = scheduler.reads.schedules_by_id(g.tenant, {item["schedule_id"] for item in items})
        names = {key: schedule.live_definition.name for key, schedule in stored.items()}
        next_cursor = found.next_cursor
    html = page(
        "console/dead_letters.html",
        items=items,
        names=names,
        schedule_filter=text,
        partial=partial,
        paging=Paging(cursor, next_cursor),
        errors=errors,
        problem=problem,
        here=this_page("replayed", "discarded", "gone", "unreplayable", *BULK_NOTICES),
    )
    return html, 400 if errors else status


@blp.route("/dead-letters")
@requires(Role.READ)
def dead_letters() -> tuple[str, int]:
    problem = next(
        (
            message.format(id=request.args[why])
            for why, message in REFUSALS.items()
            if request.args.get(why)
        ),
        None,
    )
    return dead_letters_page(problem, 200)


def confirm_discard(ids: list[str], back: str, action: str, fields: list[tuple[str, str]]) -> str:
    return page(
        "console/confirm.html",
        question=f"Discard {len(ids)} dead letter{'s' if len(ids) != 1 else ''}? "
        "They will not be replayed (they stay failed in their schedules' histories).",
        names=ids,
        action=action,
        fields=[*fields, ("next", back)],
        verb="Discard",
        back=back,
    )


def handle(action: str, occurrence_id: str) -> None:
    if action == "replay":
        service().runs.replay(g.tenant, occurrence_id, request_actor())
    else:
        service().runs.discard(g.tenant, occurrence_id)


@blp.route("/dead-letters/<occurrence_id>/<any(replay, discard):action>", methods=["POST"])
@requires(Role.WRITE)
def dead_letter(occurrence_id: str, action: str) -> Response | tuple[str, int] | str:
    """Replay or discard one dead letter (a discard is confirmed first): 404 none by that
    id, 409 its schedule deleted."""
    back = console_target(url_for("console.dead_letters"))
    if action == "discard" and not confirmed():
        return confirm_discard([occurrence_id], back, request.path, [])
    try:
        handle(action, occurrence_id)
    except NoDeadLetter:
        return refused(occurrence_id, "gone", 404)
    except NotReplayable:
        return refused(occurrence_id, "unreplayable", 409)
    done = "replayed" if action == "replay" else "discarded"
    return htmx_redirect(with_parameters(back, **{done: occurrence_id}))


def refused(occurrence_id: str, why: str, status: int) -> Response | tuple[str, int]:
    """htmx is sent to the list, which says why; a plain form gets that list at once."""
    if request.headers.get("HX-Request"):
        response = Response(status=status)
        reason: dict[str, Any] = {why: occurrence_id}
        response.headers["HX-Redirect"] = url_for("console.dead_letters", **reason)
        return response
    return dead_letters_page(REFUSALS[why].format(id=occurrence_id), status)


@blp.route("/dead-letters/bulk", methods=["POST"])
@requires(Role.WRITE)
def bulk_dead_letters() -> Response | tuple[str, int] | str:
    """Replay or discard the ticked dead letters (a discard is confirmed first); the list then
    says how many were, and why the others were not."""
    action = request.form.get("action", "")
    back = console_target(url_for("console.dead_letters"))
    ids = limited_ids("id", BULK_MOST)
    if action not in ("replay", "discard") or ids is None:
        problem = (
            "Choose replay or discard."
            if action not in ("replay", "discard")
            else f"At most {BULK_MOST} dead letters at once."
        )
        return page("console/refused.html", problem=problem, back=back), 400
    if action == "discard" and ids and not confirmed():
        fields = [("action", action), *(("id", i) for i in ids)]
        return confirm_discard(ids, back, url_for("console.bulk_dead_letters"), fields)
    tally = {"done": 0, "gone": 0, "unreplayable": 0}
    for occurrence_id in ids:
        try:
            handle(action, occurrence_id)
        except NoDeadLetter:
            tally["gone"] += 1
        except NotReplayable:
            tally["unreplayable"] += 1
        else:
            tally["done"] += 1
    notice = {f"bulk_{name}": count for name, count in tally.items()}
    return htmx_redirect(with_parameters(back, bulk=action, **notice))
