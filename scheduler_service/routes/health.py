"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from flask import current_app
from flask_smorest import Blueprint

from scheduler_service.presenting.schemas import HealthSchema
from shared.backends import Backends
from shared.errors import Transient

blp = Blueprint("health", __name__, description="Liveness and readiness")


@blp.route("/healthz")
@blp.response(200, HealthSchema)
@blp.alt_response(503, schema=HealthSchema, description="The process cannot open its store")
@blp.doc(security=[], operationId="healthz")
def healthz() -> tuple[dict[str, Any], int]:
    """The process is alive and can still open its embedded store (SQLite), if it has one."""
    backends: Backends = current_app.extensions["scheduler_backends"]
    try:
        for check in backends.liveness:
            check()
    except Transient as exc:
        return {"status": "unavailable", "checks": {"store": f"unavailable: {exc}"}}, 503
    return {"status": "ok"}, 200


@blp.route("/readyz")
@blp.response(200, HealthSchema)
@blp.alt_response(503, schema=HealthSchema, description="A backend does not answer")
@blp.doc(security=[], operationId="readyz")
def readyz() -> tuple[dict[str, Any], int]:
    """The store and the queues answer."""
    backends: Backends = current_app.extensions["scheduler_backends"]
    checks: dict[str, str] = {}
    try:
        backends.store.ping()
        checks["store"] = "ok"
    except Transient as exc:
        checks["store"] = f"unavailable: {exc}"
    try:
        backends.queues.mutations.depth()
        checks["queue"] = "ok"
    except Exception as exc:
        checks["queue"] = f"unavailable: {exc}"
    ready = all(value == "ok" for value in checks.values())
    return {"status": "ready" if ready else "unavailable", "checks": checks}, 200 if ready else 503
