"""``/console``: pages over the same service, tenant rules and keys as the API.

Server-rendered Jinja templates (``templates/console/``), with htmx (vendored in ``static/``)
for the live preview, the actions and the refreshing run list. The API key is typed once on
``/console/login``; the session cookie (HttpOnly, SameSite=Strict, Secure over HTTPS, sent only
to ``/console``, for the browser session and at most ``SESSION_HOURS``) holds it sealed with the
service's secret key, so the cookie alone never shows the key. Where the API needs no key
(``scheduler dev``) the console needs none either. Its requests count against the tenant's rate
limit (``SCHEDULER_TENANT_RATE_LIMIT``) as the API's do.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flask import (
    Blueprint,
    current_app,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from marshmallow import ValidationError
from werkzeug import Response

from scheduler_service.auth import Authenticator, AuthFailure
from scheduler_service.console import forms
from scheduler_service.errors import flatten
from scheduler_service.parameters import EXECUTIONS_CURSOR
from scheduler_service.ratelimit import TenantRateLimiter
from scheduler_service.schemas import (
    SCHEDULE_ID,
    PreviewSchema,
    ScheduleBodySchema,
    ScheduleRequest,
    as_sent,
)
from scheduler_service.service import (
    NoDeadLetter,
    NotReplayable,
    QuotaExceeded,
    ScheduleService,
)
from scheduler_service.views import (
    dead_letter_view,
    execution_view,
    occurrence_view,
    schedule_view,
    time_pair,
)
from shared.errors import InvalidInput, NotFound, Transient
from shared.model import Execution, ExecutionStatus, Schedule, ScheduleStatus
from shared.ports import ScheduleFilter
from shared.recurrence import build_recurrence
from shared.timeutil import UTC, parse_iso, utc_ms

PREFIX = "/console"
SESSION_COOKIE = "scheduler_console_session"
# What the secret box seals the session for: a value sealed for anything else does not open.
SESSION_PURPOSE = "console-session"
SESSION_HOURS = 12
PAGE_SIZE = 25
RUNS_SHOWN = 25
NEXT_TIMES = 10
# The overview reads at most this many schedules, and the runs of at most RECENT_SCHEDULES of
# them (those run most recently), each back to a day ago: it stays cheap for a large tenant and
# says when it stopped short.
OVERVIEW_SCHEDULES = 2_000
RECENT_SCHEDULES = 50
RECENT_RUNS_PER_SCHEDULE = 500
# The overview counts the dead letters of one page, and says when there are more.
OVERVIEW_DEAD_LETTERS = 25

blp = Blueprint(
    "console",
    __name__,
    url_prefix=PREFIX,
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)


def service() -> ScheduleService:
    scheduler: ScheduleService = current_app.extensions["scheduler"]
    return scheduler


def authenticator() -> Authenticator:
    auth: Authenticator = current_app.extensions["scheduler_auth"]
    return auth


def rate_limiter() -> TenantRateLimiter:
    limiter: TenantRateLimiter = current_app.extensions["scheduler_rate_limiter"]
    return limiter


def presented(key: str | None) -> dict[str, str]:
    return {"X-API-Key": key} if key else {}


def sealed_session(key: str) -> str:
    """The session cookie's value: the key and when it was typed, sealed."""
    issued = service().clock.now().timestamp()
    session = json.dumps({"key": key, "issued": issued})
    return service().secret_box.seal_text(session, SESSION_PURPOSE)


def session_key(cookie: str | None) -> str | None:
    """The API key of a session cookie; ``None`` for none, one that does not open (altered,
    sealed with a key since dropped) or one older than ``SESSION_HOURS``."""
    opened = service().secret_box.open_text(cookie, SESSION_PURPOSE) if cookie else None
    if opened is None:
        return None
    session = json.loads(opened)
    if service().clock.now().timestamp() - session["issued"] > SESSION_HOURS * 3600:
        return None
    key: str = session["key"]
    return key


@blp.before_request
def authenticate() -> Response | None:
    if request.endpoint == "console.static":
        return None
    # A form posted from another site was refused before (scheduler_service.origins).
    if request.endpoint == "console.login":
        return None
    try:
        g.tenant = authenticator().tenant_for(
            presented(session_key(request.cookies.get(SESSION_COOKIE)))
        )
    except AuthFailure:
        return to_login()
    g.needs_key = authenticator().mode != "none" and authenticator().keys_required()
    retry_after = rate_limiter().retry_after(g.tenant)
    if retry_after is not None:
        limited = page("console/limited.html", retry_after=retry_after)
        return Response(limited, 429, {"Retry-After": str(retry_after)}, mimetype="text/html")
    return None


def to_login() -> Response:
    target = url_for("console.login", next=request.full_path)
    if request.headers.get("HX-Request"):
        response = Response(status=200)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target)


