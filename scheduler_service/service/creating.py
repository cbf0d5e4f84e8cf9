"""Creates and replaces: checked, then sent on queue 1, where the processor computes and stores
them.

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
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_service.service.checks import DefinitionChecks
from scheduler_service.service.recording import ChangeRecorder
from scheduler_service.service.revisions import RevisionClock
from shared.changes import Actor, ChangeAction, ChangeNote
from shared.errors import InvalidInput, SchedulerError
from shared.messages import DefinitionMutation, encode_mutation
from shared.model import Schedule, ScheduleDefinition, ScheduleStatus
from shared.notations import build_recurrence
from shared.ports import Clock, IdempotencyRecord, OutgoingMessage, Queues, SlotReservation, Store
from shared.ports.spans import NoSpans, SpanKind, Spans, SpanStart
from shared.quota_rules import LIVE_STATUSES
from shared.recurrence import TooMuchWork, cpu_budget
from shared.secrets import SecretBox, carries_mask, keep_masked_hook, keep_masked_secrets
from shared.settings import Settings
from shared.tracing import TraceContext

# A repeat of an idempotent create this long after the first, with the schedule still unknown,
# re-sends its mutation (the first may have died between recording and enqueueing).
RESEND_AFTER = timedelta(seconds=30)
# A quota reservation whose mutation the store has not seen after this long no longer counts.
SLOT_TTL = timedelta(hours=1)


class IdempotencyConflict(SchedulerError):
    """An ``Idempotency-Key`` reused with another request: the API answers 409."""


class QuotaExceeded(SchedulerError):
    """The tenant has as many schedules as its quota allows: the API answers 403."""


@dataclass(frozen=True)
class IdempotentRequest:
    """A create's ``Idempotency-Key`` and the fingerprint of its method, path and body."""

    key: str
    fingerprint: str


@dataclass(frozen=True)
class Accepted:
    schedule_id: str
    revision: int
    next_schedule_time: datetime | None
    timezone: str
    # The answer recorded for an earlier request with the same Idempotency-Key.
    replayed: bool = False


