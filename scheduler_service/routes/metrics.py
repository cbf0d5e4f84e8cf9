"""``GET /metrics``: Prometheus text, this process's metrics plus gauges read from the backends
(and, under ``scheduler dev``, the metrics of its other process, merged in)."""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Iterator

from flask import Flask, Response, current_app, g, request
from flask_smorest import Blueprint
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import REGISTRY, Collector

from shared.backends import Backends
from shared.metrics import DURATION_BUCKETS, BackendCollector

blp = Blueprint("metrics", __name__, description="Prometheus metrics")
log = logging.getLogger(__name__)
# Figures of a process itself (memory, CPU, the interpreter's): the serving process's only.
OWN_FIGURES = ("process_", "python_")
PEER_TIMEOUT_SECONDS = 2.0

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
    own = generate_latest(REGISTRY)
    peer_url: str | None = current_app.extensions.get("scheduler_peer_metrics")
    if peer_url is not None:
        try:
            with urllib.request.urlopen(peer_url, timeout=PEER_TIMEOUT_SECONDS) as answer:
                own = merged_metrics(own, answer.read())
        except OSError as exc:
            log.warning(
                "the workers' metrics could not be read: %s", exc, extra={"event": "peer_metrics"}
            )
    body = own + generate_latest(registry)
    return Response(body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def merged_metrics(own: bytes, peer: bytes) -> bytes:
    """Two processes' metrics as one exposition: the samples of each name and labels added up
    (every metric here is a counter or a histogram, which counts in one process or the other;
    the other holds zeros), the earliest ``_created`` kept; process figures are ``own``'s."""
    families: dict[str, Metric] = {}
    values: dict[tuple[str, str, tuple[tuple[str, str], ...]], float] = {}
    for text, whose in ((own, "own"), (peer, "peer")):
        for family in text_string_to_metric_families(text.decode("utf-8")):
            if whose == "peer" and family.name.startswith(OWN_FIGURES):
                continue
            families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            for sample in family.samples:
                key = (family.name, sample.name, tuple(sorted(sample.labels.items())))
                if key not in values:
                    values[key] = sample.value
                elif sample.name.endswith("_created"):
                    values[key] = min(values[key], sample.value)
                else:
                    values[key] += sample.value
    for (family_name, sample_name, labels), value in values.items():
        families[family_name].add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(families.values())))
    return generate_latest(registry)


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)
