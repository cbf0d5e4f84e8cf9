"""The API's application layer: what each endpoint does, without HTTP.

Creates and replaces go through queue 1 (the processor computes and stores them); pause, resume
and delete are applied to the store at once, guarded by a state revision, because the contract
promises that no occurrence fires after a delete (or pause) is accepted: the executor checks the
schedule right before each call, so only a call already begun when the delete lands completes.
A manual trigger goes straight to queue 2.

Every method takes the caller's tenant: a schedule of another tenant is ``NotFound``.

Idempotent creation (``Idempotency-Key``): the answer is recorded *before* the mutation is
enqueued, so of two concurrent repeats only one enqueues. If the enqueue fails the record is
withdrawn; if the process dies in between, a repeat made after ``RESEND_AFTER`` finds the schedule
still unknown and sends the very same mutation (same id, revision and time), which the store
applies at most once.

Quota: the tenant's active + paused schedules are counted when a create is accepted. Creates are
applied asynchronously, so the count misses those still on queue 1: under concurrent creates a
tenant can exceed its quota by the creates in flight (milliseconds' worth). It is a guard
against runaway clients, not an exact limit. Each API process reads a tenant's count from the
store at most once a second and adds the creates it accepted since; only when that estimate
reaches the quota does it count again before refusing, so a create costs no count at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared.describe import describe
from shared.errors import InvalidInput, NotFound, SchedulerError
from shared.messages import DefinitionMutation, encode_mutation, encode_occurrence
from shared.model import (
    Execution,
    Occurrence,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
)
from shared.ports import (
    Clock,
    IdempotencyRecord,
    OutgoingMessage,
    Page,
    Queues,
    ScheduleFilter,
    Store,
)
from shared.recurrence import build_recurrence, first_occurrence
from shared.redaction import redact
from shared.secrets import SecretBox, carries_mask, keep_masked_secrets, masked_payload
from shared.settings import Settings
from shared.ssrf import TargetPolicy, TargetRefused
from shared.timeutil import iso_local, iso_z, load_zone
from shared.validation import CANONICAL_FIELDS, check_timing

# A repeat of an idempotent create this long after the first, with the schedule still unknown,
# re-sends its mutation (the first may have died between recording and enqueueing).
RESEND_AFTER = timedelta(seconds=30)
LIVE = (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED)


class IdempotencyConflict(SchedulerError):
    """An ``Idempotency-Key`` reused with another request: the API answers 409."""


class QuotaExceeded(SchedulerError):
    """The tenant has as many schedules as its quota allows: the API answers 403."""


@dataclass(frozen=True)
class IdempotentRequest:
    """A create's ``Idempotency-Key`` and the fingerprint of its method, path and body."""

    key: str
    fingerprint: str


class RevisionClock:
    """Revisions that order mutations: microseconds since the epoch, strictly increasing here.

    Several API processes order a schedule's mutations by their clocks; keep them in sync (NTP).
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return self._last


class TenantCounts:
    """Estimates of each tenant's live schedules: a store count at most ``max_age`` old, plus
    the creates this process accepted since. It over-counts deletes made meanwhile (a refusal
    counts again first) and misses other processes' creates of the last ``max_age``."""

    def __init__(self, store: Store, max_age_seconds: float = 1.0) -> None:
        self.store = store
        self.max_age_seconds = max_age_seconds
        self._counts: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def estimate(self, tenant: str) -> int:
        with self._lock:
            cached = self._counts.get(tenant)
        if cached is not None and time.monotonic() - cached[1] < self.max_age_seconds:
            return cached[0]
        return self.count(tenant)

    def count(self, tenant: str) -> int:
        """Count in the store now."""
        counted = self.store.count_tenant_schedules(tenant)
        with self._lock:
            self._counts[tenant] = (counted, time.monotonic())
        return counted

    def accepted(self, tenant: str) -> None:
        with self._lock:
            cached = self._counts.get(tenant)
            if cached is not None:
                self._counts[tenant] = (cached[0] + 1, cached[1])


