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

Quota: a tenant's active + paused schedules, plus the creates accepted but not yet applied.
Creates are applied asynchronously, so a count of the store alone misses those still on queue 1
(40 concurrent creates under a quota of 5 once made 17 schedules). Each create (and replace)
therefore holds a reservation in the store before it is sent (``reserve_schedule_slot``),
decided atomically against every other API process's: the quota holds exactly however many
processes take creates. A reservation stops counting once the store holds its mutation (or a
newer one: a delete that overtook it), is given back if the mutation is not sent, and expires
after ``SLOT_TTL`` (its process died before sending it, or the message was lost): a create
still on queue 1 after that long (the processor stopped) no longer counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from shared.describe import describe
from shared.dispatch import next_fire_time
from shared.errors import InvalidInput, NotFound, SchedulerError
from shared.messages import DefinitionMutation, encode_mutation, encode_occurrence
from shared.model import (
    Execution,
    ExecutionStatus,
    FailureHook,
    MisfirePolicy,
    Occurrence,
    Payload,
    RetryPolicy,
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
    SlotReservation,
    Store,
)
from shared.recurrence import (
    SEARCH_HORIZON,
    Bounded,
    OneTime,
    TooMuchWork,
    build_recurrence,
    cpu_budget,
    instant_in,
)
from shared.secrets import SecretBox, carries_mask, keep_masked_hook, keep_masked_secrets
from shared.settings import Settings
from shared.ssrf import TargetPolicy, TargetRefused
from shared.timeutil import iso_z, load_zone, to_epoch_ms
from shared.validation import check_timing

log = logging.getLogger(__name__)

# A repeat of an idempotent create this long after the first, with the schedule still unknown,
# re-sends its mutation (the first may have died between recording and enqueueing).
RESEND_AFTER = timedelta(seconds=30)
# A quota reservation whose mutation the store has not seen after this long no longer counts.
SLOT_TTL = timedelta(hours=1)
# A backfill's range: at most this long, holding at most this many occurrences.
MAX_BACKFILL_DAYS = 366
MAX_BACKFILL_OCCURRENCES = 1000
# Execution records read per page while a backfill looks for the runs of its range.
RECORDS_PAGE = 500


class IdempotencyConflict(SchedulerError):
    """An ``Idempotency-Key`` reused with another request: the API answers 409."""


class NoDeadLetter(NotFound):
    """No dead letter has this occurrence id (in the tenant): never failed, replayed or
    discarded already. The API answers 404."""


class NotReplayable(SchedulerError):
    """A dead letter of a deleted schedule: a replay would be skipped. The API answers 409."""


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


class LeftOut(NamedTuple):
    """An occurrence a backfill did not run, and why."""

    occurrence_id: str
    reason: str


@dataclass(frozen=True)
class Backfill:
    """What a backfill of a schedule queued, and what it left out and why (by occurrence id)."""

    schedule_id: str
    policy: MisfirePolicy
    queued: list[str]
    left_out: list[LeftOut]


