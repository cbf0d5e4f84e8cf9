"""What the executor reports, in one place: its counts (``COUNTS``), its Prometheus
metrics (``shared.metrics``) and its log lines. The roles call a hook when something happens;
the hooks count and log, so the roles' code says only what they do (the idea of dramatiq's
middleware: metrics and logs on hooks, off the hot path's code).

Work that comes in batches is reported a batch at a time: received, checked and begun, settled.
The hooks that count in ``stats`` are called on the event loop only. The others are marked
"any thread": they only log and update metrics, both thread-safe, so the store and queue threads
call them where the thing happens.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from execution_worker.superseding import SupersededLog
from shared.counts import Counts, Series
from shared.decisions import Superseded
from shared.errors import Transient
from shared.execution_rules import run_lateness_ms
from shared.metrics import (
    EXECUTIONS,
    FIRE_LATENESS,
    FIRE_PROCESSING,
    RETRIES,
    SCHEDULES_AUTO_PAUSED,
    SUCCEEDED,
    WEBHOOK_DURATION,
    count_responses,
    observe_all,
)
from shared.model import ExecutionStatus, Occurrence, Schedule
from shared.notifying import NotificationReports

if TYPE_CHECKING:
    from execution_worker.settler import Settled

log = logging.getLogger(__name__)


# What the executor counts (``ExecutorObserver.stats``), with the series each moves.
COUNTS: dict[str, list[Series]] = {
    "received": [],
    "succeeded": [SUCCEEDED],
    "failed": [(EXECUTIONS, "failed")],
    "retried": [RETRIES, (EXECUTIONS, "retrying")],
    "skipped": [(EXECUTIONS, "skipped")],
    "superseded": [],
    "duplicates": [(EXECUTIONS, "duplicate")],
    "poisoned": [],
}


class ExecutorObserver(NotificationReports):
    """The executor's roles report here; its ``Notifier`` too (the notification hooks of
    ``shared.notifying.NotificationReports``)."""

    def __init__(self, owner: str = "executor") -> None:
        self.owner = owner
        self.stats = Counts(COUNTS)
        self.superseded_log = SupersededLog()

    # -- starting and stopping (the loop) ----------------------------------------------------

    def started(self, signed: bool) -> None:
        log.info("executor started", extra={"event": "executor_started", "owner": self.owner})
        if not signed:
            log.warning(
                "SCHEDULER_WEBHOOK_SECRET is not set: webhooks are sent unsigned, but those of "
                "tenants with signing secrets of their own (POST /signing-secrets/rotate)",
                extra={"event": "webhooks_unsigned"},
            )

    def stopped(self, finished: bool, in_flight: int) -> None:
        log.info(
            "executor stopped" if finished else "executor stopped with calls in flight",
            extra={"event": "executor_stopped", "in_flight": in_flight},
        )

    # -- receiving ---------------------------------------------------------------------------

    def received(self, count: int, poisoned: Sequence[str]) -> None:
        """A receive hop held ``count`` occurrences and dead-lettered the ``poisoned`` messages
        (why each could not be decoded)."""
        self.stats.add("received", count)
        self.stats.add("poisoned", len(poisoned))
        for problem in poisoned:
            log.error("poison message on queue 2: %s", problem, extra={"event": "poison_message"})

    def receive_failed(self, error: Exception) -> None:
        """Called in the ``except`` block of a receive that raised."""
        if isinstance(error, Transient):
            log.warning("queue unavailable: %s", error, extra={"event": "transient_error"})
        else:
            log.exception("receive failed", extra={"event": "receive_failed"})

    # -- checking and beginning --------------------------------------------------------------

    def checked(
        self,
        skipped: Sequence[tuple[Occurrence, str]],
        superseded: Sequence[tuple[Occurrence, Superseded]],
        duplicates: int,
    ) -> None:
        """A check-and-begin batch skipped these occurrences (each with its reason), found
        these superseded (each with its change: counted each, logged once per change), and
        ``duplicates`` deliveries of occurrences already final."""
        self.stats.add("duplicates", duplicates)
        self.stats.add("superseded", len(superseded))
        for occurrence, change in superseded:
            self.superseded_log.tell(occurrence, change)
        if not skipped:
            return
        self.stats.add("skipped", len(skipped))
        for occurrence, reason in skipped:
            log.info(
                "occurrence skipped: %s",
                reason,
                extra={
                    "event": "occurrence_skipped",
                    "tenant": occurrence.tenant,
                    "schedule_id": occurrence.schedule_id,
                    "occurrence_id": occurrence.occurrence_id,
                    "reason": reason,
                },
            )

    def begin_failed(self) -> None:
        """(any thread) In the ``except`` block of a batch whose records could not be begun."""
        log.exception("could not begin attempts", extra={"event": "fire_failed"})

    def fire_failed(self, occurrence_id: str | None = None) -> None:
        """In the ``except`` block of a batch (or, with its id, a call) that failed."""
        extra = {"event": "fire_failed"}
        if occurrence_id is not None:
            extra["occurrence_id"] = occurrence_id
        log.exception("firing failed", extra=extra)

    def release_failed(self) -> None:
        """(any thread) A held message could not be handed back at a stop."""
        log.warning("could not release a held message; it returns after its timeout")

    # -- outcomes ----------------------------------------------------------------------------

    def settling(self, batch: Sequence[Settled]) -> None:
        """A batch of attempts that ended, handed to the settler: counted, measured, logged."""
        statuses: Counter[ExecutionStatus] = Counter()
        answers: list[int | None] = []
        durations: list[float] = []
        latenesses: list[float] = []
        processing: list[float] = []
        for settled in batch:
            outcome = settled.outcome
            statuses[outcome.status] += 1
            answers.append(outcome.answer.status)
            if outcome.answer.status is not None and outcome.duration_ms is not None:
                durations.append(outcome.duration_ms / 1000.0)
            if settled.execution.lateness_ms is None:
                # The run's first attempt that ends: its lateness, as the record keeps it.
                lateness = run_lateness_ms(settled.execution, outcome)
                if lateness is not None:
                    latenesses.append(max(0.0, lateness / 1000.0))
            if settled.processing_seconds is not None:
                processing.append(settled.processing_seconds)
        observe_all(WEBHOOK_DURATION, durations)
        observe_all(FIRE_LATENESS, latenesses)
        observe_all(FIRE_PROCESSING, processing)
        count_responses(answers)
        succeeded = statuses[ExecutionStatus.SUCCEEDED]
        self.stats.add("succeeded", succeeded)
        self.stats.add("retried", statuses[ExecutionStatus.RETRYING])
        self.stats.add("failed", statuses[ExecutionStatus.FAILED])
        debug = log.isEnabledFor(logging.DEBUG)
        if succeeded == len(batch) and not debug:
            return
        for settled in batch:
            self._outcome_line(settled, debug)

    def _outcome_line(self, settled: Settled, debug: bool) -> None:
        outcome = settled.outcome
        if outcome.status is ExecutionStatus.SUCCEEDED:
            # The record keeps every success: its line is for debugging only (at thousands of
            # fires a second, formatting it was a tenth of the executor's CPU).
            if debug:
                log.debug(
                    "occurrence succeeded",
                    extra={"event": "occurrence_succeeded", **_context(settled)},
                )
            return
        extra = {"error": outcome.error, **_context(settled)}
        if outcome.status is ExecutionStatus.RETRYING:
            delay = settled.delay.total_seconds() if settled.delay is not None else 0.0
            log.warning(
                "attempt failed, retrying in %.1fs: %s",
                delay,
                outcome.error,
                extra={"event": "occurrence_retrying", **extra},
            )
        else:
            log.error(
                "occurrence failed: %s",
                outcome.error,
                extra={"event": "occurrence_failed", **extra},
            )

    # -- settling (any thread) ---------------------------------------------------------------

    def settle_failed(self) -> None:
        """In the ``except`` block of a settling batch that raised."""
        log.exception("settling failed", extra={"event": "settle_failed"})

    def record_failed(self, count: int, still_leased: int, error: Exception) -> None:
        log.warning(
            "could not record %d outcome(s), %d still leased: %s",
            count,
            still_leased,
            error,
            extra={"event": "record_failed"},
        )

    def dead_letter_failed(self, count: int, error: Exception) -> None:
        # Their messages stay: they come back, and their records are final (duplicates).
        log.error("could not dead-letter %d message(s): %s", count, error)

    def retry_delay_failed(self, error: Exception) -> None:
        # The message comes back after its visibility; the record says when to retry.
        log.warning("could not delay a retry's message: %s", error)

    def delete_failed(self, count: int, error: Exception) -> None:
        # They come back after their visibility; their records are final: duplicates.
        log.warning(
            "could not delete %d settled message(s): %s",
            count,
            error,
            extra={"event": "delete_failed"},
        )

    def overlap_failed(self, error: Exception) -> None:
        # The outcomes are recorded; a marker not freed or renewed ends with its hold.
        log.warning(
            "could not free or renew overlap markers: %s", error, extra={"event": "overlap_failed"}
        )

    def failure_report_failed(self) -> None:
        """In the ``except`` block: the outcomes are recorded; only the pause's log line and
        the notifications go."""
        log.exception("could not report failures", extra={"event": "failure_report_failed"})

    def auto_paused(self, schedule: Schedule, occurrence_id: str, error: str | None) -> None:
        SCHEDULES_AUTO_PAUSED.inc()
        log.warning(
            "schedule paused itself after %d failed occurrences in a row",
            schedule.consecutive_failures,
            extra={
                "event": "schedule_auto_paused",
                "tenant": schedule.tenant,
                "schedule_id": schedule.schedule_id,
                "occurrence_id": occurrence_id,
                "consecutive_failures": schedule.consecutive_failures,
                "error": error,
            },
        )


def _context(settled: Settled) -> dict[str, Any]:
    """What an outcome's log line says besides its event."""
    execution, outcome = settled.execution, settled.outcome
    return {
        "tenant": execution.tenant,
        "schedule_id": execution.schedule_id,
        "occurrence_id": execution.occurrence_id,
        "attempt": execution.attempts,
        "http_status": outcome.answer.status,
        "duration_ms": outcome.duration_ms,
        "lateness_ms": run_lateness_ms(execution, outcome),
    }
