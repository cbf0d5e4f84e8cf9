"""One typed settings object per process, read once from ``SCHEDULER_*`` environment variables.

Nothing else in the code reads ``os.environ``: constructors receive the settings they need.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, get_type_hints

from limits import parse_many

from shared.errors import ConfigurationError
from shared.ports.keys import Role
from shared.redaction import DEFAULT_SECRET_NAMES
from shared.secrets import SecretBox

PREFIX = "SCHEDULER_"
OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
TENANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]{0,63}$")
API_AUTH_MODES = ("auto", "keys", "none")
# A DNS name: labels of letters, digits, hyphens (and underscores, which some names have).
HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_][A-Za-z0-9_-]{0,62}(\.[A-Za-z0-9_-]{1,63})*\.?$")


@dataclass(frozen=True)
class Settings:
    # Backends, as URLs: sqlite:///path/scheduler.db, mongodb://host/db, sqs://, sqs+http://host:port.
    # No default: a component started alone refuses to guess where the data is
    # (``require_backends``); only ``scheduler dev`` picks its own (``--data-dir``).
    store_url: str = ""
    queue_url: str = ""
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
    # Threads per API process that run requests, each read whole first (an event loop holds
    # the connections: scheduler_service/front.py).
    api_threads: int = 8
    # Connections an API process serves at once; a request on one more is answered 503.
    api_max_connections: int = 2048
    # How long a client may take to send a request whole, and may leave an answer unread.
    api_client_timeout_seconds: float = 10.0
    max_body_bytes: int = 256 * 1024
    # Shortest time allowed between two occurrences of a recurring schedule.
    min_interval_seconds: float = 1.0
    # "keys": every request needs an API key (X-API-Key or Authorization: Bearer); "none": no
    # keys, every caller is default_tenant (scheduler dev); "auto": "keys" as soon as a key is
    # configured in api_keys or stored (scheduler keys create), "none" until then.
    api_auth: str = "keys"
    # API keys from the environment, each "tenant:sha256:<hex SHA-256 of the key>" or, less
    # safely, "tenant:<key>" (hashed at start; only the hash is kept). The tenant may be
    # followed by "/read", "/write" or "/admin", the key's role (``key_entry``); without, admin.
    api_keys: tuple[str, ...] = ()
    # The tenant of requests without a key, where api_auth lets them in.
    default_tenant: str = "default"
    # Host names the API answers for beside IP addresses and localhost ("*": any); checked
    # while requests need no key, always once set (scheduler_service.origins).
    allowed_hosts: tuple[str, ...] = ()
    # How many schedules that can still fire (active + paused) a tenant may have; 0: no limit.
    tenant_schedule_quota: int = 10_000
    # Requests a tenant may make to each API process, in the notation of the ``limits``
    # library: "100/second;2000/minute". Over it: 429 with Retry-After. Empty: no limit.
    tenant_rate_limit: str = ""
    # How long the answer to a create with an Idempotency-Key is kept for its repeats.
    idempotency_ttl_seconds: float = 86_400.0
    # Page size of the list endpoints when ?limit is absent, and the largest one allowed.
    default_page_size: int = 50
    max_page_size: int = 200
    # Webhook header and query parameter names whose values are secret (case-insensitive shell
    # patterns): masked in every API response, never logged; only the executor's call uses
    # them. Values shaped like credentials are masked whatever their name.
    secret_headers: tuple[str, ...] = DEFAULT_SECRET_NAMES
    # Keys that seal webhook secrets (URL, headers, query, body) in the store and on queue 1:
    # AES-256 keys (`scheduler secret-key` makes one), comma-separated, newest first: the first
    # seals, every one opens. Required with MongoDB; with SQLite, empty means the key file
    # `secret-keys` beside the database (made, mode 0600, if missing).
    secret_keys: tuple[str, ...] = field(default=(), repr=False)

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
    executor_concurrency: int = 64
    # Calls in flight to one host at most (a schedule's payload.calls_per_host overrides it), so
    # one slow endpoint cannot take every call slot; the rest wait their turn.
    executor_calls_per_host: int = 32
    receive_batch_size: int = 10
    receive_wait_seconds: float = 1.0
    # Extra time past an attempt's timeout before another executor may take the occurrence over.
    execution_lease_margin_seconds: float = 30.0
    shutdown_timeout_seconds: float = 30.0
    webhook_secret: str = field(default="", repr=False)
    # Signing secrets per tenant (shared.signing): how long the secrets a rotation replaces keep
    # signing beside the new one, unless the rotation says; and how long an executor keeps a
    # tenant's secrets before reading them again (a rotation signs within that).
    signing_overlap_seconds: float = 86_400.0
    signing_cache_seconds: float = 10.0
    # How much of each webhook answer's body an attempt keeps (0: none; at most 65536).
    response_excerpt_bytes: int = 1024
    # Networks webhooks may target although private, loopback, link-local or reserved
    # (comma-separated CIDRs); scheduler dev allows loopback. Everything else non-public is refused.
    allowed_networks: tuple[str, ...] = ()
    # Where sqs and sns delivery targets are sent (and role_arn assumed): AWS's regional
    # endpoints when empty; an endpoint of your own, such as LocalStack's, when set (then a
    # queue URL need not be an AWS one: its host is never contacted either way).
    target_aws_endpoint_url: str = ""

    # Retention: finished execution records, and completed or deleted schedules, are deleted
    # this long after they finished (keep deletes' tombstones longer than queue 1 keeps a
    # message: SQS keeps one 14 days at most). The pollers sweep every retention_sweep_seconds.
    execution_retention_days: float = 30.0
    schedule_retention_days: float = 30.0
    retention_sweep_seconds: float = 600.0

    # Observability
    log_format: str = "json"
    log_level: str = "INFO"
    # Workers serve /metrics and /healthz on this port (0: not served); the API serves its own.
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"
    # How old the schedules-by-status gauge may be: counting is a scan of the store.
    schedule_counts_seconds: float = 30.0
    # Spans exported over OTLP (docs/tracing.md): set from OpenTelemetry's own variables,
    # OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which the SDK reads.
    trace_export: bool = False

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
        # The AWS SDKs' own variables name the region when ours does not.
        for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
            if "aws_region" not in values and environ.get(variable):
                values["aws_region"] = environ[variable]
        if "trace_export" not in values:
            values["trace_export"] = any(environ.get(variable) for variable in OTLP_ENDPOINTS)
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
            "retention_sweep_seconds",
            "api_client_timeout_seconds",
        ):
            if getattr(self, name) <= 0:
                raise bad(name, "must be positive")
        if self.lookahead_seconds > 900:
            raise bad("lookahead_seconds", "at most 900 (the longest SQS delay)")
        if self.schedule_counts_seconds < 0:
            raise bad("schedule_counts_seconds", "must not be negative")
        if self.dispatch_lead_seconds < 0:
            raise bad("dispatch_lead_seconds", "must not be negative")
        if not 0 <= self.signing_overlap_seconds <= 30 * 86_400:
            raise bad("signing_overlap_seconds", "between 0 and 2592000 (30 days)")
        if not 0 < self.signing_cache_seconds <= 300:
            raise bad("signing_cache_seconds", "more than 0, at most 300")
        for name in (
            "claim_batch_size",
            "max_occurrences_per_claim",
            "executor_concurrency",
            "executor_calls_per_host",
            "max_receives",
            "processor_batch_size",
            "max_body_bytes",
            "default_page_size",
            "max_page_size",
            "api_workers",
            "api_threads",
            "api_max_connections",
        ):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        if not 0 <= self.response_excerpt_bytes <= 65536:
            raise bad("response_excerpt_bytes", "between 0 and 65536")
        if not 1 <= self.receive_batch_size <= 10:
            raise bad("receive_batch_size", "between 1 and 10 (the SQS limit)")
        if not 0 <= self.port <= 65535:
            raise bad("port", "not a TCP port")
        if self.log_format not in ("json", "text"):
            raise bad("log_format", "json or text")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise bad("log_level", "DEBUG, INFO, WARNING, ERROR or CRITICAL")
        for name in ("execution_retention_days", "schedule_retention_days"):
            if getattr(self, name) <= 0:
                raise bad(name, "must be positive")
        if self.schedule_retention_days < 15:
            raise bad(
                "schedule_retention_days",
                "at least 15: a tombstone must outlive any create still on queue 1 (SQS keeps "
                "messages up to 14 days)",
            )
        for name in ("store_url", "queue_url"):
            url = getattr(self, name)
            if url and not url.startswith(("sqlite://", "mongodb://", "mongodb+srv://", "sqs")):
                raise bad(name, f"unsupported backend URL {url!r}")
        if self.store_url.startswith("sqs"):
            raise bad("store_url", "SQS is a queue, not a store: use mongodb:// or sqlite://")
        if self.queue_url.startswith("mongodb"):
            raise bad("queue_url", "MongoDB is a store, not a queue: use sqs:// or sqlite://")
        if self.api_auth not in API_AUTH_MODES:
            raise bad("api_auth", f"one of {', '.join(API_AUTH_MODES)}")
        for name in self.allowed_hosts:
            if name != "*" and not HOST_NAME.match(name):
                raise bad("allowed_hosts", f"{name!r} is not a host name (or *)")
        if not TENANT_NAME.match(self.default_tenant):
            raise bad("default_tenant", "1-64 characters: letters, digits, . _ ~ -")
        for entry in self.api_keys:
            parsed = key_entry(entry)
            if parsed is None:
                raise bad(
                    "api_keys",
                    "each entry is tenant[/role]:sha256:<hex> or tenant[/role]:<key>, "
                    "the role read, write or admin",
                )
            tenant, _, key = parsed
            digest = key.removeprefix("sha256:")
            if key.startswith("sha256:") and not re.fullmatch(r"[0-9a-f]{64}", digest):
                raise bad("api_keys", f"the key hash of tenant {tenant!r} is not 64 hex digits")
            if not key.startswith("sha256:") and len(key) < 16:
                raise bad("api_keys", f"the key of tenant {tenant!r} is under 16 characters")
        if self.tenant_rate_limit.strip():
            try:
                parse_many(self.tenant_rate_limit)
            except ValueError:
                raise bad("tenant_rate_limit", "limits such as 100/second;2000/minute") from None
        if self.tenant_schedule_quota < 0:
            raise bad("tenant_schedule_quota", "must not be negative (0: no limit)")
        if self.idempotency_ttl_seconds <= 0:
            raise bad("idempotency_ttl_seconds", "must be positive")
        if self.default_page_size > self.max_page_size:
            raise bad("default_page_size", "must not exceed max_page_size")
        for network in self.allowed_networks:
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise bad("allowed_networks", f"{network!r} is not a CIDR network") from None
        if self.target_aws_endpoint_url and not re.match(
            r"^https?://[^/?#\s]+/?$", self.target_aws_endpoint_url
        ):
            raise bad(
                "target_aws_endpoint_url", "an http(s) URL of a host, such as http://127.0.0.1:4566"
            )
        if not all(pattern.strip() for pattern in self.secret_headers):
            raise bad("secret_headers", "empty pattern")
        if self.secret_keys:
            SecretBox(self.secret_keys)
        elif self.store_url.startswith("mongodb"):
            raise bad(
                "secret_keys",
                "required with a MongoDB store (it seals webhook secrets); make one with "
                "`scheduler secret-key`",
            )

    @property
    def own_queue_names(self) -> frozenset[str]:
        """The scheduler's own queues, which no schedule may target."""
        return frozenset({self.mutations_queue, self.occurrences_queue, self.dead_letter_queue})

    def require_backends(self, *names: str) -> None:
        """Every backend URL of ``names`` (the store's and the queues' by default) is set:
        ``ConfigurationError`` naming the first that is not."""
        for name in names or BACKENDS:
            if not getattr(self, name):
                raise BackendNotSet(
                    f"{PREFIX}{name.upper()} is not set (a component started alone does not "
                    "guess where the data is)"
                )


BACKENDS = ("store_url", "queue_url")


class BackendNotSet(ConfigurationError):
    """A backend URL a process needs is not set."""


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


def key_entry(entry: str) -> tuple[str, Role, str] | None:
    """The tenant, role and key (``sha256:<hex>`` or the key) of a ``SCHEDULER_API_KEYS``
    entry, ``tenant[/role]:key``; a key without a role is ``admin``, as every key was before
    roles. ``None`` for an entry that is not of that form."""
    owner, _, key = entry.partition(":")
    tenant, slash, role = owner.partition("/")
    if not TENANT_NAME.match(tenant) or (slash and role not in {r.value for r in Role}):
        return None
    return tenant, Role(role) if role else Role.ADMIN, key