@dataclass(frozen=True)
class Preview:
    """A timing's times (in its timezone) and what it says in English."""

    times: list[datetime]
    timezone: str
    description: str


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

    # -- mutations ---------------------------------------------------------------------

    def check(self, timing: Timing, now: datetime, schedule_id: str | None = None) -> Bounded:
        """The recurrence of a parsed timing, its domain checks passed (``shared.validation``);
        a cron line's ``H`` spreads by ``schedule_id``."""
        return check_timing(
            timing,
            now,
            timedelta(seconds=self.settings.min_interval_seconds),
            schedule_id=schedule_id,
        )

    def preview(
        self,
        timing: Timing,
        count: int,
        after: datetime | None = None,
        before: datetime | None = None,
        schedule_id: str | None = None,
    ) -> Preview:
        """The first ``count`` times of the timing accepted now, or at ``after``; or, with
        ``before``, its last ``count`` times before that moment (what should have fired), oldest
        first. ``after`` and ``before`` are wall times in the timing's zone, or instants. The
        timing is checked as a create would check it, within one CPU budget with its times."""
        if after is not None and before is not None:
            raise InvalidInput({"before": "give after or before, not both"})
        zone = load_zone(timing.timezone)
        try:
            with cpu_budget():
                if before is not None:
                    moment = instant_in(before, zone)
                    # As if accepted a search horizon earlier, so that its times up to now count.
                    recurrence = self.check(timing, _search_back(moment), schedule_id)
                    times = recurrence.before(moment, count)
                else:
                    accepted_at = self.clock.now() if after is None else instant_in(after, zone)
                    recurrence = self.check(timing, accepted_at, schedule_id)
                    times = list(recurrence.upcoming(accepted_at, count))
        except TooMuchWork as exc:
            raise InvalidInput({f"schedule.{timing.kind}": str(exc)}) from None
        return Preview(times, timing.timezone, describe(timing))

    def check_retry(self, retry: RetryPolicy) -> None:
        if retry.max_attempts > self.settings.max_receives:
            # Each attempt is a delivery of the message; past max_receives the queue itself
            # dead-letters it, before the attempts run out.
            raise InvalidInput(
                {
                    "retry.max_attempts": f"at most {self.settings.max_receives} here "
                    "(SCHEDULER_MAX_RECEIVES, the deliveries a message gets)"
                }
            )

    def domain_errors(
        self, parts: Mapping[str, Any], now: datetime, schedule_id: str | None = None
    ) -> dict[str, list[str]]:
        """The domain checks of a body's parts that were read (``schedule`` as a ``Timing``,
        ``payload``, ``retry``), every bad field named (by its canonical name): so a body with
        a bad field elsewhere still learns that its cron line is bad, in the same answer. A
        one-time schedule's time that has passed is one, unless ``parts["fire_if_past"]``."""
        recurrence, errors = self._domain_checks(parts, now, schedule_id)
        if recurrence is not None and not parts.get("fire_if_past"):
            for name, message in self._passed(parts["schedule"], recurrence, now).items():
                errors[name] = [message]
        return errors

    def _domain_checks(
        self, parts: Mapping[str, Any], now: datetime, schedule_id: str | None
    ) -> tuple[Bounded | None, dict[str, list[str]]]:
        """``domain_errors``, and the recurrence of a ``schedule`` that passed its checks."""
        recurrence: Bounded | None = None
        errors: dict[str, list[str]] = {}
        # A part that was not read is absent, or left as the partial dict marshmallow read.
        if isinstance(parts.get("schedule"), Timing):
            try:
                recurrence = self.check(parts["schedule"], now, schedule_id)
            except InvalidInput as exc:
                errors.update(exc.fields)
        checks: list[Callable[[], object]] = []
        if isinstance(parts.get("payload"), Payload):
            checks.append(lambda: self.check_target(parts["payload"].url))
        if isinstance(parts.get("on_failure"), FailureHook):
            checks.append(lambda: self.check_target(parts["on_failure"].url, "on_failure.url"))
        if isinstance(parts.get("retry"), RetryPolicy):
            checks.append(lambda: self.check_retry(parts["retry"]))
        for check in checks:
            try:
                check()
            except InvalidInput as exc:
                errors.update(exc.fields)
        return recurrence, errors

    def _passed(self, timing: Timing, recurrence: Bounded, now: datetime) -> dict[str, str]:
        """``schedule.at`` and why, when a one-time schedule's time passed more than the
        misfire threshold ago (it would fire at once, which a caller must ask for)."""
        if not isinstance(recurrence.inner, OneTime):
            return {}
        at = recurrence.inner.at
        if now - at <= timedelta(seconds=self.settings.misfire_threshold_seconds):
            return {}
        # at, or an EventBridge at(…) cron line.
        return {
            f"schedule.{timing.kind}": f"{iso_z(at)} has passed; to fire it once now anyway, "
            'add "fire_if_past": true to schedule'
        }

    def check_target(self, url: str, field: str = "payload.url") -> None:
        """The SSRF guard at creation: the URL's host as written (``shared.ssrf``)."""
        try:
            self.targets.check_url(url)
        except TargetRefused as exc:
            raise InvalidInput({field: f"refused target: {exc}"}) from None
        except ValueError as exc:
            raise InvalidInput({field: str(exc)}) from None

    def reserve_slot(
        self, tenant: str, schedule_id: str, revision: int, now: datetime
    ) -> SlotReservation | None:
        """Hold room in the tenant's quota for the mutation of ``revision``, or
        ``QuotaExceeded`` (see the module docstring). Returns the reservation to give back if
        the mutation is not sent; ``None`` without a quota."""
        quota = self.settings.tenant_schedule_quota
        if not quota:
            return None
        reservation = SlotReservation(tenant, schedule_id, revision, now + SLOT_TTL)
        taken = self.store.reserve_schedule_slot(reservation, quota, now)
        if taken is not None:
            raise QuotaExceeded(
                f"the tenant has {taken} active or paused schedules (counting creates not "
                f"yet applied); its quota is {quota}. Delete some, or ask for a larger quota."
            )
        return reservation

    def accept_definition(
        self,
        tenant: str,
        schedule_id: str | None,
        definition: ScheduleDefinition,
        idempotency: IdempotentRequest | None = None,
        *,
        fire_if_past: bool = False,
    ) -> Accepted:
        """Check the definition and send it on queue 1 (see the module docstring), or
        ``InvalidInput`` naming every bad field by its canonical name. A one-time schedule
        whose time passed more than ``misfire_threshold_seconds`` ago is refused unless
        ``fire_if_past`` (then it fires once, at once); a repeat of an ``Idempotency-Key``
        accepted before its time passed gets its answer again."""
        now = self.clock.now()
        definition = self.keep_secrets(tenant, schedule_id, definition)
        # The id is known before the checks: a cron line's H spreads by it.
        schedule_id = schedule_id or str(uuid.uuid4())
        parts = {
            "schedule": definition.timing,
            "payload": definition.payload,
            "retry": definition.retry,
            "on_failure": definition.on_failure,
        }
        # The checks and the first time share one budget.
        try:
            with cpu_budget():
                recurrence, errors = self._domain_checks(parts, now, schedule_id)
                late: dict[str, str] = {}
                if recurrence is not None and not fire_if_past:
                    late = self._passed(definition.timing, recurrence, now)
                if errors or recurrence is None:
                    raise InvalidInput({**errors, **late})
                # The recurrence the checks built: a schedule's first time comes from it.
                next_time = recurrence.first_fire(now)
        except TooMuchWork as exc:
            raise InvalidInput({f"schedule.{definition.timing.kind}": str(exc)}) from None
        if idempotency is not None:
            recorded = self.store.get_idempotency_record(tenant, idempotency.key, now)
            if recorded is not None:
                return self._replay(recorded, idempotency, definition, now)
        if late:
            raise InvalidInput(late)
        revision = self.revisions.next()
        reservation = self.reserve_slot(tenant, schedule_id, revision, now)
        try:
            accepted = self._enqueue_definition(
                tenant, schedule_id, revision, definition, next_time, now, idempotency
            )
        except BaseException:
            if reservation is not None:
                self.store.release_schedule_slot(reservation)
            raise
        if reservation is not None and accepted.replayed:
            # A concurrent repeat of the same Idempotency-Key enqueued it, under its own id.
            self.store.release_schedule_slot(reservation)
        return accepted

    def _enqueue_definition(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_time: datetime | None,
        now: datetime,
        idempotency: IdempotentRequest | None,
    ) -> Accepted:
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
        return Accepted(schedule_id, revision, next_time, timezone)

    def keep_secrets(
        self, tenant: str, schedule_id: str | None, definition: ScheduleDefinition
    ) -> ScheduleDefinition:
        """Masked values sent back as an answer showed them keep the stored schedule's values
        (``shared.secrets.keep_masked_secrets``): a replace need not know a secret to keep it."""
        hook = definition.on_failure
        if not carries_mask(definition.payload) and not (hook and carries_mask(hook)):
            return definition
        stored = self.store.get_schedule(tenant, schedule_id) if schedule_id else None
        stored_definition = stored.definition if stored else None
        payload = keep_masked_secrets(
            definition.payload,
            stored_definition.payload if stored_definition else None,
            self.settings.secret_headers,
        )
        hook = keep_masked_hook(
            hook,
            stored_definition.on_failure if stored_definition else None,
            self.settings.secret_headers,
        )
        return dataclasses.replace(definition, payload=payload, on_failure=hook)

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
            timing = schedule.live_definition.timing
            candidate = schedule.next_schedule_time
            if candidate is not None and candidate >= now:
                next_time: datetime | None = candidate
            else:
                try:
                    with cpu_budget():
                        recurrence = build_recurrence(timing, schedule.accepted_at, schedule_id)
                        next_time = recurrence.first_at_or_after(now)
                except ValueError as exc:  # too costly (TooMuchWork), or no longer readable
                    raise InvalidInput(
                        {
                            f"schedule.{timing.kind}": "cannot resume: its next time cannot be "
                            f"computed ({exc}); replace the schedule"
                        }
                    ) from None
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

    def backfill(
        self,
        tenant: str,
        schedule_id: str,
        start: datetime,
        end: datetime,
        policy: MisfirePolicy,
    ) -> Backfill:
        """Run the schedule's occurrences in ``[start, end)`` that did not run, now, straight
        onto queue 2 as the poller sends them: each with its normal occurrence id, so the
        executor and the receiver deduplicate them like any redelivery. ``fire_once`` runs only
        the latest of them. They go as manual runs: they fire even while the schedule is paused
        and however late they are (``misfire.grace_seconds`` is about the live schedule).

        Occurrences that succeeded or failed already (a failed one is a dead letter: replay it),
        or that are in flight, are left out; so are those the schedule would never have fired
        (``outside_bounds``). ``InvalidInput`` naming ``from`` or ``to`` for a range that is
        empty, in the future, longer than ``MAX_BACKFILL_DAYS`` or holding more than
        ``MAX_BACKFILL_OCCURRENCES``; nothing is queued then.
        """
        schedule = self.get(tenant, schedule_id)
        now = self.clock.now()
        errors: dict[str, str] = {}
        if end > now:
            errors["to"] = "in the future: a backfill runs occurrences that have passed"
        if end <= start:
            errors["from"] = "must be before to"
        elif end - start > timedelta(days=MAX_BACKFILL_DAYS):
            errors["from"] = f"the range is longer than {MAX_BACKFILL_DAYS} days; split it"
        if errors:
            raise InvalidInput(errors)
        definition = schedule.live_definition
        limit = definition.timing.max_occurrences
        # One budget for the range's times and for where max_occurrences ends.
        try:
            with cpu_budget():
                recurrence = build_recurrence(definition.timing, schedule.accepted_at, schedule_id)
                moments = _times_between(recurrence, start, end)
                try:
                    outside = outside_bounds(recurrence, schedule.accepted_at, limit, moments)
                except TooMuchWork:
                    raise InvalidInput(
                        {
                            "from": f"max_occurrences ({limit}) counts from the schedule's "
                            "first occurrence: too many of them lie before this range to count "
                            "in time"
                        }
                    ) from None
        except TooMuchWork as exc:
            raise InvalidInput({"from": f"the range is too costly to compute: {exc}"}) from None
        # A record's scheduled time is when it fired: up to the jitter after its nominal time.
        jitter = timedelta(seconds=definition.jitter_seconds)
        recorded = self._records_between(tenant, schedule_id, start, end + jitter)
        candidates: list[Occurrence] = []
        left_out: list[LeftOut] = []
        for moment in moments:
            occurrence = Occurrence(
                tenant=tenant,
                schedule_id=schedule_id,
                revision=schedule.revision,
                scheduled_time=moment,
                priority=definition.priority,
                manual=True,
            )
            record = recorded.get(occurrence.occurrence_id)
            if record is not None and record.status is not ExecutionStatus.SKIPPED:
                left_out.append(LeftOut(occurrence.occurrence_id, f"already {record.status.value}"))
            elif moment in outside:
                left_out.append(LeftOut(occurrence.occurrence_id, outside[moment]))
            else:
                candidates.append(occurrence)
        if policy is MisfirePolicy.FIRE_ONCE and len(candidates) > 1:
            left_out += [
                LeftOut(item.occurrence_id, "fire_once runs the latest") for item in candidates[:-1]
            ]
            candidates = candidates[-1:]
        if candidates:
            self.queues.occurrences.send(
                [OutgoingMessage(encode_occurrence(item)) for item in candidates]
            )
        return Backfill(
            schedule_id=schedule_id,
            policy=policy,
            queued=[item.occurrence_id for item in candidates],
            left_out=sorted(left_out),
        )

    def _records_between(
        self, tenant: str, schedule_id: str, start: datetime, end: datetime
    ) -> dict[str, Execution]:
        """The schedule's execution records scheduled in ``[start, end)``, by occurrence id:
        the history read from ``end`` back (a position before every record of ``end``). It
        leaves the superseded out: like every skipped occurrence, they did not run."""
        found: dict[str, Execution] = {}
        cursor: str | None = f"{to_epoch_ms(end)}|"
        while cursor is not None:
            page = self.store.list_executions(tenant, schedule_id, RECORDS_PAGE, cursor)
            for record in page.items:
                if record.scheduled_time < start:
                    return found
                found[record.occurrence_id] = record
            cursor = page.next_cursor
        return found

    def list_dead_letters(
        self,
        tenant: str,
        limit: int,
        cursor: str | None,
        schedule_ids: Collection[str] | None = None,
    ) -> Page[Execution]:
        return self.store.list_dead_letters(tenant, limit, cursor, schedule_ids)

    def replay(self, tenant: str, occurrence_id: str) -> Execution:
        """Fire a dead letter again: the same occurrence id and ``Idempotency-Key``, recorded
        as one more attempt of its record (``reopen_dead_letter``), with the schedule's current
        payload. It goes to queue 2 as a manual run (it fires even while the schedule is paused,
        however late); if it fails again it is a dead letter again. ``NoDeadLetter`` if there
        is none by that id, ``NotReplayable`` if its schedule is deleted."""
        record = self.store.get_execution(tenant, occurrence_id)
        if record is None or record.status is not ExecutionStatus.FAILED:
            raise NoDeadLetter(occurrence_id)
        schedule = self.store.get_schedule(tenant, record.schedule_id)
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            raise NotReplayable(
                f"schedule {record.schedule_id!r} is deleted: a replay would not fire. "
                "Discard the dead letter instead."
            )
        reopened = self.store.reopen_dead_letter(tenant, occurrence_id, self.clock.now())
        if reopened is None:
            raise NoDeadLetter(occurrence_id)  # discarded or replayed meanwhile
        occurrence = Occurrence(
            tenant=tenant,
            schedule_id=record.schedule_id,
            revision=schedule.revision,
            scheduled_time=record.scheduled_time,
            priority=schedule.live_definition.priority,
            occurrence_id=occurrence_id,
            manual=True,
        )
        try:
            self.queues.occurrences.send([OutgoingMessage(encode_occurrence(occurrence))])
        except BaseException:
            # Nothing will take the reopened record: a dead letter again, to replay later.
            with contextlib.suppress(Exception):
                self.store.restore_dead_letter(reopened)
            raise
        log.info(
            "dead letter replayed",
            extra={
                "event": "dead_letter_replayed",
                "tenant": tenant,
                "schedule_id": record.schedule_id,
                "occurrence_id": occurrence_id,
            },
        )
        return reopened

    def discard(self, tenant: str, occurrence_id: str) -> None:
        """Take a dead letter off the list; it stays ``failed`` in the schedule's history."""
        if not self.store.discard_dead_letter(tenant, occurrence_id, self.clock.now()):
            raise NoDeadLetter(occurrence_id)
        log.info(
            "dead letter discarded",
            extra={
                "event": "dead_letter_discarded",
                "tenant": tenant,
                "occurrence_id": occurrence_id,
            },
        )

    def next_fire_time(self, schedule: Schedule) -> datetime | None:
        """When the schedule fires next, as of now, as the store keeps it
        (``shared.dispatch.next_fire_time``: nothing is computed)."""
        return next_fire_time(schedule, self.clock.now())

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        return self.store.list_schedules(tenant, query, limit, cursor)

    def schedules_by_id(self, tenant: str, schedule_ids: Iterable[str]) -> dict[str, Schedule]:
        """The tenant's live schedules of these ids (not deleted ones), by id, in one read."""
        found = self.store.get_schedules([(tenant, schedule_id) for schedule_id in schedule_ids])
        return {
            schedule_id: schedule
            for (_, schedule_id), schedule in found.items()
            if schedule.status is not ScheduleStatus.DELETED
        }

    def list_executions(
        self,
        tenant: str,
        schedule_id: str,
        limit: int,
        cursor: str | None,
        status: ExecutionStatus | None = None,
    ) -> tuple[Schedule | None, Page[Execution]]:
        """The schedule as stored (``None`` once removed) and a page of its history: its runs,
        or with ``status`` its records in that status (``ExecutionStore.list_executions``). A
        deleted schedule's history stays readable until retention removes it; its tombstone may be
        removed first, and then the records left are still its history. ``NotFound`` for a
        schedule unknown or deleted with no history (a delete of an unknown id leaves a
        tombstone: it shows nothing)."""
        schedule = self.store.get_schedule(tenant, schedule_id)
        page = self.store.list_executions(tenant, schedule_id, limit, cursor, status)
        gone = schedule is None or schedule.status is ScheduleStatus.DELETED
        if gone and not page.items and cursor is None:
            raise NotFound(schedule_id)
        return schedule, page

    def execution(self, tenant: str, occurrence_id: str) -> Execution:
        """One occurrence's record (kept after its schedule is deleted, until retention);
        ``NotFound`` if the tenant has none by that id."""
        record = self.store.get_execution(tenant, occurrence_id)
        if record is None:
            raise NotFound(occurrence_id)
        return record


