"""The settler, on the executor's settle thread: records how attempts ended, then settles their
messages, a batch at a time (``execution_worker.settling`` gathers the batches on the loop).

A batch's outcomes are recorded in one ``settle_attempts`` (one write and the run counts), and
only then are their messages settled: deleted (success), dead-lettered (failure), or left to
come back after the retry's backoff. The settler keeps trying while the attempts' leases hold;
after that another executor may take the occurrence over, and makes the call again with the
same ``Idempotency-Key``, as after a crash during the call.

A retry whose delay is longer than ``MAX_INVISIBLE_SECONDS`` does not stay in flight on the
queue: its message is re-sent, delayed (at most the queue's 15 minutes at a time), carrying the
time of the next attempt (``Occurrence.not_before``), and the old one deleted. An executor that
receives it before that time sends it on again (``defer``); it is never attempted early.

Once a batch is recorded, its failures are reported: a schedule that paused itself
(``pause_after_failures``, in the store's write of the run counts) is logged, counted and recorded
in its change history (by the system, one write for the batch's pauses), and
the ``on_failure`` notifications go to ``shared.notifying``, which sends them without
holding up this thread.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from execution_worker.observer import ExecutorObserver
from shared.backoff import Backoff
from shared.changes import SYSTEM, Change, ChangeAction, FieldChange
from shared.decisions import overlap_guarded
from shared.messages import encode_occurrence
from shared.model import (
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    FailureHook,
    Occurrence,
    PausedBy,
    Schedule,
    ScheduleStatus,
)
from shared.notifying import DEAD_LETTERED, PAUSED, FailureEvent
from shared.ports import (
    Clock,
    MessageQueue,
    OutgoingMessage,
    OverlapClaim,
    OverlapSeen,
    ReceivedMessage,
    Store,
)
from shared.timeutil import utc_ms

# A retry waits on the queue as an invisible message up to this long; longer, it is re-sent.
MAX_INVISIBLE_SECONDS = 900.0
# The longest delay SQS gives a message it is sent.
MAX_SEND_DELAY_SECONDS = 900.0
# A deferred message arrives this long before its time, and is held until then.
DEFER_EARLY_SECONDS = 1.0


@dataclass(frozen=True)
class Settled:
    """An attempt that ended: its record, how it ended, its message, and for a retry the delay."""

    execution: Execution
    outcome: AttemptOutcome
    occurrence: Occurrence
    message: ReceivedMessage
    delay: timedelta | None = None
    # The schedule as it was when the call was made: what to do when the occurrence fails.
    schedule: Schedule | None = None
    # How long the executor spent on the attempt from its begin (for the observer).
    processing_seconds: float | None = None


def defer(
    queue: MessageQueue, occurrence: Occurrence, receipt: str, not_before: datetime, now: datetime
) -> None:
    """Send the occurrence back to the queue to arrive shortly before ``not_before``, then
    delete the delivery in hand. A crash in between leaves both: the record's lease and final
    state keep the call from being made twice."""
    wait = (not_before - now).total_seconds() - DEFER_EARLY_SECONDS
    body = encode_occurrence(dataclasses.replace(occurrence, not_before=not_before))
    queue.send([OutgoingMessage(body, delay_seconds=max(0.0, min(wait, MAX_SEND_DELAY_SECONDS)))])
    queue.delete([receipt])


class Settler:
    def __init__(
        self,
        store: Store,
        occurrences: MessageQueue,
        dead_letters: MessageQueue,
        owner: str,
        clock: Clock,
        notify: Callable[[Sequence[FailureEvent]], None] | None = None,
        observer: ExecutorObserver | None = None,
    ) -> None:
        """``notify`` takes the failure notifications of each batch (``Notifier.notify``)."""
        self.store = store
        self.occurrences = occurrences
        self.dead_letters = dead_letters
        self.owner = owner
        self.clock = clock
        self.notify = notify
        self.observer = observer or ExecutorObserver(owner)
        # Set when the executor stops waiting for the outcomes being recorded (its shutdown
        # timeout ran out): a retry then ends at once, and their messages come back.
        self.abandoned = threading.Event()
        # The pauses between tries of a record the store failed (``shared.backoff``).
        self.backoff = Backoff("executor: settle")

    def settle_now(self, outcomes: list[Settled], to_delete: list[str]) -> None:
        """Record the outcomes (trying again while their leases hold), then settle messages."""
        recorded = self._record(outcomes)
        try:
            self._overlaps(recorded)
        except Exception as exc:
            self.observer.overlap_failed(exc)
        finished = [item for item in recorded if item.outcome.status.is_final]
        for item in recorded:
            if item.outcome.status is ExecutionStatus.RETRYING:
                self._wait_for_retry(item)
        failed = [item for item in finished if item.outcome.status is ExecutionStatus.FAILED]
        if failed:
            try:
                self.dead_letters.send([OutgoingMessage(item.message.body) for item in failed])
            except Exception as exc:
                self.observer.dead_letter_failed(len(failed), exc)
                finished = [item for item in finished if item not in failed]
        try:
            self._after_failures(recorded)
        except Exception:
            self.observer.failure_report_failed()
        to_delete = [*to_delete, *(item.message.receipt_handle for item in finished)]
        if not to_delete:
            return
        try:
            self.occurrences.delete(to_delete)
        except Exception as exc:
            self.observer.delete_failed(len(to_delete), exc)

    def _record(self, outcomes: list[Settled]) -> list[Settled]:
        """The outcomes recorded; those whose lease ran out before the store answered are not
        (their messages come back, and the calls are made again)."""
        remaining = outcomes
        while remaining:
            started = time.monotonic()
            try:
                self.store.settle_attempts(
                    [(item.execution, item.outcome) for item in remaining], self.owner
                )
            except Exception as exc:
                now = self.clock.now()
                alive = [item for item in remaining if _lease_holds(item.execution, now)]
                self.observer.record_failed(len(remaining), len(alive), exc)
                remaining = alive
                if self.abandoned.wait(self.backoff.failed(exc, time.monotonic() - started)):
                    return []
                continue
            self.backoff.succeeded()
            return remaining
        return []

    def _overlaps(self, recorded: list[Settled]) -> None:
        """The overlap markers of the recorded outcomes of schedules with an overlap policy:
        a final one frees its marker; a retry keeps it until its next attempt's lease would
        end (``take_overlaps`` renews it). Nothing for ``allow``."""
        releases: list[tuple[str, str, str]] = []
        renewals: list[OverlapClaim] = []
        for item in recorded:
            if not overlap_guarded(item.schedule):
                continue
            execution, outcome = item.execution, item.outcome
            if outcome.status.is_final:
                releases.append((execution.tenant, execution.schedule_id, execution.occurrence_id))
                continue
            lease = _lease_length(execution)
            if outcome.next_attempt_at is not None and lease is not None:
                renewals.append(
                    OverlapClaim(
                        execution.tenant,
                        execution.schedule_id,
                        execution.occurrence_id,
                        outcome.next_attempt_at + lease,
                        seen=OverlapSeen.MINE,
                    )
                )
        if releases:
            self.store.release_overlaps(releases)
        if renewals:
            self.store.take_overlaps(renewals, self.clock.now())

    def _after_failures(self, recorded: list[Settled]) -> None:
        """Log and count the schedules that paused themselves in this batch, and hand the
        failure notifications (dead letters, pauses) to ``notify``. Only a batch with a failure
        of a schedule that asks for either reads its schedules (one read): to learn which
        paused, and their hooks as they are now."""
        watched = [
            item
            for item in recorded
            if item.outcome.status is ExecutionStatus.FAILED
            and item.schedule is not None
            and item.schedule.definition is not None
            and (
                item.schedule.definition.pause_after_failures is not None
                or item.schedule.definition.on_failure is not None
            )
        ]
        if not watched:
            return
        keys = list(dict.fromkeys(_key(item) for item in watched))
        pausing = any(
            item.schedule and item.schedule.live_definition.pause_after_failures for item in watched
        )
        schedules = self.store.get_schedules(keys) if pausing else {}
        # The last final outcome of each: the one whose time a pause it made records.
        last = {_key(item): item for item in recorded if item.outcome.status.is_final}
        events: list[FailureEvent] = []
        for item in watched:
            hook = _hook(schedules.get(_key(item)) or item.schedule)
            if hook is not None:
                events.append(_event(DEAD_LETTERED, hook, item))
        paused: list[Schedule] = []
        for key in keys:
            schedule, item = schedules.get(key), last[key]
            if not _paused_by(schedule, item):
                continue
            assert schedule is not None
            paused.append(schedule)
            self.observer.auto_paused(schedule, item.execution.occurrence_id, item.outcome.error)
            hook = _hook(schedule)
            if hook is not None:
                events.append(_event(PAUSED, hook, item, schedule.consecutive_failures))
        if events and self.notify is not None:
            self.notify(events)
        if paused:
            self.store.record_changes([automatic_pause(schedule) for schedule in paused])

    def _wait_for_retry(self, item: Settled) -> None:
        delay = item.delay or timedelta(0)
        receipt = item.message.receipt_handle
        try:
            if delay.total_seconds() <= MAX_INVISIBLE_SECONDS:
                self.occurrences.change_visibility(receipt, delay.total_seconds())
            else:
                now = self.clock.now()
                defer(self.occurrences, item.occurrence, receipt, now + delay, now)
        except Exception as exc:
            self.observer.retry_delay_failed(exc)


def automatic_pause(schedule: Schedule) -> Change:
    """The change history's record of a pause ``pause_after_failures`` made, by the system, at
    the state revision it made (``shared.model.revision_at`` of its time): written again (a
    batch settled twice), it is kept once."""
    return Change(
        schedule.tenant,
        schedule.schedule_id,
        schedule.state_revision,
        schedule.state_revision,
        schedule.paused_at or schedule.updated_at,
        ChangeAction.AUTOMATIC_PAUSE,
        SYSTEM,
        (FieldChange("state", ScheduleStatus.ACTIVE.value, ScheduleStatus.PAUSED.value),),
    )


def _key(item: Settled) -> tuple[str, str]:
    return item.execution.tenant, item.execution.schedule_id


def _hook(schedule: Schedule | None) -> FailureHook | None:
    return schedule.definition.on_failure if schedule and schedule.definition else None


def _paused_by(schedule: Schedule | None, item: Settled) -> bool:
    """Whether ``item``'s failure paused the schedule: the pause it made records its time."""
    return (
        schedule is not None
        and item.outcome.status is ExecutionStatus.FAILED
        and schedule.status is ScheduleStatus.PAUSED
        and schedule.paused_by is PausedBy.FAILURES
        and schedule.paused_at == utc_ms(item.outcome.finished_at)
    )


def _event(
    kind: str, hook: FailureHook, item: Settled, consecutive_failures: int | None = None
) -> FailureEvent:
    execution, outcome = item.execution, item.outcome
    return FailureEvent(
        type=kind,
        hook=hook,
        tenant=execution.tenant,
        schedule_id=execution.schedule_id,
        occurrence_id=execution.occurrence_id,
        error=outcome.error,
        http_status=outcome.answer.status,
        at=outcome.finished_at,
        consecutive_failures=consecutive_failures,
    )


def _lease_length(execution: Execution) -> timedelta | None:
    """How long the attempt's lease was: the next attempt's will be as long."""
    if execution.lease_until is None or execution.started_at is None:
        return None
    return execution.lease_until - execution.started_at


def _lease_holds(execution: Execution, now: datetime) -> bool:
    return execution.lease_until is not None and execution.lease_until > now
