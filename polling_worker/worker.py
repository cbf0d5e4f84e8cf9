"""The poller: claims schedules due within the look-ahead and sends their occurrences to queue 2.

Overdue schedules are claimed too (the blueprint's poller silently dropped them). A claim is a
lease: if this poller dies between sending and advancing, another claims the schedule after the
lease and sends the same occurrences again, with the same occurrence ids, which the executor
deduplicates.

When the store is unreachable, claims are tried again after a bounded backoff
(``shared.backoff``) that notices its return at once; the writes after a claim (skips, advances)
are tried again while the claim's lease holds, so an outage between a claim and its advance
leaves no schedule leased until its lease ends.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from polling_worker.alerts import AlertSender, LateChecks
from shared.backoff import Backoff
from shared.calendar_reads import schedules_calendars
from shared.calendars import BusinessCalendar
from shared.changes import SYSTEM, Change, ChangeAction, FieldChange
from shared.counts import Counts, Series
from shared.definition_codec import DefinitionCodec
from shared.dispatch import DispatchPlan, plan_dispatch
from shared.errors import Transient
from shared.lateness import armed_check_at
from shared.lifecycle import Shutdown
from shared.messages import carry, encode_occurrence
from shared.metrics import (
    CLAIM_BATCH,
    CLAIM_LAG,
    OCCURRENCES_MISSED,
    OCCURRENCES_SENT,
    PROCESSING,
    RETENTION_DELETED,
    SCHEDULES_NOT_PLANNED,
    Heartbeat,
)
from shared.model import Occurrence, Schedule, ScheduleStatus
from shared.notifying import FailureEvent, missed_events
from shared.ports import (
    Advance,
    ClaimRequest,
    Clock,
    MessageQueue,
    OutgoingMessage,
    Store,
    SystemClock,
)
from shared.ports.spans import NoSpans, OpenSpan, SpanKind, Spans, SpanStart
from shared.recurrence import CPU_BUDGET_SECONDS, TooMuchWork
from shared.secrets import SecretBox
from shared.settings import Settings
from shared.store_rules import resumed_revision
from shared.timeutil import iso_z

log = logging.getLogger(__name__)

# Retention deletes in batches, at most this many per sweep, so a sweep never holds up polling.
SWEEP_BATCH = 1000
SWEEP_BATCHES = 20
# Pauses that ended (``until``) are looked for this often, and resumed this many at a time.
RESUME_EVERY_SECONDS = 1.0
RESUME_BATCH = 500
# The writes after a claim are tried again until this long before its lease ends: another
# poller may claim the schedules then.
LEASE_MARGIN_SECONDS = 1.0
# The CPU each claimed schedule's plan gets first; one that needs more (a rule costly to
# compute) is planned after the others are sent, with CPU_BUDGET_SECONDS, and at most
# COSTLY_PER_POLL such budgets are spent per poll.
QUICK_PLAN_SECONDS = 0.05
COSTLY_PER_POLL = 2
# How often the lateness of schedules with an alert is checked (polling_worker.alerts): at most
# one read of the store this often when none is due.
LATE_CHECK_SECONDS = 1.0

# Priority under a backlog (docs/architecture.md, "Priority under a backlog"): a claim takes
# the highest priority first (shared.claim_rules.BY_PRIORITY); while the poller is behind (its
# last claim came back full), every OLDEST_EVERY-th claim takes the earliest due whatever its
# priority, so the most overdue schedule waits at most that many claims.
OLDEST_EVERY = 4


# What the poller counts (``Poller.stats``), with the series each moves.
COUNTS: dict[str, list[Series]] = {
    "claimed": [],
    "sent": [OCCURRENCES_SENT],
    "skipped": [],
    "lost_leases": [],
    "not_planned": [SCHEDULES_NOT_PLANNED],
}


class Poller:
    def __init__(
        self,
        store: Store,
        occurrences: MessageQueue,
        settings: Settings,
        clock: Clock | None = None,
        alerts: AlertSender | None = None,
        spans: Spans | None = None,
        box: SecretBox | None = None,
    ) -> None:
        """``alerts`` sends the schedules' late and missed alerts; without it none is sent.
        ``box`` (the store's) seals what each occurrence needs to fire into its message
        (``shared.messages.carry``); without it the executors read it from the store."""
        self.store = store
        self.box = box
        self.spans = spans or NoSpans()
        self.occurrences = occurrences
        self.settings = settings
        self.owner = f"poller:{settings.worker_id}"
        self.clock = clock or SystemClock()
        self.stats = Counts(COUNTS)
        # Set to poll at once, e.g. by an in-process processor that stored a schedule due soon.
        self.wake = threading.Event()
        self.heartbeat = Heartbeat(max(30.0, 3 * settings.poll_interval_seconds))
        self.backoff = Backoff("poller")
        # Set when the process stops: ends a wait between tries.
        self.stopping = threading.Event()
        self._next_sweep = time.monotonic()
        self.alerts = alerts
        self.late_checks = LateChecks(store, alerts) if alerts is not None else None
        self._next_late_check = time.monotonic()
        # Claims in a row that came back full (the poller is behind).
        self._full_claims = 0
        self._next_resume = time.monotonic()

    def run(self, shutdown: Shutdown) -> None:
        log.info("poller started", extra={"event": "poller_started", "owner": self.owner})
        shutdown.link(self.wake)
        shutdown.link(self.stopping)
        while not shutdown.is_set():
            self.heartbeat.beat()
            started = time.monotonic()
            try:
                claimed = self.poll_once()
                if time.monotonic() >= self._next_sweep:
                    self.sweep_expired()
                if time.monotonic() >= self._next_late_check:
                    self.check_lateness()
                self.backoff.succeeded()
            except Transient as exc:
                # Tried again after the backoff's pause, not the poll interval: the store's
                # return is noticed at once (shared.backoff).
                shutdown.wait(self.backoff.failed(exc, time.monotonic() - started))
                continue
            except Exception:
                # The loop goes on whatever failed; the claims it held expire with their lease.
                log.exception("polling failed", extra={"event": "poller_error"})
                claimed = 0
            # A full batch means more is due right now: go again without waiting.
            if claimed < self.settings.claim_batch_size:
                self.wake.wait(self.settings.poll_interval_seconds)
                self.wake.clear()
        if self.alerts is not None:
            self.alerts.close()
        log.info("poller stopped", extra={"event": "poller_stopped"})

    def check_lateness(self) -> int:
        """Tell of the occurrences of schedules with an alert that have not started in time
        (``polling_worker.alerts.LateChecks``); how many."""
        self._next_late_check = time.monotonic() + LATE_CHECK_SECONDS
        if self.late_checks is None:
            return 0
        return self.late_checks.check(self.clock.now())

    def sweep_expired(self) -> tuple[int, int]:
        """Delete what retention no longer keeps; a large backlog is worked off over sweeps.
        Returns the execution records and schedules deleted; a schedule's changes go after
        the same time as its runs (``ChangeStore.purge_changes``), counted and logged."""
        settings = self.settings
        self._next_sweep = time.monotonic() + settings.retention_sweep_seconds
        now = self.clock.now()
        executions_before = now - timedelta(days=settings.execution_retention_days)
        schedules_before = now - timedelta(days=settings.schedule_retention_days)
        executions = schedules = changes = 0
        for _ in range(SWEEP_BATCHES):
            purged = self.store.purge_expired(executions_before, schedules_before, SWEEP_BATCH)
            executions += purged[0]
            schedules += purged[1]
            if max(purged) < SWEEP_BATCH:
                break
        for _ in range(SWEEP_BATCHES):
            removed = self.store.purge_changes(executions_before, SWEEP_BATCH)
            changes += removed
            if removed < SWEEP_BATCH:
                break
        RETENTION_DELETED.labels("execution").inc(executions)
        RETENTION_DELETED.labels("schedule").inc(schedules)
        RETENTION_DELETED.labels("change").inc(changes)
        if executions or schedules or changes:
            log.info(
                "retention deleted %d execution record(s), %d schedule(s) and %d change(s)",
                executions,
                schedules,
                changes,
                extra={"event": "retention_swept"},
            )
        return executions, schedules

    def resume_ended_pauses(self, now: datetime) -> int:
        """Resume the schedules whose pause ended by ``now`` (each once, whichever poller reads
        it first): the claim that follows fires what is due, the misfire policy applied to what
        the pause missed."""
        self._next_resume = time.monotonic() + RESUME_EVERY_SECONDS
        resumed = self.store.resume_ended_pauses(now, RESUME_BATCH)
        if resumed:
            self.store.record_changes([pause_ended(schedule, now) for schedule in resumed])
        for schedule in resumed:
            log.info(
                "schedule %s resumed: its pause ended at %s",
                schedule.schedule_id,
                iso_z(schedule.paused_until) if schedule.paused_until else "-",
                extra={
                    "event": "pause_ended",
                    "tenant": schedule.tenant,
                    "schedule_id": schedule.schedule_id,
                },
            )
        return len(resumed)

    def poll_once(self) -> int:
        """Claim one batch of due schedules, enqueue their occurrences, advance them."""
        settings = self.settings
        started = time.perf_counter()
        now = self.clock.now()
        horizon = now + timedelta(seconds=settings.lookahead_seconds)
        leased_until = time.monotonic() + settings.poller_lease_seconds - LEASE_MARGIN_SECONDS
        if time.monotonic() >= self._next_resume:
            self.resume_ended_pauses(now)
        claimed = self.store.claim_due_schedules(
            ClaimRequest(
                horizon=horizon,
                now=now,
                limit=settings.claim_batch_size,
                owner=self.owner,
                lease_until=now + timedelta(seconds=settings.poller_lease_seconds),
                oldest_first=self._full_claims % OLDEST_EVERY == OLDEST_EVERY - 1,
            )
        )
        full = len(claimed) >= settings.claim_batch_size
        self._full_claims = self._full_claims + 1 if full else 0
        CLAIM_BATCH.observe(len(claimed))
        if not claimed:
            return 0
        self.stats.add("claimed", len(claimed))
        for schedule in claimed:
            if schedule.next_schedule_time is not None:
                overdue = (now - schedule.next_schedule_time).total_seconds()
                CLAIM_LAG.observe(max(0.0, overdue))
        # The calendars the claimed schedules name, as they are now: one read per tenant.
        calendars = schedules_calendars(self.store, claimed)
        # A schedule whose times are costly to compute never holds back the others: each gets a
        # short budget first, and those that need more are planned after the others are sent.
        plans, costly = self._plan(claimed, now, horizon, QUICK_PLAN_SECONDS, calendars)
        self._dispatch(plans, now, leased_until)
        if costly:
            plans, _ = self._plan(
                costly[:COSTLY_PER_POLL], now, horizon, CPU_BUDGET_SECONDS, calendars
            )
            self._dispatch(plans, now, leased_until)
            for schedule in costly[COSTLY_PER_POLL:]:
                self._not_planned(schedule, "other costly schedules took this poll's budget")
        PROCESSING.labels("poller", "poll").observe(time.perf_counter() - started)
        return len(claimed)

    def _plan(
        self,
        claimed: list[Schedule],
        now: datetime,
        horizon: datetime,
        budget_seconds: float,
        calendars: Mapping[tuple[str, str], BusinessCalendar],
    ) -> tuple[list[tuple[Schedule, DispatchPlan]], list[Schedule]]:
        """The plans of the schedules computable within ``budget_seconds`` of CPU each, and
        the schedules that were not (left out of a first pass, to be planned with more).

        A schedule that cannot be planned is logged and left as it is: it keeps its lease,
        and is claimed again when the lease runs out."""
        settings = self.settings
        plans: list[tuple[Schedule, DispatchPlan]] = []
        costly: list[Schedule] = []
        for schedule in claimed:
            try:
                plan = plan_dispatch(
                    schedule,
                    now,
                    horizon,
                    settings.max_occurrences_per_claim,
                    timedelta(seconds=settings.misfire_threshold_seconds),
                    budget_seconds,
                    calendars.get((schedule.tenant, schedule.schedule_id)),
                )
            except TooMuchWork as exc:
                if budget_seconds < CPU_BUDGET_SECONDS:
                    costly.append(schedule)
                else:
                    self._not_planned(schedule, f"its next time is too costly: {exc}")
                continue
            except Exception as exc:
                # Unreadable (stored by an older version?): it never holds back the others.
                self._not_planned(schedule, f"cannot compute its occurrences: {exc!r}")
                continue
            plans.append((schedule, plan))
            OCCURRENCES_MISSED.inc(plan.missed_count)
        return plans, costly

    def _not_planned(self, schedule: Schedule, why: str) -> None:
        self.stats.add("not_planned")
        log.error(
            "schedule %s not dispatched: %s; tried again in %gs",
            schedule.schedule_id,
            why,
            self.settings.poller_lease_seconds,
            extra={
                "event": "schedule_not_planned",
                "tenant": schedule.tenant,
                "schedule_id": schedule.schedule_id,
            },
        )

    def _carried(self, plans: list[tuple[Schedule, DispatchPlan]]) -> dict[tuple[str, str], str]:
        """What the occurrences of each planned schedule need to fire, sealed once for all of
        them (``shared.messages.carry``: the definition's text as the store keeps it, or, for a
        schedule not read from a store, as it would), by tenant and schedule id."""
        if self.box is None:
            return {}
        box = self.box
        codec = DefinitionCodec(box)
        return {
            (schedule.tenant, schedule.schedule_id): carry(
                schedule.tenant,
                schedule.schedule_id,
                schedule.revision,
                schedule.stored_definition or codec.encode(schedule.live_definition),
                box,
            )
            for schedule, plan in plans
            if plan.to_send
        }

    def _dispatch(
        self, plans: list[tuple[Schedule, DispatchPlan]], now: datetime, leased_until: float
    ) -> None:
        """Send the planned occurrences, record the skips, then advance the schedules (the
        store's writes tried again until ``leased_until``, monotonic)."""
        if not plans:
            return
        to_send = [occurrence for _, plan in plans for occurrence in plan.to_send]
        # Recorded, each occurrence's dispatch span is the parent its attempts continue.
        spans = [self._span(occurrence) for occurrence in to_send] if self.spans.recording else []
        if spans:
            to_send = [
                replace(occurrence, trace=span.context)
                for occurrence, span in zip(to_send, spans, strict=True)
            ]
        carried = self._carried(plans)
        messages = [
            OutgoingMessage(
                encode_occurrence(
                    occurrence, carried.get((occurrence.tenant, occurrence.schedule_id))
                ),
                self._delay(occurrence.scheduled_time, now),
            )
            for occurrence in to_send
        ]
        # Send before advancing: a crash in between re-sends (deduplicated), never loses. In the
        # claim's order, the highest priority first: an SQS standard queue gives them back in
        # about that order, the SQLite queue exactly (by visibility, then as sent).
        try:
            self.occurrences.send(messages)
        except BaseException as exc:
            for span in spans:
                span.end(f"not sent: {type(exc).__name__}")
            raise
        for span in spans:
            span.end()
        self.stats.add("sent", len(messages))
        skips = [(item.occurrence, item.reason) for _, plan in plans for item in plan.skipped]
        if skips:
            missed = self._missed(plans, now, leased_until)
            self.backoff.call(
                lambda: self.store.record_skips(skips, now), self.stopping, leased_until
            )
            self.stats.add("skipped", len(skips))
            if self.alerts is not None:
                self.alerts.send(missed)
        # One batch for the claim (one transaction on SQLite), each under its own guard.
        advances = [
            Advance(
                claimed,
                plan.next_schedule_time,
                plan.occurrence_count,
                plan.sent_ahead,
                armed_check_at(claimed, plan.to_send),
            )
            for claimed, plan in plans
        ]
        applied = self.backoff.call(
            lambda: self.store.advance_schedules(advances, self.owner, now),
            self.stopping,
            leased_until,
        )
        for (schedule, plan), advanced in zip(plans, applied, strict=True):
            if not advanced:
                self.stats.add("lost_leases")
            log.info(
                "dispatched %d occurrence(s)",
                len(plan.to_send),
                extra={
                    "event": "schedule_dispatched",
                    "tenant": schedule.tenant,
                    "schedule_id": schedule.schedule_id,
                    "sent": len(plan.to_send),
                    "skipped": len(plan.skipped),
                    "next_schedule_time": iso_z(plan.next_schedule_time)
                    if plan.next_schedule_time
                    else None,
                    "advanced": advanced,
                },
            )

    def _missed(
        self, plans: list[tuple[Schedule, DispatchPlan]], now: datetime, leased_until: float
    ) -> list[FailureEvent]:
        """The ``occurrence.missed`` alerts of the occurrences the plans drop, of schedules with
        an alert: those without a record yet (a poller that died before its advance dropped
        the others, and told of them)."""
        events: list[FailureEvent] = []
        if self.alerts is None:
            return events
        for schedule, plan in plans:
            dropped = [item.occurrence for item in plan.skipped]
            found = missed_events(schedule, dropped, now)
            if not found:
                continue
            read = functools.partial(
                self.store.recorded_occurrences,
                schedule.tenant,
                schedule.schedule_id,
                [o.occurrence_id for o in dropped],
            )
            recorded = self.backoff.call(read, self.stopping, leased_until)
            events.extend(event for event in found if event.occurrence_id not in recorded)
        return events

    def _span(self, occurrence: Occurrence) -> OpenSpan:
        return self.spans.begin(
            SpanStart(
                "occurrence dispatch",
                SpanKind.PRODUCER,
                occurrence.trace,
                {
                    "scheduler.tenant": occurrence.tenant,
                    "scheduler.schedule.id": occurrence.schedule_id,
                    "scheduler.occurrence.id": occurrence.occurrence_id,
                    "scheduler.scheduled_time": iso_z(occurrence.scheduled_time),
                },
            )
        )

    def _delay(self, scheduled_time: datetime, now: datetime) -> float:
        """Whole seconds (as SQS counts them) so the message arrives a little before its time."""
        seconds = (scheduled_time - now).total_seconds() - self.settings.dispatch_lead_seconds
        return float(max(0, math.floor(seconds)))


def pause_ended(paused: Schedule, now: datetime) -> Change:
    """The change history's record of a pause that ended at its ``until``, resumed by the
    system at the state revision the resume made (written again, it is kept once)."""
    revision = resumed_revision(paused, now)
    return Change(
        paused.tenant,
        paused.schedule_id,
        revision,
        revision,
        now,
        ChangeAction.RESUME,
        SYSTEM,
        (FieldChange("state", ScheduleStatus.PAUSED.value, ScheduleStatus.ACTIVE.value),),
    )
