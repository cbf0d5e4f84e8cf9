"""The schedules: the list (search, sort, filters, row and bulk actions), one schedule (its
definition in words, next times, recent runs) and its actions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flask import g, request, url_for
from marshmallow import ValidationError
from werkzeug import Response

from scheduler_service.auth import request_actor
from scheduler_service.console.pages import (
    PREFIX,
    blp,
    can,
    confirmed,
    console_target,
    htmx_redirect,
    limited_ids,
    page,
    pretty_json,
    service,
    this_page,
)
from scheduler_service.console.presenting import summary
from scheduler_service.presenting.views import execution_view, schedule_view, time_pair
from scheduler_service.requests.schedule import PauseSchema, SkipSchema, UnskipQuerySchema
from scheduler_service.roles import requires
from scheduler_service.service.bulk import BulkAction, BulkAnswer, Selector
from shared.calendars import BusinessCalendar
from shared.errors import InvalidInput, NotFound
from shared.model import CONSOLE, LISTED_STATUSES, PauseIntent, Schedule, ScheduleStatus
from shared.notations import upcoming_for_a_page
from shared.ports import Role, ScheduleFilter, ScheduleOrder
from shared.schedule_listing import SEARCH_LENGTH
from shared.schedule_listing import SORTS as LISTING_SORTS
from shared.timeutil import UTC, parse_iso, utc_ms

RUNS_SHOWN = 25
NEXT_TIMES = 10
# The list's orders, as the menu shows them: its ?sort= value (shared.schedule_listing.SORTS)
# → the store's order, descending, and the words.
SORTS: dict[str, tuple[ScheduleOrder, bool, str]] = {
    value: (*LISTING_SORTS[value], words)
    for value, words in (
        ("name", "Name, A to Z"),
        ("-name", "Name, Z to A"),
        ("next", "Next fire, soonest first"),
        ("-next", "Next fire, latest first"),
        ("-created", "Newest first"),
        ("created", "Oldest first"),
        ("id", "Id"),
    )
}
PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
# What a bulk action takes at most: the largest page.
BULK_MOST = max(PAGE_SIZES)
LIST_PARAMETERS = ("q", "status", "tag", "sort", "per_page", "next_after", "next_before")


def view_of(schedule: Schedule) -> dict[str, Any]:
    scheduler = service()
    return schedule_view(
        schedule, scheduler.settings.secret_headers, scheduler.reads.next_fire_time(schedule)
    )


def instant_filter(
    name: str, errors: dict[str, list[str]], args: Mapping[str, str]
) -> datetime | None:
    text = args.get(name, "").strip()
    if not text:
        return None
    try:
        moment = parse_iso(text)
        if moment.tzinfo is None:
            raise ValueError(text)
        return utc_ms(moment.astimezone(UTC))
    except (ValueError, OverflowError):
        errors[name] = ["an ISO-8601 instant with its offset, e.g. 2026-05-01T09:00Z"]
        return None


def with_parameters(target: str, **parameters: Any) -> str:
    """``target`` (a console path with its query) with ``parameters`` set (``None``: left out)."""
    parts = urlsplit(target)
    kept = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if name not in parameters
    ]
    added = [(name, str(value)) for name, value in parameters.items() if value is not None]
    return urlunsplit(parts._replace(query=urlencode(kept + added)))


def list_selection(
    errors: dict[str, list[str]], args: Mapping[str, str] | None = None
) -> tuple[ScheduleFilter, int]:
    """The filter, order and page size of the list's query (or of ``args``: a form that
    carries it), each bad parameter in ``errors``."""
    args = request.args if args is None else args
    status = args.get("status", "")
    if status not in ("", *LISTED_STATUSES):
        errors["status"] = [f"one of {', '.join(LISTED_STATUSES)}"]
    sort = args.get("sort", "name")
    if sort not in SORTS:
        errors["sort"] = [f"one of {', '.join(SORTS)}"]
    per_page = args.get("per_page", str(DEFAULT_PAGE_SIZE))
    if per_page not in {str(size) for size in PAGE_SIZES}:
        errors["per_page"] = [f"one of {', '.join(map(str, PAGE_SIZES))}"]
    search = args.get("q", "").strip()
    if len(search) > SEARCH_LENGTH:
        errors["q"] = [f"at most {SEARCH_LENGTH} characters"]
    order, descending, _ = SORTS.get(sort, SORTS["name"])
    selection = ScheduleFilter(
        status=ScheduleStatus(status) if status and "status" not in errors else None,
        tag=args.get("tag", "").strip() or None,
        next_after=instant_filter("next_after", errors, args),
        next_before=instant_filter("next_before", errors, args),
        search=search or None,
        order=order,
        descending=descending,
    )
    return selection, int(per_page) if "per_page" not in errors else DEFAULT_PAGE_SIZE


@blp.route("/schedules")
@requires(Role.READ)
def schedules() -> tuple[str, int]:
    errors: dict[str, list[str]] = {}
    selection, per_page = list_selection(errors)
    cursor = request.args.get("cursor") or None
    items: list[dict[str, Any]] = []
    next_cursor = None
    matching = None
    if not errors:
        try:
            found = service().reads.list_schedules(g.tenant, selection, per_page, cursor)
        except InvalidInput as exc:
            errors.update(exc.fields)
        else:
            items = [view_of(schedule) for schedule in found.items]
            next_cursor = found.next_cursor
            selector = Selector.of_listing(selection)
            if items and can(Role.WRITE.value) and not selector.empty:
                matching = service().bulk.count(g.tenant, selector)
    filters = {name: request.args.get(name, "") for name in LIST_PARAMETERS}
    return (
        page(
            "console/schedules.html",
            items=items,
            filters=filters,
            kept={name: value for name, value in filters.items() if value},
            errors=errors,
            next_cursor=next_cursor,
            paged=cursor is not None,
            sorts=SORTS,
            page_sizes=PAGE_SIZES,
            statuses=LISTED_STATUSES,
            here=this_page(*NOTICES),
            matching=matching,
        ),
        400 if errors else 200,
    )


@dataclass(frozen=True)
class Outcome:
    """What a bulk action did, as the list's notice says it."""

    done: list[str]
    missing: list[str]