def htmx_redirect(target: str) -> Response:
    """Where an htmx action sends the browser next (a plain form gets a 303)."""
    if request.headers.get("HX-Request"):
        response = Response(status=204)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target, 303)


@blp.errorhandler(NotFound)
def not_found(exc: NotFound) -> tuple[str, int]:
    return page("console/missing.html", missing=exc.args[0] if exc.args else ""), 404


@blp.errorhandler(Transient)
def unavailable(exc: Transient) -> tuple[str, int]:
    return page("console/unavailable.html"), 503


def page(template: str, **context: Any) -> str:
    return render_template(template, needs_key=g.get("needs_key", False), **context)


# -- login --------------------------------------------------------------------------------


def console_target(default: str) -> str:
    """The request's ``next``, a console page (never the login page nor another site), or
    ``default``."""
    target = request.values.get("next", "")
    if not target.startswith(f"{PREFIX}/") or target.startswith(f"{PREFIX}/login"):
        return default
    return target


@blp.route("/login", methods=["GET", "POST"])
def login() -> Response | str | tuple[str, int]:
    target = console_target(url_for("console.overview"))
    if request.method == "GET":
        return page("console/login.html", target=target, error=None)
    key = request.form.get("api_key", "").strip()
    try:
        authenticator().tenant_for(presented(key))
    except AuthFailure as exc:
        return page("console/login.html", target=target, error=str(exc)), 401
    response = redirect(target, 303)
    response.set_cookie(
        SESSION_COOKIE,
        sealed_session(key),
        path=PREFIX,
        httponly=True,
        samesite="Strict",
        secure=request.is_secure,
    )
    return response


@blp.route("/logout", methods=["POST"])
def logout() -> Response:
    response = redirect(url_for("console.login"), 303)
    response.delete_cookie(
        SESSION_COOKIE, path=PREFIX, secure=request.is_secure, httponly=True, samesite="Strict"
    )
    return response


# -- overview -----------------------------------------------------------------------------


@dataclass
class Overview:
    by_status: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    failures: int = 0
    failing: list[Schedule] = field(default_factory=list)
    next_up: list[Schedule] = field(default_factory=list)
    read_all: bool = True
    fires_hour: int = 0
    failures_hour: int = 0
    fires_day: int = 0
    failures_day: int = 0
    lateness_ms: list[float] = field(default_factory=list)
    recent_complete: bool = True
    dead_letters: int = 0
    more_dead_letters: bool = False

    def lateness(self, quantile: int) -> float | None:
        if not self.lateness_ms:
            return None
        if len(self.lateness_ms) == 1:
            return self.lateness_ms[0]
        return statistics.quantiles(self.lateness_ms, n=100, method="inclusive")[quantile - 1]


def tenant_schedules(tenant: str, query: ScheduleFilter, limit: int) -> Iterator[Schedule]:
    cursor: str | None = None
    page_size = service().settings.max_page_size
    read = 0
    while read < limit:
        batch = service().list_schedules(tenant, query, min(page_size, limit - read), cursor)
        yield from batch.items
        read += len(batch.items)
        cursor = batch.next_cursor
        if cursor is None:
            return


def runs_since(tenant: str, schedule_id: str, since: datetime) -> tuple[list[Execution], bool]:
    """The schedule's runs scheduled after ``since``, and whether that is all of them."""
    found: list[Execution] = []
    cursor: str | None = None
    while len(found) < RECENT_RUNS_PER_SCHEDULE:
        _, batch = service().list_executions(tenant, schedule_id, 200, cursor)
        for execution in batch.items:
            if execution.scheduled_time < since:
                return found, True
            found.append(execution)
        cursor = batch.next_cursor
        if cursor is None:
            return found, True
    return found, False


def overview_of(tenant: str, now: datetime) -> Overview:
    overview = Overview(by_status={status: 0 for status in ("active", "paused", "completed")})
    schedules = list(tenant_schedules(tenant, ScheduleFilter(), OVERVIEW_SCHEDULES + 1))
    overview.read_all = len(schedules) <= OVERVIEW_SCHEDULES
    schedules = schedules[:OVERVIEW_SCHEDULES]
    for schedule in schedules:
        overview.by_status[schedule.status.value] += 1
        overview.runs += schedule.run_count
        overview.failures += schedule.failure_count
    overview.failing = [s for s in schedules if s.consecutive_failures > 0][:10]
    active = [s for s in schedules if s.status is ScheduleStatus.ACTIVE and s.next_schedule_time]
    overview.next_up = sorted(active, key=lambda s: s.next_schedule_time or now)[:10]
    day_ago, hour_ago = now - timedelta(days=1), now - timedelta(hours=1)
    recent = sorted(
        (s for s in schedules if s.last_run_at and s.last_run_at >= day_ago),
        key=lambda s: s.last_run_at or now,
        reverse=True,
    )
    overview.recent_complete = len(recent) <= RECENT_SCHEDULES
    waiting = service().list_dead_letters(tenant, OVERVIEW_DEAD_LETTERS, None)
    overview.dead_letters = len(waiting.items)
    overview.more_dead_letters = waiting.next_cursor is not None
    for schedule in recent[:RECENT_SCHEDULES]:
        runs, complete = runs_since(tenant, schedule.schedule_id, day_ago)
        overview.recent_complete &= complete
        for run in runs:
            if run.status not in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED):
                continue
            failed = run.status is ExecutionStatus.FAILED
            overview.fires_day += 1
            overview.failures_day += failed
            if run.scheduled_time >= hour_ago:
                overview.fires_hour += 1
                overview.failures_hour += failed
            if run.lateness_ms is not None:
                overview.lateness_ms.append(run.lateness_ms)
    return overview