def _search_back(moment: datetime) -> datetime:
    try:
        return moment - SEARCH_HORIZON
    except OverflowError:
        raise InvalidInput({"before": "too early: after the year 9"}) from None


def _times_between(recurrence: Bounded, start: datetime, end: datetime) -> list[datetime]:
    """The times of the timing in ``[start, end)`` without its bounds (those outside them are
    left out of a backfill, and said); ``InvalidInput`` naming ``from`` if there are more than
    ``MAX_BACKFILL_OCCURRENCES``."""
    moments: list[datetime] = []
    moment = recurrence.inner.first_at_or_after(start)
    while moment is not None and moment < end:
        if len(moments) == MAX_BACKFILL_OCCURRENCES:
            raise InvalidInput(
                {
                    "from": f"the range holds more than {MAX_BACKFILL_OCCURRENCES} "
                    "occurrences; split it"
                }
            )
        moments.append(moment)
        moment = recurrence.inner.next_after(moment)
    return moments


def outside_bounds(
    recurrence: Bounded, accepted_at: datetime, limit: int | None, moments: list[datetime]
) -> dict[datetime, str]:
    """Which of ``moments`` (ascending times of ``recurrence.inner``) the schedule would never
    fire, and why: before its ``start``, after its ``end``, or, with ``limit``
    (``max_occurrences``), not among its first ``limit`` occurrences, counted as the poller
    counts them: from the first at or after its acceptance."""
    first: datetime | None = None
    last: datetime | None = None  # the limit-th, when the moments go past it
    if limit is not None and moments:
        for number, moment in enumerate(recurrence.upcoming(accepted_at, limit), 1):
            first = first or moment
            if moment >= moments[-1]:
                break
            if number == limit:
                last = moment
    outside: dict[datetime, str] = {}
    for moment in moments:
        if recurrence.start is not None and moment < recurrence.start:
            outside[moment] = f"before the schedule's start ({iso_z(recurrence.start)})"
        elif recurrence.end is not None and moment > recurrence.end:
            outside[moment] = f"after the schedule's end ({iso_z(recurrence.end)})"
        elif limit is not None and (first is None or moment < first):
            outside[moment] = "before the first occurrence, from which max_occurrences counts"
        elif last is not None and moment > last:
            outside[moment] = f"beyond max_occurrences ({limit}), the last was {iso_z(last)}"
    return outside


__all__ = ["InvalidInput", "ScheduleService"]
