"""The list's bulk actions: pause, resume or delete the schedules ticked, or every schedule
its search matches."""

from __future__ import annotations

import time

from flask import g, request, url_for
from werkzeug import Response

from scheduler_service.auth import request_actor
from scheduler_service.console.pages import (
    blp,
    confirmed,
    console_target,
    htmx_redirect,
    limited_ids,
    page,
    service,
    with_parameters,
)
from scheduler_service.console.schedule_actions import CONSOLE_PAUSE, act_on
from scheduler_service.console.schedule_list_page import LIST_PARAMETERS, PAGE_SIZES, list_selection
from scheduler_service.roles import requires
from scheduler_service.service.bulk import BulkAction, BulkAnswer, Selector
from shared.errors import NotFound
from shared.model import Schedule
from shared.ports import Role

BULK_ACTIONS = {"pause": "Paused", "resume": "Resumed", "delete": "Deleted"}
# What a bulk action takes at most: the largest page.
BULK_MOST = max(PAGE_SIZES)
# How long "all matching" works in one request before it asks to go on (the API's parts, one
# after the other).
ALL_MATCHING_SECONDS = 10.0


@blp.route("/schedules/bulk", methods=["POST"])
@requires(Role.WRITE)
def bulk() -> Response | tuple[str, int]:
    """Pause, resume or delete the schedules ticked in the list (the tenant's only: another's
    id is not found). A delete is confirmed first."""
    action = request.form.get("action", "")
    back = console_target(url_for("console.schedules"))
    ids = limited_ids("id", BULK_MOST)
    if action not in BULK_ACTIONS or ids is None:
        problem = (
            f"Choose one of {', '.join(BULK_ACTIONS)}."
            if action not in BULK_ACTIONS
            else f"At most {BULK_MOST} schedules at once."
        )
        return page("console/refused.html", problem=problem, back=back), 400
    if action == "delete" and ids and not confirmed():
        named = service().reads.schedules_by_id(g.tenant, ids)
        return page(
            "console/confirm.html",
            question=f"Delete {len(ids)} schedule{'s' if len(ids) != 1 else ''} for good? "
            "They will not fire again.",
            names=[named[i].live_definition.name or i if i in named else i for i in ids],
            action=url_for("console.bulk"),
            fields=[("action", action), ("next", back), *(("id", i) for i in ids)],
            verb="Delete",
            back=back,
        ), 200
    done: list[str] = []
    missing: list[str] = []
    for schedule_id in ids:
        try:
            act_on(action, schedule_id)
        except NotFound:
            missing.append(schedule_id)
        else:
            done.append(schedule_id)
    return htmx_redirect(
        with_parameters(
            back, bulk=action, done=len(done), missing=",".join(missing) or None, deleted=None
        )
    )


@blp.route("/schedules/all-matching", methods=["POST"])
@requires(Role.WRITE)
def all_matching() -> Response | tuple[str, int]:
    """Pause, resume or delete every schedule the list's search matches (the form carries its
    filters), through the API's bulk operation: the count is confirmed first; then its parts
    one after the other, for ``ALL_MATCHING_SECONDS`` at most, after which the page asks to go
    on from where it stopped."""
    action = request.form.get("action", "")
    back = console_target(url_for("console.schedules"))
    errors: dict[str, list[str]] = {}
    given = {name: request.form[name] for name in LIST_PARAMETERS if request.form.get(name)}
    selection, _ = list_selection(errors, given)
    selector = Selector.of_listing(selection)
    if action not in BULK_ACTIONS or errors or selector.empty:
        if action not in BULK_ACTIONS:
            problem = f"Choose one of {', '.join(BULK_ACTIONS)}."
        elif errors:
            problem = "; ".join(f"{name}: {' '.join(why)}" for name, why in errors.items())
        else:
            problem = "Search or filter the list first: all matching never means every schedule."
        return page("console/refused.html", problem=problem, back=back), 400
    filters = list(given.items())
    fields = [("action", action), ("next", back), *filters]
    bulk = service().bulk
    if not confirmed():
        found = bulk.dry_run(g.tenant, selector)
        return confirm_all(action, found.matched, found.sample, fields, back)
    token = request.form.get("continue") or None
    deadline = time.monotonic() + ALL_MATCHING_SECONDS
    done = BulkAnswer()
    while True:
        part = bulk.run(
            g.tenant,
            BulkAction(action),
            selector,
            token,
            actor=request_actor(),
            intent=CONSOLE_PAUSE,
        )
        done.changed, done.unchanged = done.changed + part.changed, done.unchanged + part.unchanged
        done.failed += part.failed
        token = part.continue_token
        if part.done or token is None:
            break
        if time.monotonic() >= deadline:
            so_far = f"{BULK_ACTIONS[action]} {done.changed} so far ({done.unchanged} already so)"
            return page(
                "console/confirm.html",
                question=f"{so_far}; more match this search. Go on?",
                names=[],
                action=url_for("console.all_matching"),
                fields=[*fields, ("continue", token)],
                verb="Go on",
                back=back,
            ), 200
    notice = {"unchanged": done.unchanged or None, "failed": done.failed or None}
    return htmx_redirect(
        with_parameters(back, bulk=action, done=done.changed, missing=None, deleted=None, **notice)
    )


def confirm_all(
    action: str,
    matched: int,
    sample: list[Schedule],
    fields: list[tuple[str, str]],
    back: str,
) -> tuple[str, int]:
    """The page that asks before acting on every schedule of a search, with their count."""
    verb = {"pause": "Pause", "resume": "Resume", "delete": "Delete"}[action]
    plural = "s" if matched != 1 else ""
    question = f"{verb} all {matched:,} schedule{plural} matching this search?"
    if action == "delete":
        question += " They will not fire again."
    names = [schedule.live_definition.name or schedule.schedule_id for schedule in sample]
    if matched > len(names):
        names.append(f"… and {matched - len(names):,} more")
    return page(
        "console/confirm.html",
        question=question,
        names=names,
        action=url_for("console.all_matching"),
        fields=fields,
        verb=f"{verb} {matched:,}",
        back=back,
    ), 200
