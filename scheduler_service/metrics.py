"""``GET /metrics``: Prometheus text, this process's metrics plus gauges read from the backends."""

from __future__ import annotations

import time

from flask import Flask, Response, current_app, g, request
from flask_smorest import Blueprint
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.registry import REGISTRY

from shared.backends import Backends
from shared.metrics import DURATION_BUCKETS, BackendCollector

blp = Blueprint("metrics", __name__, description="Prometheus metrics")

API_REQUESTS = Histogram(
    "scheduler_api_request_duration_seconds",
    "API requests answered (the count) and how long each took, by route and status class.",
    ["method", "route", "status_class"],
    buckets=DURATION_BUCKETS,
)


def measure_requests(app: Flask) -> None:
    """Time every request, refused ones included: register before any other hook, since a
    hook that answers early skips the hooks after it. The route is the URL rule
    (``/scheduler-service/v1/schedule/<schedule_id>``), never the path, so the labels stay few."""

    @app.before_request
    def start_clock() -> None:
        g.request_started = time.perf_counter()

    @app.after_request
    def observe(response: Response) -> Response:
        started = g.get("request_started")
        if started is not None:
            rule = request.url_rule
            API_REQUESTS.labels(
                request.method,
                rule.rule if rule is not None else "unmatched",
                f"{response.status_code // 100}xx",
            ).observe(time.perf_counter() - started)
        return response


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