@blp.route("/")
def overview() -> str:
    now = service().clock.now()
    return page("console/overview.html", overview=overview_of(g.tenant, now), view=view_of)


# -- schedules ----------------------------------------------------------------------------


def view_of(schedule: Schedule) -> dict[str, Any]:
    scheduler = service()
    return schedule_view(
        schedule, scheduler.settings.secret_headers, scheduler.next_fire_time(schedule)
    )


def instant_filter(name: str, errors: dict[str, list[str]]) -> datetime | None:
    text = request.args.get(name, "").strip()
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


@blp.route("/schedules")
def schedules() -> tuple[str, int]:
    errors: dict[str, list[str]] = {}
    status = request.args.get("status", "")
    if status not in ("", "active", "paused", "completed"):
        errors["status"] = ["one of active, paused, completed"]
    selection = ScheduleFilter(
        status=ScheduleStatus(status) if status and not errors else None,
        name_prefix=request.args.get("name", "").strip() or None,
        tag=request.args.get("tag", "").strip() or None,
        next_after=instant_filter("next_after", errors),
        next_before=instant_filter("next_before", errors),
    )
    cursor = request.args.get("cursor") or None
    if cursor is not None and not SCHEDULE_ID.match(cursor):
        errors["cursor"] = ["not a cursor this page gave"]
    items: list[dict[str, Any]] = []
    next_cursor = None
    if not errors:
        found = service().list_schedules(g.tenant, selection, PAGE_SIZE, cursor)
        items = [view_of(schedule) for schedule in found.items]
        next_cursor = found.next_cursor
    filters = {name: request.args.get(name, "") for name in ("status", "name", "tag")}
    filters |= {name: request.args.get(name, "") for name in ("next_after", "next_before")}
    return (
        page(
            "console/schedules.html",
            items=items,
            filters=filters,
            errors=errors,
            next_cursor=next_cursor,
            paged=cursor is not None,
        ),
        400 if errors else 200,
    )


def next_times(schedule: Schedule, now: datetime) -> list[dict[str, str | None]]:
    if schedule.status is ScheduleStatus.COMPLETED:
        return []
    timing = schedule.live_definition.timing
    recurrence = build_recurrence(timing, schedule.accepted_at, schedule.schedule_id)
    return [time_pair(moment, timing.timezone) for moment in recurrence.upcoming(now, NEXT_TIMES)]


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
    _, found = service().list_executions(g.tenant, schedule_id, RUNS_SHOWN, None)
    secret_patterns = service().settings.secret_headers
    return [execution_view(run, secret_patterns) for run in found.items]


@blp.route("/schedules/<schedule_id>")
def schedule(schedule_id: str) -> str | tuple[str, int]:
    try:
        found = service().get(g.tenant, schedule_id)
    except NotFound:
        if request.args.get("accepted"):
            # Creation is asynchronous: the page asks again until the processor has stored it.
            return page("console/pending.html", schedule_id=schedule_id), 202
        raise
    runs = recent_runs(schedule_id)
    return page(
        "console/schedule.html",
        schedule=view_of(found),
        times=next_times(found, service().clock.now()),
        runs=runs,
        chart=lateness_chart(runs),
    )


@blp.route("/schedules/<schedule_id>/runs")
def runs(schedule_id: str) -> str:
    service().get(g.tenant, schedule_id)
    found = recent_runs(schedule_id)
    return render_template(
        "console/runs.html",
        schedule={"id": schedule_id},
        runs=found,
        chart=lateness_chart(found),
    )