BULK_ACTIONS = {"pause": "Paused", "resume": "Resumed", "delete": "Deleted"}
# The parameters that say what was just done, not what the list shows.
NOTICES = ("bulk", "done", "missing", "deleted", "unchanged", "failed")
# How long "all matching" works in one request before it asks to go on (the API's parts, one
# after the other).
ALL_MATCHING_SECONDS = 10.0
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
        part = bulk.run(g.tenant, BulkAction(action), selector, token, actor=request_actor())
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


def next_times(
    schedule: Schedule, now: datetime, calendar: BusinessCalendar | None
) -> list[dict[str, str | None]]:
    if schedule.status is ScheduleStatus.COMPLETED:
        return []
    timing = schedule.live_definition.timing
    times = upcoming_for_a_page(
        timing, schedule.accepted_at, now, NEXT_TIMES, schedule.schedule_id, calendar
    )
    return [time_pair(moment, timing.timezone) for moment in times]


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    height: float
    status: str
    title: str


def lateness_chart(runs: list[dict[str, Any]], width: float = 600, height: float = 80) -> list[Bar]:
    """One bar a run, oldest on the left: its height the lateness, its colour the outcome. A
    slot is at least 1/RUNS_SHOWN of the width, so a few runs make thin bars, not wide blocks."""
    shown = list(reversed(runs))
    tallest = max((run["lateness_ms"] or 0.0 for run in shown), default=0.0) or 1.0
    step = width / max(len(shown), RUNS_SHOWN)
    return [
        Bar(
            x=index * step,
            width=max(step - 2, 1.0),
            height=max(2.0, height * (run["lateness_ms"] or 0.0) / tallest),
            status=run["status"],
            title=f"{run['scheduled_time']} {run['status']}, "
            f"{run['lateness_ms'] if run['lateness_ms'] is not None else '-'} ms late",
        )
        for index, run in enumerate(shown)
    ]


def recent_runs(schedule_id: str) -> list[dict[str, Any]]:
    _, found = service().reads.list_executions(g.tenant, schedule_id, RUNS_SHOWN, None)
    secret_patterns = service().settings.secret_headers
    return [execution_view(run, secret_patterns) for run in found.items]


@blp.route("/schedules/<schedule_id>")
@requires(Role.READ)
def schedule(schedule_id: str) -> str | tuple[str, int]:
    try:
        found = service().reads.get(g.tenant, schedule_id)
    except NotFound:
        if request.args.get("accepted"):
            # Creation is asynchronous: the page asks again until the processor has stored it.
            return page("console/pending.html", schedule_id=schedule_id), 202
        raise
    runs = recent_runs(schedule_id)
    view = view_of(found)
    return page(
        "console/schedule.html",
        schedule=view,
        summary=summary(view),
        raw=pretty_json(view),
        times=next_times(found, service().clock.now(), service().reads.business_calendar(found)),
        runs=runs,
        chart=lateness_chart(runs),
    )


@blp.route("/schedules/<schedule_id>/runs")
@requires(Role.READ)
def runs(schedule_id: str) -> str:
    service().reads.get(g.tenant, schedule_id)
    found = recent_runs(schedule_id)
    return page(
        "console/runs.html",
        schedule={"id": schedule_id},
        runs=found,
        chart=lateness_chart(found),
    )


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