@dataclass(frozen=True)
class Accepted:
    schedule_id: str
    revision: int
    next_schedule_time: datetime | None
    timezone: str
    # The answer recorded for an earlier request with the same Idempotency-Key.
    replayed: bool = False


class ScheduleService:
    def __init__(
        self, store: Store, queues: Queues, settings: Settings, clock: Clock, secret_box: SecretBox
    ) -> None:
        """``secret_box`` seals the payloads of the mutations sent on queue 1."""
        self.store = store
        self.secret_box = secret_box
        self.queues = queues
        self.settings = settings
        self.clock = clock
        self.revisions = RevisionClock()
        self.targets = TargetPolicy(settings.allowed_networks)
        self.tenant_counts = TenantCounts(store)

    # -- mutations ---------------------------------------------------------------------

    def check(self, timing: Timing, names: Mapping[str, str], now: datetime) -> datetime | None:
        """Domain checks of a parsed timing; returns its first occurrence."""
        check_timing(
            timing,
            now,
            timedelta(seconds=self.settings.min_interval_seconds),
            names={**CANONICAL_FIELDS, **names},
        )
        return first_occurrence(timing, now)

    def check_target(self, url: str) -> None:
        """The SSRF guard at creation: the URL's host as written (``shared.ssrf``)."""
        try:
            self.targets.check_url(url)
        except TargetRefused as exc:
            raise InvalidInput({"payload.url": f"refused target: {exc}"}) from None
        except ValueError as exc:
            raise InvalidInput({"payload.url": str(exc)}) from None

    def check_quota(self, tenant: str, schedule_id: str | None) -> None:
        """Best-effort (see the module docstring): a create that adds a live schedule is refused
        when the tenant already has ``tenant_schedule_quota`` of them."""
        quota = self.settings.tenant_schedule_quota
        if not quota:
            return
        if schedule_id is not None:
            existing = self.store.get_schedule(tenant, schedule_id)
            if existing is not None and existing.status in LIVE:
                return  # a replace: the count does not grow
        count = self.tenant_counts.estimate(tenant)
        if count >= quota:
            count = self.tenant_counts.count(tenant)
        if count >= quota:
            raise QuotaExceeded(
                f"the tenant has {count} active or paused schedules; its quota is {quota}. "
                "Delete some, or ask for a larger quota."
            )

    def accept_definition(
        self,
        tenant: str,
        schedule_id: str | None,
        definition: ScheduleDefinition,
        names: Mapping[str, str],
        idempotency: IdempotentRequest | None = None,
    ) -> Accepted:
        now = self.clock.now()
        definition = self.keep_secrets(tenant, schedule_id, definition)
        next_time = self.check(definition.timing, names, now)
        self.check_target(definition.payload.url)
        if definition.retry.max_attempts > self.settings.max_receives:
            # Each attempt is a delivery of the message; past max_receives the queue itself
            # dead-letters it, before the attempts run out.
            raise InvalidInput(
                {
                    "retry.max_attempts": f"at most {self.settings.max_receives} here "
                    "(SCHEDULER_MAX_RECEIVES, the deliveries a message gets)"
                }
            )
        if idempotency is not None:
            recorded = self.store.get_idempotency_record(tenant, idempotency.key, now)
            if recorded is not None:
                return self._replay(recorded, idempotency, definition, now)
        self.check_quota(tenant, schedule_id)
        schedule_id = schedule_id or str(uuid.uuid4())
        revision = self.revisions.next()
        timezone = definition.timing.timezone
        if idempotency is not None:
            record = IdempotencyRecord(
                tenant=tenant,
                key=idempotency.key,
                fingerprint=idempotency.fingerprint,
                schedule_id=schedule_id,
                revision=revision,
                next_schedule_time=next_time,
                timezone=timezone,
                created_at=now,
                expires_at=now + timedelta(seconds=self.settings.idempotency_ttl_seconds),
            )
            in_force, saved = self.store.save_idempotency_record(record, now)
            if not saved:
                return self._replay(in_force, idempotency, definition, now)
        mutation = DefinitionMutation(tenant, schedule_id, revision, now, definition)
        try:
            self.queues.mutations.send(
                [OutgoingMessage(encode_mutation(mutation, self.secret_box))]
            )
        except BaseException:
            if idempotency is not None:
                # Nothing was enqueued: a repeat must be free to try again. If even this fails,
                # a repeat re-sends after RESEND_AFTER.
                with contextlib.suppress(Exception):
                    self.store.delete_idempotency_record(
                        tenant, idempotency.key, idempotency.fingerprint
                    )
            raise
        self.tenant_counts.accepted(tenant)
        return Accepted(schedule_id, revision, next_time, timezone)

    def keep_secrets(
        self, tenant: str, schedule_id: str | None, definition: ScheduleDefinition
    ) -> ScheduleDefinition:
        """Masked values sent back as an answer showed them keep the stored schedule's values
        (``shared.secrets.keep_masked_secrets``): a replace need not know a secret to keep it."""
        if not carries_mask(definition.payload):
            return definition
        stored = self.store.get_schedule(tenant, schedule_id) if schedule_id else None
        stored_payload = stored.definition.payload if stored and stored.definition else None
        payload = keep_masked_secrets(
            definition.payload, stored_payload, self.settings.secret_headers
        )
        return dataclasses.replace(definition, payload=payload)

    def _replay(
        self,
        record: IdempotencyRecord,
        request: IdempotentRequest,
        definition: ScheduleDefinition,
        now: datetime,
    ) -> Accepted:
        if record.fingerprint != request.fingerprint:
            raise IdempotencyConflict(
                f"Idempotency-Key {record.key!r} was used with another request "
                f"(it created schedule {record.schedule_id!r}); use a new key for a new request"
            )
        if (
            now - record.created_at >= RESEND_AFTER
            and self.store.get_schedule(record.tenant, record.schedule_id) is None
        ):
            # Same body (same fingerprint), same id, revision and time: the store applies it
            # once, however many times it is sent.
            mutation = DefinitionMutation(
                record.tenant, record.schedule_id, record.revision, record.created_at, definition
            )
            self.queues.mutations.send(
                [OutgoingMessage(encode_mutation(mutation, self.secret_box))]
            )
        return Accepted(
            record.schedule_id,
            record.revision,
            record.next_schedule_time,
            record.timezone,
            replayed=True,
        )

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        schedule = self.store.get_schedule(tenant, schedule_id)
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)
        return schedule

    def delete(self, tenant: str, schedule_id: str) -> None:
        """Tombstone the schedule now. An unknown id is still tombstoned (a create may be in
        flight on queue 1 and must not land), then reported as not found."""
        existing = self.store.get_schedule(tenant, schedule_id)
        self.store.apply_state(
            tenant,
            schedule_id,
            self.revisions.next(),
            ScheduleStatus.DELETED,
            None,
            self.clock.now(),
        )
        if existing is None or existing.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)

    def pause(self, tenant: str, schedule_id: str) -> Schedule:
        schedule = self.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.ACTIVE:
            self.store.apply_state(
                tenant,
                schedule_id,
                self.revisions.next(),
                ScheduleStatus.PAUSED,
                None,
                self.clock.now(),
            )
        return self.get(tenant, schedule_id)

    def resume(self, tenant: str, schedule_id: str) -> Schedule:
        """Resume from now: occurrences that fell in the pause are not caught up."""
        schedule = self.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.PAUSED:
            now = self.clock.now()
            recurrence = build_recurrence(schedule.live_definition.timing, schedule.accepted_at)
            candidate = schedule.next_schedule_time
            next_time = (
                candidate
                if candidate is not None and candidate >= now
                else recurrence.first_at_or_after(now)
            )
            self.store.apply_state(
                tenant, schedule_id, self.revisions.next(), ScheduleStatus.ACTIVE, next_time, now
            )
        return self.get(tenant, schedule_id)

    def trigger(self, tenant: str, schedule_id: str) -> Occurrence:
        """One extra run now, straight onto queue 2; it fires even if the schedule is paused.

        Its id is ``<schedule_id>:manual:<UTC time>:<8 hex>``. A schedule id has no ``:``, so
        the part after the first ``:`` tells the two kinds apart: a scheduled occurrence's is a
        time (a digit first), a manual one's starts with ``manual``. The random suffix keeps two
        triggers in the same millisecond apart.
        """
        schedule = self.get(tenant, schedule_id)
        now = self.clock.now()
        occurrence = Occurrence(
            tenant=tenant,
            schedule_id=schedule_id,
            revision=schedule.revision,
            scheduled_time=now,
            priority=schedule.live_definition.priority,
            occurrence_id=f"{schedule_id}:manual:{iso_z(now)}:{secrets.token_hex(4)}",
            manual=True,
        )
        self.queues.occurrences.send([OutgoingMessage(encode_occurrence(occurrence))])
        return occurrence

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        return self.store.list_schedules(tenant, query, limit, cursor)

    def list_executions(
        self, tenant: str, schedule_id: str, limit: int, cursor: str | None
    ) -> Page[Execution]:
        self.get(tenant, schedule_id)
        return self.store.list_executions(tenant, schedule_id, limit, cursor)