@blp.route(
    "/schedules/<schedule_id>/<any(pause, resume, trigger, delete):action>", methods=["POST"]
)
def act(schedule_id: str, action: str) -> Response:
    scheduler = service()
    if action == "delete":
        scheduler.delete(g.tenant, schedule_id)
        return htmx_redirect(url_for("console.schedules", deleted=schedule_id))
    if action == "pause":
        scheduler.pause(g.tenant, schedule_id)
    elif action == "resume":
        scheduler.resume(g.tenant, schedule_id)
    else:
        scheduler.trigger(g.tenant, schedule_id)
    return htmx_redirect(url_for("console.schedule", schedule_id=schedule_id))


@blp.route("/runs/<occurrence_id>")
def run(occurrence_id: str) -> str:
    """One occurrence's record, as its schedule's history shows it (the tenant's only)."""
    record = service().execution(g.tenant, occurrence_id)
    return page("console/run.html", run=occurrence_view(record, service().settings.secret_headers))


# -- dead letters -------------------------------------------------------------------------


# Why a replay or discard was refused, as the list shows it (``?gone=<id>`` and so on).
REFUSALS = {
    "gone": "No dead letter {id}: replayed or discarded already, or another tenant's.",
    "unreplayable": "Not replayed: the schedule of {id} is deleted, so a replay would not fire. "
    "Discard it instead.",
}


def dead_letters_page(problem: str | None, status: int) -> tuple[str, int]:
    errors: dict[str, list[str]] = {}
    cursor = request.args.get("cursor") or None
    if cursor is not None and not EXECUTIONS_CURSOR.match(cursor):
        errors["cursor"] = ["not a cursor this page gave"]
    items: list[dict[str, Any]] = []
    next_cursor = None
    if not errors:
        scheduler = service()
        found = scheduler.list_dead_letters(g.tenant, PAGE_SIZE, cursor)
        secret_patterns = scheduler.settings.secret_headers
        items = [dead_letter_view(item, secret_patterns) for item in found.items]
        next_cursor = found.next_cursor
    html = page(
        "console/dead_letters.html",
        items=items,
        next_cursor=next_cursor,
        paged=cursor is not None,
        errors=errors,
        problem=problem,
    )
    return html, 400 if errors else status


@blp.route("/dead-letters")
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


@blp.route("/dead-letters/<occurrence_id>/<any(replay, discard):action>", methods=["POST"])
def dead_letter(occurrence_id: str, action: str) -> Response | tuple[str, int]:
    """Replay or discard one dead letter through the service the API uses: the same tenant
    rules, the same refusals (404 none by that id, 409 its schedule deleted)."""
    try:
        if action == "replay":
            service().replay(g.tenant, occurrence_id)
        else:
            service().discard(g.tenant, occurrence_id)
    except NoDeadLetter:
        return refused(occurrence_id, "gone", 404)
    except NotReplayable:
        return refused(occurrence_id, "unreplayable", 409)
    done: dict[str, Any] = {"replayed" if action == "replay" else "discarded": occurrence_id}
    return htmx_redirect(console_target(url_for("console.dead_letters", **done)))


def refused(occurrence_id: str, why: str, status: int) -> Response | tuple[str, int]:
    """htmx is sent to the list, which says why; a plain form gets that list at once."""
    if request.headers.get("HX-Request"):
        response = Response(status=status)
        reason: dict[str, Any] = {why: occurrence_id}
        response.headers["HX-Redirect"] = url_for("console.dead_letters", **reason)
        return response
    return dead_letters_page(REFUSALS[why].format(id=occurrence_id), status)


# -- create, edit, preview ----------------------------------------------------------------


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
        notations=forms.NOTATIONS,
        notation_inputs=forms.NOTATION_INPUTS,
        units=forms.UNITS,
        policies=forms.POLICIES,
        methods=forms.HTTP_METHODS,
    )


def submit(values: Mapping[str, str], editing: Schedule | None) -> Response | tuple[str, int]:
    body, errors = forms.request_body(values, editing)
    try:
        loaded: ScheduleRequest = ScheduleBodySchema().load(body)
    except ValidationError as exc:
        errors.extend(flatten(exc.messages))
    if errors:
        return form_page(values, errors, editing), 422
    schedule_id = editing.schedule_id if editing is not None else loaded.schedule_id
    try:
        with as_sent(loaded.names):
            accepted = service().accept_definition(g.tenant, schedule_id, loaded.definition)
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
def create() -> Response | str | tuple[str, int]:
    if request.method == "GET":
        return form_page({}, [], None)
    return submit(request.form, None)


@blp.route("/schedules/<schedule_id>/edit", methods=["GET", "POST"])
def edit(schedule_id: str) -> Response | str | tuple[str, int]:
    stored = service().get(g.tenant, schedule_id)
    if request.method == "GET":
        return form_page(forms.form_values(view_of(stored)), [], stored)
    return submit(request.form, stored)


@blp.route("/preview", methods=["POST"])
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
            found = service().preview(timing, NEXT_TIMES)
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
    return render_template(
        "console/preview.html", times=times, description=description, errors=errors
    )
