"""Prometheus metrics of every component, and the small HTTP endpoint each worker serves.

The API serves ``/metrics`` itself; each worker serves ``/metrics`` and ``/healthz`` on
``SCHEDULER_METRICS_PORT``. Names start with ``scheduler_``; the one that says "schedules are
firing late" is ``scheduler_fire_lateness_seconds``.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from shared.ports import Queues, ScheduleStore

# From a millisecond to a minute: what "on time" and "late" look like for a scheduler.
LATENESS_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
DURATION_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip

FIRE_LATENESS = Histogram(
    "scheduler_fire_lateness_seconds",
    "How late each run's first attempt was sent after its scheduled time (sent - scheduled, the "
    "scheduled time with the schedule's jitter); a retry's delay is not lateness.",
    buckets=LATENESS_BUCKETS,
)
EXECUTIONS = Counter(
    "scheduler_executions_total",
    "Occurrences settled by the executor, by outcome.",
    ["outcome"],  # succeeded, failed, retrying, skipped, duplicate
)
RETRIES = Counter("scheduler_retries_total", "Attempts that failed and were scheduled again.")
OCCURRENCES_SUPERSEDED = Counter(
    "scheduler_occurrences_superseded_total",
    "Occurrences sent ahead of their time, then skipped (never called) because their schedule "
    "changed, paused or was deleted meanwhile.",
    ["cause"],  # changed, paused, deleted
)
SCHEDULES_AUTO_PAUSED = Counter(
    "scheduler_schedules_auto_paused_total",
    "Schedules that paused themselves after pause_after_failures failed occurrences in a row.",
)
FAILURE_NOTIFICATIONS = Counter(
    "scheduler_failure_notifications_total",
    "on_failure notifications (dead letters, pauses), by result.",
    ["result"],  # sent, failed (no 2xx answer; not retried), dropped (backlog full)
)
HTTP_RESPONSES = Counter(
    "scheduler_webhook_responses_total",
    "Webhook answers by status class (2xx … 5xx, or error when there was no answer).",
    ["status_class"],
)
WEBHOOK_DURATION = Histogram(
    "scheduler_webhook_duration_seconds",
    "How long webhook calls took.",
    buckets=DURATION_BUCKETS,
)
CLAIM_BATCH = Histogram(
    "scheduler_poller_claim_batch_size",
    "Schedules claimed per poll.",
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000),
)
CLAIM_LAG = Histogram(
    "scheduler_poller_claim_lag_seconds",
    "How overdue a schedule was when claimed (0 when claimed ahead of time).",
    buckets=LATENESS_BUCKETS,
)
OCCURRENCES_SENT = Counter(
    "scheduler_poller_occurrences_sent_total", "Occurrences the poller sent to queue 2."
)
OCCURRENCES_MISSED = Counter(
    "scheduler_poller_occurrences_missed_total",
    "Occurrences found overdue beyond the misfire threshold (handled by the misfire policy).",
)
OCCURRENCE_ALERTS = Counter(
    "scheduler_occurrence_alerts_total",
    "Occurrences told of at their schedule's on_failure hook (a schedule's alert): late (not "
    "started late_after_seconds after their time) or missed (dropped by the misfire policy).",
    ["tenant", "kind"],  # kind: occurrence.late, occurrence.missed
)
SCHEDULES_NOT_PLANNED = Counter(
    "scheduler_poller_schedules_not_planned_total",
    "Claimed schedules whose occurrences could not be computed (unreadable, or beyond the CPU "
    "budget); each is claimed again when its lease runs out.",
)
MUTATIONS = Counter(
    "scheduler_processor_mutations_total",
    "Mutations taken from queue 1, by result.",
    ["result"],  # applied, ignored, poisoned, deferred
)
RETENTION_DELETED = Counter(
    "scheduler_retention_deleted_total",
    "Execution records, schedules and changes deleted because retention no longer keeps them.",
    ["kind"],  # execution, schedule, change
)
PROCESSING = Histogram(
    "scheduler_processing_seconds",
    "Time spent per unit of work, by component and step.",
    ["component", "step"],
    buckets=DURATION_BUCKETS,
)


# The label children used on every fire, made once: ``labels()`` takes a lock and looks the
# values up on every call.
SUCCEEDED = EXECUTIONS.labels("succeeded")
FIRE_PROCESSING = PROCESSING.labels("executor", "fire")
_RESPONSE_CLASSES = {
    name: HTTP_RESPONSES.labels(name) for name in ("error", "1xx", "2xx", "3xx", "4xx", "5xx")
}


def observe_all(histogram: Histogram, values: Iterable[float]) -> None:
    """``histogram.observe`` of each value, a batch at a time: one increment of the sum and one
    of each bucket the values fall in (the first whose bound is at least the value, as
    ``observe`` counts), where ``observe`` takes two locked increments per value.

    prometheus_client has no batch observe (its maintainers decline one: client_python #733,
    #1124), so this uses what ``observe`` itself uses, private attributes: ``_upper_bounds``,
    ``_sum`` and ``_buckets`` (values with ``inc``). It is what makes it cheap: the public
    ``observe`` per value costs the observer's three histograms 2.4-2.7 us a fire against
    0.5-0.9 in settled batches of 10 to 50 (``bench.histograms``; BENCHMARKS section 21:
    29,000 instructions a fire against 6,700). pyproject bounds
    prometheus-client below its next minor, and ``tests/unit/test_observe_all.py`` fails,
    naming them, should a release change them or what ``observe`` does with them."""
    bounds = histogram._upper_bounds
    counts: dict[int, int] = {}
    total = 0.0
    for value in values:
        index = bisect_left(bounds, value)
        counts[index] = counts.get(index, 0) + 1
        total += value
    if not counts:
        return
    histogram._sum.inc(total)
    for index, count in counts.items():
        histogram._buckets[index].inc(count)


def status_class(status: int | None) -> str:
    return "error" if status is None else f"{status // 100}xx"


def count_responses(statuses: Iterable[int | None]) -> None:
    """Count webhooks' answers (``None``: no answer) in ``HTTP_RESPONSES`` by their class, one
    increment per class."""
    counts: dict[str, int] = {}
    for status in statuses:
        name = status_class(status)
        counts[name] = counts.get(name, 0) + 1
    for name, count in counts.items():
        counter = _RESPONSE_CLASSES.get(name)
        if counter is None:
            counter = _RESPONSE_CLASSES[name] = HTTP_RESPONSES.labels(name)
        counter.inc(count)


@dataclass(eq=False)
class BackendCollector(Collector):
    """Gauges read from the backends at scrape time: queue depths, and schedules by status,
    counted at most once per ``max_age_seconds`` (a count of every schedule is a scan of the
    store, too dear to repeat for every scrape of every process)."""

    store: ScheduleStore
    queues: Queues
    max_age_seconds: float
    monotonic: Callable[[], float] = time.monotonic
    _counts: Mapping[str, int] = field(init=False, default_factory=dict)
    _counted_at: float | None = field(init=False, default=None)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def schedule_counts(self) -> Mapping[str, int]:
        with self._lock:
            now = self.monotonic()
            if self._counted_at is None or now - self._counted_at >= self.max_age_seconds:
                self._counts = self.store.count_schedules()
                self._counted_at = now
            return self._counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        schedules = GaugeMetricFamily(
            "scheduler_schedules", "Stored schedules by status.", labels=["status"]
        )
        counts = self.schedule_counts()
        for status in ("active", "paused", "completed"):
            schedules.add_metric([status], counts.get(status, 0))
        yield schedules
        depth = GaugeMetricFamily(
            "scheduler_queue_messages",
            "Messages on each queue: visible, in flight, delayed.",
            labels=["queue", "state"],
        )
        for role, queue in (
            ("mutations", self.queues.mutations),
            ("occurrences", self.queues.occurrences),
            ("dead_letters", self.queues.dead_letters),
        ):
            messages = queue.depth()
            depth.add_metric([role, "visible"], messages.visible)
            depth.add_metric([role, "in_flight"], messages.in_flight)
            depth.add_metric([role, "delayed"], messages.delayed)
        yield depth

    def describe(self) -> Iterable[Any]:
        return []


class Heartbeat:
    """A loop's sign of life: ``beat()`` every turn; healthy while the last beat is recent."""

    def __init__(self, allowed_silence_seconds: float) -> None:
        self.allowed_silence_seconds = allowed_silence_seconds
        self._last = time.monotonic()

    def beat(self) -> None:
        self._last = time.monotonic()

    def silence(self) -> float:
        return time.monotonic() - self._last

    def healthy(self) -> bool:
        return self.silence() <= self.allowed_silence_seconds


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


def serve_worker_endpoint(
    host: str,
    port: int,
    healthy: Callable[[], bool],
    registry: CollectorRegistry = REGISTRY,
) -> WSGIServer:
    """Serve ``/metrics`` and ``/healthz`` (200 while ``healthy()``, else 503) in a thread."""
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == "/healthz":
            ok = healthy()
            start_response(
                "200 OK" if ok else "503 Service Unavailable",
                [("Content-Type", "application/json")],
            )
            return [b'{"status": "ok"}' if ok else b'{"status": "stalled"}']
        result: Iterable[bytes] = metrics_app(environ, start_response)
        return result

    server = make_server(host, port, app, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
