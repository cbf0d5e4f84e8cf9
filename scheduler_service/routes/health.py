"""Liveness and readiness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from flask import current_app
from flask_smorest import Blueprint

from scheduler_service.presenting.schemas import HealthSchema
from shared.backends import Backends
from shared.errors import Transient

blp = Blueprint("health", __name__, description="Liveness and readiness")
Probe = TypeVar("Probe", bound=Callable[[], tuple[dict[str, Any], int]])


def probe(name: str, unavailable: str) -> Callable[[Probe], Probe]:
    """The route of ``GET /<name>``, which needs no key: ``200`` or ``503`` (``unavailable``
    says when), with a ``HealthSchema`` either way."""

    def decorate(view: Probe) -> Probe:
        routed = blp.doc(security=[], operationId=name)(view)
        routed = blp.alt_response(503, schema=HealthSchema, description=unavailable)(routed)
        routed = blp.response(200, HealthSchema)(routed)
        return cast(Probe, blp.route(f"/{name}")(routed))

    return decorate


@probe("healthz", "The process cannot open its store")
def healthz() -> tuple[dict[str, Any], int]:
    """The process is alive and can still open its embedded store (SQLite), if it has one."""
    backends: Backends = current_app.extensions["scheduler_backends"]
    try:
        for check in backends.liveness:
            check()
    except Transient as exc:
        return {"status": "unavailable", "checks": {"store": f"unavailable: {exc}"}}, 503
    return {"status": "ok"}, 200


@probe("readyz", "A backend does not answer")
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