def time_pair(moment: datetime | None, timezone: str) -> dict[str, str | None]:
    if moment is None:
        return {"utc": None, "local": None}
    return {"utc": iso_z(moment), "local": iso_local(moment, load_zone(timezone))}


def schedule_view(schedule: Schedule, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """The schedule as clients see it: secrets in the payload's URL, headers and query
    parameters masked by name and by shape (``shared.secrets.masked_payload``)."""
    definition = schedule.live_definition
    timing = definition.timing
    payload = masked_payload(definition.payload, secret_patterns)
    next_time = time_pair(schedule.next_schedule_time, timing.timezone)
    return {
        "id": schedule.schedule_id,
        "name": definition.name,
        "description": definition.description,
        # The user's "description" above is their own text; this one says when it fires.
        "schedule_description": describe(timing),
        "type": definition.type,
        "status": schedule.status.value,
        "revision": schedule.revision,
        "schedule": definition.request.get("schedule", timing.to_document()),
        "timing": timing.to_document(),
        "timezone": timing.timezone,
        "next_schedule_time": next_time["utc"],
        "next_schedule_time_local": next_time["local"],
        "payload": payload,
        "metadata": dict(definition.metadata),
        "tags": list(definition.tags),
        "priority": definition.priority,
        "retry": definition.retry.to_document(),
        "misfire": definition.misfire.to_document(),
        "runs": schedule.run_count,
        "failures": schedule.failure_count,
        "consecutive_failures": schedule.consecutive_failures,
        "occurrences_dispatched": schedule.occurrence_count,
        "last_run_at": iso_z(schedule.last_run_at) if schedule.last_run_at else None,
        "last_status": schedule.last_status,
        "created_at": iso_z(schedule.created_at),
        "updated_at": iso_z(schedule.updated_at),
    }


def execution_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """An execution as clients see it: an HTTP client's error may quote the URL it called."""

    def stamp(moment: datetime | None) -> str | None:
        return iso_z(moment) if moment else None

    return {
        "occurrence_id": execution.occurrence_id,
        "schedule_id": execution.schedule_id,
        "scheduled_time": iso_z(execution.scheduled_time),
        "status": execution.status.value,
        "attempts": execution.attempts,
        "http_status": execution.http_status,
        "duration_ms": execution.duration_ms,
        "lateness_ms": execution.lateness_ms,
        "error": None if execution.error is None else redact(execution.error, secret_patterns),
        "started_at": stamp(execution.started_at),
        "finished_at": stamp(execution.finished_at),
        "next_attempt_at": stamp(execution.next_attempt_at),
        "manual": execution.manual,
    }


__all__ = ["InvalidInput", "ScheduleService"]
