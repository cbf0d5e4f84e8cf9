"""The Flask app factory."""

from __future__ import annotations

import logging

from flask import Flask, Response, g, request
from flask_smorest import Api

from scheduler_service.auth import Authenticator
from scheduler_service.console import PREFIX as CONSOLE_PREFIX
from scheduler_service.console import blp as console_blueprint
from scheduler_service.origins import BrowserGuard
from scheduler_service.presenting.fields import document_fields
from scheduler_service.presenting.problems import problem, register_error_handlers
from scheduler_service.presenting.schemas import ProblemSchema
from scheduler_service.ratelimit import TenantRateLimiter
from scheduler_service.requests.bodies import ApiRequest, body_problem
from scheduler_service.requests.targets import document_targets
from scheduler_service.roles import refusal, required_role
from scheduler_service.routes import BLUEPRINTS
from scheduler_service.routes.docs import SWAGGER_UI_URL
from scheduler_service.routes.docs import blp as docs_blueprint
from scheduler_service.routes.metrics import backend_registry, measure_requests
from scheduler_service.service import ScheduleService
from shared.backends import Backends
from shared.changes import Actor, ActorKind
from shared.ports import Clock, SystemClock
from shared.settings import Settings

# Paths for probes, scrapers and documentation: no tenant, no key. /metrics carries aggregate
# counts over all tenants (no schedule of anyone's): keep the API port off the public internet
# or scrape the workers' metrics port.
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json"})

log = logging.getLogger(__name__)

SECURITY_SCHEMES = {
    "ApiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    "Bearer": {"type": "http", "scheme": "bearer"},
}


class ProblemApi(Api):  # type: ignore[misc]
    """flask-smorest's Api, whose documented error answers are RFC 7807 problems."""

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_RESPONSE_CONTENT_TYPE = "application/json"

    def _register_responses(self) -> None:
        # The default error responses of every operation, as application/problem+json.
        content_type = self.DEFAULT_RESPONSE_CONTENT_TYPE
        self.DEFAULT_RESPONSE_CONTENT_TYPE = "application/problem+json"
        try:
            super()._register_responses()
        finally:
            self.DEFAULT_RESPONSE_CONTENT_TYPE = content_type


def create_app(
    settings: Settings,
    backends: Backends,
    clock: Clock | None = None,
    peer_metrics_url: str | None = None,
) -> Flask:
    """The API over ``backends``; the caller opened them and closes them. ``peer_metrics_url``:
    where the metrics of the components in another process are read, to show with this
    process's on ``/metrics`` (``scheduler dev``)."""
    app = Flask(__name__)
    app.request_class = ApiRequest
    measure_requests(app)
    app.config.update(
        API_TITLE="Scheduler service",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        OPENAPI_SWAGGER_UI_URL=SWAGGER_UI_URL,
        API_SPEC_OPTIONS={
            "components": {"securitySchemes": SECURITY_SCHEMES},
            "security": [{"ApiKey": []}, {"Bearer": []}],
            "info": {
                "description": "Schedules that call HTTP endpoints at their times. "
                "Authenticate with X-API-Key or Authorization: Bearer (unless the server runs "
                "without keys). Errors are RFC 7807 application/problem+json."
            },
        },
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        JSON_SORT_KEYS=False,
    )
    service = ScheduleService(
        backends.store,
        backends.queues,
        settings,
        clock or SystemClock(),
        backends.secrets,
        backends.spans,
    )
    authenticator = Authenticator(settings, backends.store)
    rate_limiter = TenantRateLimiter(settings.tenant_rate_limit)
    app.extensions["scheduler"] = service
    app.extensions["scheduler_backends"] = backends
    app.extensions["scheduler_auth"] = authenticator
    app.extensions["scheduler_rate_limiter"] = rate_limiter
    app.extensions["scheduler_metrics"] = backend_registry(
        backends, settings.schedule_counts_seconds
    )
    app.extensions["scheduler_peer_metrics"] = peer_metrics_url
    log.info("API authentication: %s", authenticator.describe(), extra={"event": "api_auth"})

    api = ProblemApi(app)
    document_fields(api)
    document_targets(api)
    for blueprint in BLUEPRINTS:
        api.register_blueprint(blueprint)
    app.register_blueprint(docs_blueprint)
    app.register_blueprint(console_blueprint)
    register_error_handlers(app)

    browsers = BrowserGuard(settings.allowed_hosts, authenticator.keys_required)

    @app.before_request
    def check_request() -> Response | None:
        # First, for every path: a page a browser visits must not drive the API (origins.py).
        refused = browsers.refusal(request.method, request.host, request.headers.get("Origin"))
        if refused is not None:
            return problem(refused.status, refused.title, refused.detail)
        if request.path == CONSOLE_PREFIX or request.path.startswith(f"{CONSOLE_PREFIX}/"):
            return None  # HTML forms; the console checks the key itself (console/pages.py).
        # The key first: a caller without one learns nothing about what its body would get.
        if request.path in PUBLIC_PATHS or request.path.startswith("/docs"):
            g.tenant = None
            g.caller_name = None
        else:
            # AuthFailure, raised here, is answered 401 by the error handlers.
            caller = authenticator.caller_for(request.headers)
            g.tenant = caller.tenant
            g.caller_name = caller.name
            g.actor = Actor(ActorKind.API_KEY, caller.key_id, caller.key_name)
            retry_after = rate_limiter.retry_after(g.tenant)
            if retry_after is not None:
                return problem(
                    429,
                    "Too Many Requests",
                    f"over the tenant's rate limit ({settings.tenant_rate_limit}); retry in "
                    f"{retry_after} s",
                    headers={"Retry-After": str(retry_after)},
                )
            # The role before the body: a key that may not act learns nothing of its body.
            if request.endpoint is not None:
                needed = required_role(app, request.endpoint, request.method)
                refused_role = refusal(caller.role, needed)
                if refused_role is not None:
                    return problem(403, "Forbidden", refused_role, required_role=needed.value)
        if request.method in ("POST", "PUT", "PATCH"):
            return body_problem(settings.max_body_bytes)
        return None

    return app
