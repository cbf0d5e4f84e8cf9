"""``/console``: pages over the same service, tenant rules and keys as the API.

This module holds what every page shares: the blueprint, the session, the checks made before
each request, and how a page is rendered; the pages are in the other modules of
this package, one per page or group of pages (``overview``, ``schedule_list_page``,
``schedule_page``, ``history``, ``dead_letter_pages``, ``form_pages``, ...), and the actions
on schedules in ``schedule_actions`` and ``bulk_actions``.

Server-rendered Jinja templates (``templates/console/``), with htmx (vendored in ``static/``)
for the live preview and the refreshing run list, and ``console.js`` for the viewer's time
zone and confirmations; every action is a plain form, so the console works without
JavaScript. The API key is typed once on ``/console/login``; the session cookie (HttpOnly,
SameSite=Strict, Secure over HTTPS, sent only to ``/console``, for the browser session and at
most ``SESSION_HOURS``) holds it sealed with the service's secret key, so the cookie alone never
shows the key. Where the API needs no key (``scheduler dev``) the console needs none either. Its
requests count against the tenant's rate limit (``SCHEDULER_TENANT_RATE_LIMIT``) as the API's
do.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flask import (
    Blueprint,
    current_app,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug import Response

from scheduler_service.auth import Authenticator, AuthFailure
from scheduler_service.console.presenting import TEMPLATE_HELPERS
from scheduler_service.presenting.views import schedule_view
from scheduler_service.ratelimit import TenantRateLimiter
from scheduler_service.roles import refusal, required_role, requires
from scheduler_service.service import ScheduleService
from shared.changes import Actor, ActorKind
from shared.errors import NotFound, Transient
from shared.model import Schedule
from shared.ports import Role

PREFIX = "/console"
SESSION_COOKIE = "scheduler_console_session"
# What the secret box seals the session for: a value sealed for anything else does not open.
SESSION_PURPOSE = "console-session"
SESSION_HOURS = 12

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
        caller = authenticator().caller_for(
            presented(session_key(request.cookies.get(SESSION_COOKIE)))
        )
    except AuthFailure:
        return to_login()
    g.tenant, g.role = caller.tenant, caller.role
    g.actor = Actor(ActorKind.CONSOLE, caller.key_id, caller.key_name)
    g.needs_key = authenticator().mode != "none" and authenticator().keys_required()
    retry_after = rate_limiter().retry_after(g.tenant)
    if retry_after is not None:
        limited = page("console/limited.html", retry_after=retry_after)
        return Response(limited, 429, {"Retry-After": str(retry_after)}, mimetype="text/html")
    # The pages hide what the key's role may not do; a request made anyway is refused here.
    # (A blueprint's before_request runs only for its own routes: the endpoint is known.)
    needed = required_role(current_app, str(request.endpoint), request.method)
    why = refusal(caller.role, needed)
    if why is not None:
        refused = page("console/forbidden.html", why=why, needed=needed.value)
        return Response(refused, 403, mimetype="text/html")
    return None


def can(role: str) -> bool:
    """Whether the signed-in key may do what needs ``role``: the pages show only that."""
    held: Role = g.get("role", Role.READ)
    return held.grants(Role(role))


def to_login() -> Response:
    target = url_for("console.login", next=request.full_path)
    if request.headers.get("HX-Request"):
        response = Response(status=200)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target)


def htmx_redirect(target: str) -> Response:
    """Where an action sends the browser next: htmx is told so, a plain form gets a 303."""
    if request.headers.get("HX-Request"):
        response = Response(status=204)
        response.headers["HX-Redirect"] = target
        return response
    return redirect(target, 303)


def confirmed() -> bool:
    """Whether a form that deletes or discards was confirmed: by ``console.js`` (a dialog),
    or on the page that asks when JavaScript is off."""
    return request.form.get("confirmed") == "yes"


@blp.errorhandler(NotFound)
def not_found(exc: NotFound) -> tuple[str, int]:
    return page("console/missing.html", missing=exc.args[0] if exc.args else ""), 404


@blp.errorhandler(Transient)
def unavailable(exc: Transient) -> tuple[str, int]:
    return page("console/unavailable.html"), 503


def page(template: str, **context: Any) -> str:
    """A page of the console, with what its templates use: the time now (for "3 min ago"),
    the helpers of ``presenting``."""
    return render_template(
        template,
        needs_key=g.get("needs_key", False),
        can=can,
        now=service().clock.now(),
        **TEMPLATE_HELPERS,
        **context,
    )


def limited_ids(name: str, most: int) -> list[str] | None:
    """The ids a form lists under ``name`` (checkboxes), each once; ``None`` for more than
    ``most``."""
    ids = list(dict.fromkeys(value for value in request.form.getlist(name) if value))
    return None if len(ids) > most else ids


def given_cursor(errors: dict[str, list[str]], valid: Callable[[str], bool]) -> str | None:
    """The ``?cursor=`` of a list page (``None``: its first page); one that is not ``valid``,
    so not one this page gave, is an error of ``errors``."""
    cursor = request.args.get("cursor") or None
    if cursor is not None and not valid(cursor):
        errors["cursor"] = ["not a cursor this page gave"]
    return cursor


@dataclass(frozen=True)
class Paging:
    """Where a list page is among its pages, for the ``pager`` macro: the cursor it was given
    (``None``: the first page) and the next page's (``None``: the last)."""

    cursor: str | None
    next_cursor: str | None = None

    @property
    def paged(self) -> bool:
        return self.cursor is not None


def this_page(*notices: str) -> str:
    """This page's path and query, without the parameters that only say what was just done
    (``notices``): where a form on it sends the browser back to."""
    kept = [(name, value) for name, value in request.args.items(multi=True) if name not in notices]
    return f"{request.path}?{urlencode(kept)}" if kept else request.path


def pretty_json(value: Any) -> str:
    """``value`` as indented JSON, its keys in the order given (the answer's documented one)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def view_of(schedule: Schedule) -> dict[str, Any]:
    scheduler = service()
    return schedule_view(
        schedule, scheduler.settings.secret_headers, scheduler.reads.next_fire_time(schedule)
    )


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
        authenticator().caller_for(presented(key))
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
@requires(Role.READ)
def logout() -> Response:
    response = redirect(url_for("console.login"), 303)
    response.delete_cookie(
        SESSION_COOKIE, path=PREFIX, secure=request.is_secure, httponly=True, samesite="Strict"
    )
    return response