@dataclass(eq=False)
class Creation:
    """``secret_box`` seals the payloads of the mutations sent on queue 1; ``recorder`` notes
    each change for the history (sent with it); ``spans`` records each create, replace and
    patch (``shared.ports.spans``)."""

    store: Store
    queues: Queues
    settings: Settings
    clock: Clock
    secret_box: SecretBox
    checks: DefinitionChecks
    revisions: RevisionClock
    recorder: ChangeRecorder
    spans: Spans = dataclasses.field(default_factory=NoSpans)

    def accept_definition(
        self,
        tenant: str,
        schedule_id: str | None,
        definition: ScheduleDefinition,
        idempotency: IdempotentRequest | None = None,
        *,
        actor: Actor,
        action: ChangeAction | None = None,
        fire_if_past: bool = False,
        parent: TraceContext | None = None,
        operation: str = "create",
    ) -> Accepted:
        """Check the definition and send it on queue 1 (see the module docstring), or
        ``InvalidInput`` naming every bad field by its canonical name. A one-time schedule
        whose time passed more than ``misfire_threshold_seconds`` ago is refused unless
        ``fire_if_past`` (then it fires once, at once); a repeat of an ``Idempotency-Key``
        accepted before its time passed gets its answer again.

        The change history records it as ``action`` by ``actor`` (a create, or a replace of a
        stored schedule, unless ``action`` says otherwise: a patch), with the fields it changes
        from the stored definition (``scheduler_service.service.recording``).

        The definition's occurrences continue the trace of this ``operation``'s span
        ("create", "replace", "patch"), a child of ``parent`` (the request's ``traceparent``)
        or the start of a new trace."""
        span = self.spans.begin(
            SpanStart(
                f"schedule {operation}",
                SpanKind.SERVER,
                parent,
                {"scheduler.tenant": tenant, "scheduler.schedule.id": schedule_id},
            )
        )
        try:
            accepted = self._accept(
                tenant,
                schedule_id,
                dataclasses.replace(definition, trace=span.context),
                idempotency,
                fire_if_past,
                actor,
                action,
            )
        except BaseException as exc:
            span.end(type(exc).__name__)
            raise
        span.set(
            {"scheduler.schedule.id": accepted.schedule_id, "scheduler.revision": accepted.revision}
        )
        span.end()
        return accepted

    def _accept(
        self,
        tenant: str,
        schedule_id: str | None,
        definition: ScheduleDefinition,
        idempotency: IdempotentRequest | None,
        fire_if_past: bool,
        actor: Actor,
        action: ChangeAction | None,
    ) -> Accepted:
        now = self.clock.now()
        stored = self.store.get_schedule(tenant, schedule_id) if schedule_id else None
        definition = self.kept_secrets(stored.definition if stored else None, definition)
        # What the change history compares with: nothing for a new or deleted schedule.
        live = stored is not None and stored.status is not ScheduleStatus.DELETED
        before = stored.definition if stored is not None and live else None
        # The id is known before the checks: a cron line's H spreads by it.
        schedule_id = schedule_id or str(uuid.uuid4())
        next_time, late = self._checked(tenant, schedule_id, definition, now, fire_if_past)
        if idempotency is not None:
            recorded = self.store.get_idempotency_record(tenant, idempotency.key, now)
            if recorded is not None:
                note = self.recorder.definition_note(actor, None, definition, action)
                return self._answer_again(recorded, idempotency, definition, now, note)
        if late:
            raise InvalidInput(late)
        revision = self.revisions.next()
        reservation = self.reserve_slot(tenant, schedule_id, revision, now)
        try:
            note = self.recorder.definition_note(actor, before, definition, action)
            accepted = self._enqueue_definition(
                tenant, schedule_id, revision, definition, next_time, now, idempotency, note
            )
        except BaseException:
            if reservation is not None:
                self.store.release_schedule_slot(reservation)
            raise
        if reservation is not None and accepted.replayed:
            # A concurrent repeat of the same Idempotency-Key enqueued it, under its own id.
            self.store.release_schedule_slot(reservation)
        return accepted

    def accept_changes(
        self,
        tenant: str,
        changes: Sequence[tuple[Schedule, ScheduleDefinition]],
        *,
        all_or_none: bool = False,
        actor: Actor | None = None,
    ) -> list[Accepted | SchedulerError]:
        """``accept_definition`` of a new definition for each stored schedule (a bulk patch's
        page), sent on queue 1 in one ``send``: for each, in order, what was accepted, or
        the ``InvalidInput`` (or ``QuotaExceeded``) that refused it; with ``all_or_none``, the
        first ``InvalidInput`` is raised and nothing is sent. Only a schedule that is not live
        (completed) takes a slot of the quota: a live one holds one already. With ``actor``,
        each is recorded in its change history as a patch by ``actor``."""
        now = self.clock.now()
        answers: list[Accepted | SchedulerError] = []
        mutations: list[DefinitionMutation] = []
        reservations: list[SlotReservation] = []
        for stored, changed in changes:
            schedule_id = stored.schedule_id
            try:
                definition = self.keep_secrets(tenant, schedule_id, changed)
                # A timing the change keeps passed its checks when it was stored: only its
                # recurrence is built again (the checks walk 50 occurrences: most of a
                # change's CPU).
                kept = definition.timing == stored.live_definition.timing
                next_time, late = self._checked(tenant, schedule_id, definition, now, False, kept)
                if late:
                    raise InvalidInput(late)
                revision = self.revisions.next()
                if stored.status not in LIVE_STATUSES:
                    reservation = self.reserve_slot(tenant, schedule_id, revision, now)
                    reservations += [reservation] if reservation is not None else []
            except (InvalidInput, QuotaExceeded) as exc:
                answers.append(exc)
                continue
            note = None
            if actor is not None:
                note = self.recorder.definition_note(
                    actor, stored.definition, definition, ChangeAction.PATCH
                )
            mutations.append(
                DefinitionMutation(tenant, schedule_id, revision, now, definition, note)
            )
            answers.append(Accepted(schedule_id, revision, next_time, definition.timing.timezone))
        try:
            refused = [one for one in answers if isinstance(one, InvalidInput)]
            if all_or_none and refused:
                raise refused[0]
            self._send(*mutations)
        except BaseException:
            for reservation in reservations:
                with contextlib.suppress(Exception):
                    self.store.release_schedule_slot(reservation)
            raise
        return answers

    def _checked(
        self,
        tenant: str,
        schedule_id: str,
        definition: ScheduleDefinition,
        now: datetime,
        fire_if_past: bool,
        timing_checked: bool = False,
    ) -> tuple[datetime | None, dict[str, str]]:
        """The domain checks of a definition and its first time, or ``InvalidInput`` naming
        every bad field; with the time passed of a one-time schedule (unless
        ``fire_if_past``) apart, by field, for the caller to refuse. With ``timing_checked``
        its timing's checks are not run again: its recurrence is built as they would."""
        parts: dict[str, object] = {
            "payload": definition.payload,
            "retry": definition.retry,
            "on_failure": definition.on_failure,
            "calendar": definition.calendar,
        }
        if not timing_checked:
            parts["schedule"] = definition.timing
        # The checks and the first time share one budget.
        try:
            with cpu_budget():
                recurrence, errors = self.checks.domain_checks(parts, now, schedule_id, tenant)
                if timing_checked and not errors:
                    calendar = self.checks.business_calendar(tenant, definition.calendar)
                    recurrence = build_recurrence(
                        definition.timing, now, schedule_id, calendar=calendar
                    )
                late: dict[str, str] = {}
                if recurrence is not None and not fire_if_past:
                    late = self.checks.passed(definition.timing, recurrence, now)
                if errors or recurrence is None:
                    raise InvalidInput({**errors, **late})
                # The recurrence the checks built: a schedule's first time comes from it.
                return recurrence.first_fire(now), late
        except TooMuchWork as exc:
            raise InvalidInput({f"schedule.{definition.timing.kind}": str(exc)}) from None

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

    def keep_secrets(
        self, tenant: str, schedule_id: str | None, definition: ScheduleDefinition
    ) -> ScheduleDefinition:
        """Masked values sent back as an answer showed them keep the stored schedule's values
        (``shared.secrets.keep_masked_secrets``): a replace need not know a secret to keep it.
        Reads the stored schedule only for a definition that carries a mask."""
        if not self._carries_mask(definition):
            return definition
        stored = self.store.get_schedule(tenant, schedule_id) if schedule_id else None
        return self.kept_secrets(stored.definition if stored else None, definition)

    @staticmethod
    def _carries_mask(definition: ScheduleDefinition) -> bool:
        hook = definition.on_failure
        return carries_mask(definition.payload) or bool(hook and carries_mask(hook))

    def kept_secrets(
        self, stored_definition: ScheduleDefinition | None, definition: ScheduleDefinition
    ) -> ScheduleDefinition:
        """``keep_secrets`` with the stored definition read already."""
        if not self._carries_mask(definition):
            return definition
        hook = definition.on_failure
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

    def _send(self, *mutations: DefinitionMutation) -> None:
        if mutations:
            self.queues.mutations.send(
                [OutgoingMessage(encode_mutation(one, self.secret_box)) for one in mutations]
            )

    def _enqueue_definition(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_time: datetime | None,
        now: datetime,
        idempotency: IdempotentRequest | None,
        note: ChangeNote,
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
                return self._answer_again(in_force, idempotency, definition, now, note)
        try:
            self._send(DefinitionMutation(tenant, schedule_id, revision, now, definition, note))
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

    def _answer_again(
        self,
        record: IdempotencyRecord,
        request: IdempotentRequest,
        definition: ScheduleDefinition,
        now: datetime,
        note: ChangeNote,
    ) -> Accepted:
        """The answer ``record`` holds for an earlier request with the same key, or
        ``IdempotencyConflict`` for another request. Sent again (the schedule still unknown),
        the mutation carries ``note``, a create's."""
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
            self._send(
                DefinitionMutation(
                    record.tenant,
                    record.schedule_id,
                    record.revision,
                    record.created_at,
                    definition,
                    note,
                )
            )
        return Accepted(
            record.schedule_id,
            record.revision,
            record.next_schedule_time,
            record.timezone,
            replayed=True,
        )
