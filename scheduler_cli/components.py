"""Building each component from settings and backends, the same way for every command."""

from __future__ import annotations

from execution_worker.worker import Executor
from polling_worker.alerts import AlertSender
from polling_worker.worker import Poller
from processor_worker.worker import Processor
from shared.adapters.http_sender import HttpSender
from shared.backends import Backends
from shared.ports import Clock, SystemClock
from shared.settings import Settings
from shared.ssrf import TargetPolicy
from shared.tenant_signers import TenantSigners


def build_processor(
    settings: Settings, backends: Backends, clock: Clock | None = None
) -> Processor:
    return Processor(
        backends.store,
        backends.queues.mutations,
        backends.queues.dead_letters,
        backends.secrets,
        batch_size=settings.processor_batch_size,
        wait_seconds=settings.receive_wait_seconds,
        clock=clock,
        spans=backends.spans,
    )


def build_poller(settings: Settings, backends: Backends, clock: Clock | None = None) -> Poller:
    clock = clock or SystemClock()
    signers = TenantSigners(
        backends.store,
        backends.secrets,
        settings.webhook_secret,
        clock,
        settings.signing_cache_seconds,
    )
    sender = HttpSender(policy=TargetPolicy(settings.allowed_networks))
    alerts = AlertSender(sender, signers, clock)
    return Poller(
        backends.store,
        backends.queues.occurrences,
        settings,
        clock,
        alerts,
        backends.spans,
        backends.secrets,
    )


def build_executor(settings: Settings, backends: Backends, clock: Clock | None = None) -> Executor:
    return Executor(
        backends.store,
        backends.queues.occurrences,
        backends.queues.dead_letters,
        HttpSender(
            max_connections=settings.executor_concurrency,
            policy=TargetPolicy(settings.allowed_networks),
            excerpt_bytes=settings.response_excerpt_bytes,
        ),
        settings,
        clock,
        backends.secrets,
        spans=backends.spans,
    )
