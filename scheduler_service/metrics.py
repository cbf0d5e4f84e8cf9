"""``GET /metrics``: Prometheus text, this process's metrics plus gauges read from the backends."""

from __future__ import annotations

from flask import Response, current_app
from flask_smorest import Blueprint
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.registry import REGISTRY

from shared.backends import Backends
from shared.metrics import BackendCollector

blp = Blueprint("metrics", __name__, description="Prometheus metrics")


def backend_registry(backends: Backends, schedule_counts_seconds: float) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BackendCollector(backends.store, backends.queues, schedule_counts_seconds))
    return registry


@blp.route("/metrics")
@blp.doc(
    security=[],
    operationId="metrics",
    responses={
        "200": {
            "description": "Prometheus text exposition format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def metrics() -> Response:
    """Schedules by status, queue depths, and the metrics of the components in this process."""
    registry: CollectorRegistry = current_app.extensions["scheduler_metrics"]
    body = generate_latest(REGISTRY) + generate_latest(registry)
    return Response(body, headers={"Content-Type": CONTENT_TYPE_LATEST})
