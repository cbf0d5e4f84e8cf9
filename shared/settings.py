"""One typed settings object per process, read once from ``SCHEDULER_*`` environment variables.

Nothing else in the code reads ``os.environ``: constructors receive the settings they need.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, get_type_hints

from shared.errors import ConfigurationError

PREFIX = "SCHEDULER_"


@dataclass(frozen=True)
class Settings:
    # Backends, as URLs: sqlite:///path/scheduler.db, mongodb://host/db, sqs://, sqs+http://host:port
    store_url: str = "sqlite:///data/scheduler.db"
    queue_url: str = "sqlite:///data/scheduler.db"
    mongo_database: str = "scheduler"
    aws_region: str = "us-east-1"
    mutations_queue: str = "scheduler-mutations"
    occurrences_queue: str = "scheduler-occurrences"
    dead_letter_queue: str = "scheduler-dead-letters"
    # A message received this many times without being deleted goes to the dead-letter queue.
    max_receives: int = 20

    # API
    host: str = "127.0.0.1"
    port: int = 8080
    api_workers: int = 2
    api_threads: int = 8
    max_body_bytes: int = 256 * 1024
    # Shortest time allowed between two occurrences of a recurring schedule.
    min_interval_seconds: float = 1.0

    # Processor
    processor_batch_size: int = 10

    # Poller
    poll_interval_seconds: float = 1.0
    lookahead_seconds: float = 300.0
    claim_batch_size: int = 200
    max_occurrences_per_claim: int = 100
    poller_lease_seconds: float = 30.0
    # How long before its time an occurrence becomes visible on queue 2.
    dispatch_lead_seconds: float = 2.0
    # An occurrence the poller finds more overdue than this was missed: the schedule's misfire
    # policy decides whether it runs.
    misfire_threshold_seconds: float = 5.0

    # Executor
    executor_concurrency: int = 32
    receive_batch_size: int = 10
    receive_wait_seconds: float = 1.0
    # Extra time past an attempt's timeout before another executor may take the occurrence over.
    execution_lease_margin_seconds: float = 30.0
    shutdown_timeout_seconds: float = 30.0
    webhook_secret: str = ""
    # Networks webhooks may target although private/loopback (comma-separated CIDRs).
    allowed_networks: tuple[str, ...] = ()

    # Observability
    log_format: str = "json"
    log_level: str = "INFO"
    # Workers serve /metrics and /healthz on this port (0: not served); the API serves its own.
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"

    # Worker identity (defaults to host:pid)
    worker_id: str = field(default_factory=lambda: f"{os.uname().nodename}:{os.getpid()}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``SCHEDULER_<FIELD>`` variables; ``overrides`` win over the environment."""
        environ = os.environ if environ is None else environ
        hints = get_type_hints(cls)
        values: dict[str, Any] = {}
        for spec in fields(cls):
            variable = PREFIX + spec.name.upper()
            if variable in environ:
                values[spec.name] = _convert(variable, environ[variable], hints[spec.name])
        values.update(overrides)
        settings = cls(**values)
        settings.validate()
        return settings

    def with_changes(self, **changes: Any) -> Settings:
        settings = dataclasses.replace(self, **changes)
        settings.validate()
        return settings

    def validate(self) -> None:
        def bad(name: str, reason: str) -> ConfigurationError:
            return ConfigurationError(f"{PREFIX}{name.upper()}: {reason}")

        for name in (
            "poll_interval_seconds",
            "lookahead_seconds",
            "poller_lease_seconds",
            "receive_wait_seconds",
            "min_interval_seconds",
        ):
            if getattr(self, name) <= 0:
                raise bad(name, "must be positive")
        if self.lookahead_seconds > 900:
            raise bad("lookahead_seconds", "at most 900 (the longest SQS delay)")
        if self.dispatch_lead_seconds < 0:
            raise bad("dispatch_lead_seconds", "must not be negative")
        for name in (
            "claim_batch_size",
            "max_occurrences_per_claim",
            "executor_concurrency",
            "max_receives",
            "processor_batch_size",
            "max_body_bytes",
        ):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        if not 1 <= self.receive_batch_size <= 10:
            raise bad("receive_batch_size", "between 1 and 10 (the SQS limit)")
        if not 0 <= self.port <= 65535:
            raise bad("port", "not a TCP port")
        if self.log_format not in ("json", "text"):
            raise bad("log_format", "json or text")
        for name in ("store_url", "queue_url"):
            url = getattr(self, name)
            if not url.startswith(("sqlite://", "mongodb://", "mongodb+srv://", "sqs")):
                raise bad(name, f"unsupported backend URL {url!r}")
        if self.store_url.startswith("sqs"):
            raise bad("store_url", "SQS is a queue, not a store: use mongodb:// or sqlite://")
        if self.queue_url.startswith("mongodb"):
            raise bad("queue_url", "MongoDB is a store, not a queue: use sqs:// or sqlite://")


def _convert(variable: str, raw: str, kind: Any) -> Any:
    try:
        if kind is bool:
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
        if kind == tuple[str, ...]:
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        return raw
    except ValueError:
        name = getattr(kind, "__name__", str(kind))
        raise ConfigurationError(f"{variable}: {raw!r} is not a valid {name}") from None
