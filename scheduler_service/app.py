"""The Flask app factory."""

from __future__ import annotations

from flask import Flask, Response, g, request
from flask_smorest import Api

from scheduler_service.errors import problem, register_error_handlers
from scheduler_service.health import blp as health_blueprint
from scheduler_service.metrics import backend_registry
from scheduler_service.metrics import blp as metrics_blueprint
from scheduler_service.schedules import blp as schedules_blueprint
from scheduler_service.service import ScheduleService
from shared.backends import Backends
from shared.ports import Clock, SystemClock
from shared.settings import Settings

API_PREFIX = "/scheduler-service/v1"
DEFAULT_TENANT = "default"


def create_app(
    settings: Settings,
    backends: Backends,
    clock: Clock | None = None,
) -> Flask:
    """The API over ``backends``; the caller opened them and closes them."""
    app = Flask(__name__)
    app.config.update(
        API_TITLE="Scheduler service",
        API_VERSION="v1",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        OPENAPI_SWAGGER_UI_PATH="/docs",
        OPENAPI_SWAGGER_UI_URL="https://cdn.jsdelivr.net/npm/swagger-ui-dist/",
        MAX_CONTENT_LENGTH=settings.max_body_bytes,
        JSON_SORT_KEYS=False,
    )
    service = ScheduleService(backends.store, backends.queues, settings, clock or SystemClock())
    app.extensions["scheduler"] = service
    app.extensions["scheduler_backends"] = backends
    app.extensions["scheduler_metrics"] = backend_registry(backends)

    api = Api(app)
    api.register_blueprint(schedules_blueprint)
    api.register_blueprint(health_blueprint)
    api.register_blueprint(metrics_blueprint)
    register_error_handlers(app)

    @app.before_request
    def check_request() -> Response | None:
        g.tenant = DEFAULT_TENANT
        if request.method in ("POST", "PUT", "PATCH") and request.content_length:
            if request.content_length > settings.max_body_bytes:
                return problem(
                    413,
                    "Payload Too Large",
                    f"the body is {request.content_length} bytes; the limit is "
                    f"{settings.max_body_bytes}",
                )
            if not request.is_json:
                return problem(
                    415,
                    "Unsupported Media Type",
                    "send the body as JSON with Content-Type: application/json",
                )
        return None

    return app
