"""The executor: long-polls queue 2, holds each occurrence until its exact moment, fires it.

Three parts in one process:
- a receiver thread takes messages from queue 2 while there is room in memory (``max_held``),
  and makes each one invisible to other executors for as long as it is held and run;
- the dispatcher (``run``'s own thread) sleeps until the earliest held occurrence is due, waking
  early when an earlier one arrives, and hands due occurrences to a pool of HTTP workers;
- each worker checks the schedule again (deleted, paused or changed → skipped), takes the
  occurrence's execution record (a lease: a duplicate delivery never makes a second run), makes
  the call, records the outcome, and only then deletes the message. A retry is the message
  coming back after a backoff (its visibility), so retry state survives a crash.

Three things keep round trips off the path of each call (found by profiling at 2,000 fires/s):
- a message is received invisible for long enough to be held, fired and given its execution
  lease when the call has the default timeout, so firing needs no visibility change;
- a successful outcome is recorded by a settler thread, with the others that finished within a
  few milliseconds, in one ``settle_attempts`` (one transaction on SQLite);
- settled messages are deleted in batches by the same thread, always after their outcome is
  recorded. A crash in between brings back a message whose record is final (the next executor
  deletes it as a duplicate) or, before the record, one whose call is made again with the same
  ``Idempotency-Key``, as after a crash during the call.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shared.errors import PoisonMessage, Transient
from shared.lifecycle import Shutdown
from shared.messages import decode_occurrence
from shared.metrics import (
    EXECUTIONS,
    FIRE_LATENESS,
    HTTP_RESPONSES,
    PROCESSING,
    RETRIES,
    WEBHOOK_DURATION,
    Heartbeat,
    status_class,
)
from shared.model import (
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    Payload,
    Schedule,
    ScheduleStatus,
)
from shared.ports import (
    Clock,
    MessageQueue,
    OutgoingMessage,
    ReceivedMessage,
    Store,
    SystemClock,
    WebhookError,
    WebhookSender,
)
from shared.retry import Verdict, backoff_delay, judge_response
from shared.settings import Settings
from shared.webhooks import WebhookSigner, build_request

log = logging.getLogger(__name__)

# A call's timeout unless its schedule sets another: the receive visibility covers it.
DEFAULT_CALL_SECONDS: float = Payload.timeout_seconds
# How late a fire may start and still need no visibility change; also how long after a lease
# ends its message comes back.
FIRE_SLACK_SECONDS = 1.0
FIRE_SLACK = timedelta(seconds=FIRE_SLACK_SECONDS)
# Outcomes are recorded, and settled messages deleted, together: up to this many, or after
# this long.
SETTLE_BATCH = 50
SETTLE_LINGER_SECONDS = 0.005
SETTLE_TRIES = 3


@dataclass(order=True)
class Held:
    due: datetime
    rank: tuple[int, int]
    occurrence: Occurrence = field(compare=False)
    message: ReceivedMessage = field(compare=False)
    visible_at: datetime = field(compare=False)


@dataclass
class ExecutorStats:
    received: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    skipped: int = 0
    duplicates: int = 0
    poisoned: int = 0


class Executor:
    def __init__(
        self,
        store: Store,
        occurrences: MessageQueue,
        dead_letters: MessageQueue,
        sender: WebhookSender,
        settings: Settings,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.occurrences = occurrences
        self.dead_letters = dead_letters
        self.sender = sender
        self.settings = settings
        self.clock = clock or SystemClock()
        self.owner = f"executor:{settings.worker_id}"
        self.signer = WebhookSigner(settings.webhook_secret) if settings.webhook_secret else None
        self.max_held = max(1000, settings.executor_concurrency * 4)
        # What a held occurrence needs past its time: the execution lease of a call with the
        # default timeout, and a little slack for a late start.
        self.hold_past_due = timedelta(
            seconds=settings.execution_lease_margin_seconds
            + DEFAULT_CALL_SECONDS
            + FIRE_SLACK_SECONDS
        )
        # Long enough for a message that arrives when expected (``dispatch_lead_seconds`` before
        # its time, rounded down to whole seconds) to be held and fired, and its call leased,
        # without another visibility change.
        self.receive_visibility = (
            settings.dispatch_lead_seconds + 1.0 + self.hold_past_due.total_seconds()
        )
        self._in_flight = 0
        self.heartbeat = Heartbeat(30.0)
        self.stats = ExecutorStats()
        self._held: list[Held] = []
        self._sequence = itertools.count()
        self._changed = threading.Condition()
        # Calls in flight, apart from ``_changed``: only a stop waits for them, and the dispatcher
        # (waiting on ``_changed`` for the next due occurrence) must not wake for every call.
        self._calls = threading.Condition()
        self._slots = threading.Semaphore(settings.executor_concurrency)
        self._pool = ThreadPoolExecutor(
            max_workers=settings.executor_concurrency, thread_name_prefix="fire"
        )
        # Outcomes to record and receipts to delete, waiting for the settler thread (only while
        # ``run`` runs; otherwise each is settled at once).
        self._to_record: list[tuple[Execution, AttemptOutcome, str]] = []
        self._to_delete: list[str] = []
        self._batching = False
        self._settle_ready = threading.Condition()

    # -- the loops ------------------------------------------------------------------------

    def run(self, shutdown: Shutdown) -> None:
        log.info("executor started", extra={"event": "executor_started", "owner": self.owner})
        if self.signer is None:
            log.warning(
                "SCHEDULER_WEBHOOK_SECRET is not set: webhooks are sent unsigned",
                extra={"event": "webhooks_unsigned"},
            )
        receiver = threading.Thread(
            target=self._receive_loop, args=(shutdown,), name="receive", daemon=True
        )
        with self._settle_ready:
            self._batching = True
        settler = threading.Thread(target=self._settle_loop, name="settle", daemon=True)
        receiver.start()
        settler.start()
        try:
            self._dispatch_loop(shutdown)
        finally:
            with self._changed:
                self._changed.notify_all()
            receiver.join(timeout=self.settings.receive_wait_seconds + 5)
            self._release_held()
            finished = self._wait_in_flight(self.settings.shutdown_timeout_seconds)
            self._stop_batching()
            settler.join(timeout=self.settings.shutdown_timeout_seconds)
            self._pool.shutdown(wait=finished, cancel_futures=True)
            if finished:
                self.sender.close()
            log.info(
                "executor stopped" if finished else "executor stopped with calls in flight",
                extra={"event": "executor_stopped", "in_flight": self._in_flight},
            )

    def _receive_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            with self._changed:
                full = len(self._held) >= self.max_held
            if full:
                shutdown.wait(0.05)
                continue
            try:
                self.receive_once(self.settings.receive_wait_seconds)
            except Transient as exc:
                log.warning("queue unavailable: %s", exc, extra={"event": "transient_error"})
                shutdown.wait(1.0)
            except Exception:
                log.exception("receive failed", extra={"event": "receive_failed"})
                shutdown.wait(1.0)

    def _dispatch_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            self.heartbeat.beat()
            due = self.take_due(timeout=0.5)
            for index, item in enumerate(due):
                # Every worker busy: wait for one, but not past a stop. What is not fired by
                # then goes back to the held ones, which a stop hands back to the queue.
                while not self._slots.acquire(timeout=0.5):
                    self.heartbeat.beat()
                    if shutdown.is_set():
                        with self._changed:
                            for unfired in due[index:]:
                                heapq.heappush(self._held, unfired)
                        return
                with self._calls:
                    self._in_flight += 1
                self._pool.submit(self._fire_and_release, item)

    def _delete(self, receipt: str) -> None:
        """Delete a settled message: soon, in a batch, while ``run`` runs; at once otherwise."""
        with self._settle_ready:
            if self._batching:
                self._to_delete.append(receipt)
                self._notify_if_full()
                return
        self.occurrences.delete([receipt])

    def _record_success(self, execution: Execution, outcome: AttemptOutcome, receipt: str) -> None:
        """Record a successful attempt and count it, then delete its message: batched while
        ``run`` runs, at once otherwise."""
        with self._settle_ready:
            if self._batching:
                self._to_record.append((execution, outcome, receipt))
                self._notify_if_full()
                return
        self._settle_now([(execution, outcome, receipt)], [])

    def _notify_if_full(self) -> None:
        # The first one starts the settler's short linger; a full batch ends it.
        pending = len(self._to_record) + len(self._to_delete)
        if pending == 1 or pending >= SETTLE_BATCH:
            self._settle_ready.notify()

    def _settle_loop(self) -> None:
        while True:
            with self._settle_ready:
                if self._batching and not (self._to_record or self._to_delete):
                    self._settle_ready.wait(0.5)  # idle until the first arrives
                pending = len(self._to_record) + len(self._to_delete)
                if self._batching and 0 < pending < SETTLE_BATCH:
                    self._settle_ready.wait(SETTLE_LINGER_SECONDS)  # a moment for more
                to_record, self._to_record = self._to_record, []
                to_delete, self._to_delete = self._to_delete, []
                stopping = not self._batching
            self._settle_now(to_record, to_delete)
            if stopping:
                return

    def _settle_now(
        self, to_record: Sequence[tuple[Execution, AttemptOutcome, str]], to_delete: list[str]
    ) -> None:
        if to_record:
            batch = [(execution, outcome) for execution, outcome, _ in to_record]
            for attempt in range(1, SETTLE_TRIES + 1):
                try:
                    self.store.settle_attempts(batch, self.owner)
                except Exception as exc:
                    if attempt < SETTLE_TRIES:
                        time.sleep(0.1 * attempt)
                        continue
                    # Their messages stay: they come back after their visibility, and the
                    # calls are made again (same Idempotency-Key) once the leases run out.
                    log.error(
                        "could not record %d outcome(s): %s",
                        len(batch),
                        exc,
                        extra={"event": "record_failed"},
                    )
                    break
                else:
                    to_delete = to_delete + [receipt for _, _, receipt in to_record]
                    break
        if not to_delete:
            return
        try:
            self.occurrences.delete(to_delete)
        except Exception as exc:
            # They come back after their visibility; their records are final: duplicates.
            log.warning(
                "could not delete %d settled message(s): %s",
                len(to_delete),
                exc,
                extra={"event": "delete_failed"},
            )

    def _stop_batching(self) -> None:
        """From now on settle at once; the settler thread settles what is left and ends."""
        with self._settle_ready:
            self._batching = False
            self._settle_ready.notify()

    def _wait_in_flight(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the calls in flight to finish; whether they all did.

        Those still running when it expires keep their messages undeleted: they come back.
        """
        with self._calls:
            return self._calls.wait_for(lambda: self._in_flight == 0, timeout)

    @property
    def in_flight(self) -> int:
        """Calls started and not finished (after a stop: those abandoned to their messages)."""
        with self._calls:
            return self._in_flight

    def take_due(self, timeout: float) -> list[Held]:
        """Wait until the earliest held occurrence is due (or ``timeout``); pop the due ones."""
        with self._changed:
            now = self.clock.now()
            if not self._held or self._held[0].due > now:
                wait = timeout
                if self._held:
                    wait = min(wait, (self._held[0].due - now).total_seconds())
                self._changed.wait(max(0.0, wait))
                now = self.clock.now()
            due: list[Held] = []
            while self._held and self._held[0].due <= now:
                due.append(heapq.heappop(self._held))
            return due

    def _fire_and_release(self, item: Held) -> None:
        started = time.perf_counter()
        try:
            self.fire(item)
            PROCESSING.labels("executor", "fire").observe(time.perf_counter() - started)
        except Exception:
            # The message stays; it comes back after its visibility timeout.
            log.exception(
                "firing failed",
                extra={"event": "fire_failed", "occurrence_id": item.occurrence.occurrence_id},
            )
        finally:
            self._slots.release()
            with self._calls:
                self._in_flight -= 1
                self._calls.notify_all()

    def _release_held(self) -> None:
        """On shutdown, hand the occurrences not yet fired back to the queue at once."""
        with self._changed:
            held, self._held = self._held, []
        for item in held:
            try:
                self.occurrences.change_visibility(item.message.receipt_handle, 0)
            except Exception:
                log.warning("could not release a held message; it returns after its timeout")

    # -- one step each, also used directly by tests ------------------------------------

    def receive_once(self, wait_seconds: float = 0.0) -> int:
        messages = self.occurrences.receive(
            self.settings.receive_batch_size, wait_seconds, self.receive_visibility
        )
        now = self.clock.now()
        items: list[Held] = []
        for message in messages:
            try:
                occurrence = decode_occurrence(message.body)
            except PoisonMessage as exc:
                log.error("poison message on queue 2: %s", exc, extra={"event": "poison_message"})
                self.dead_letters.send([OutgoingMessage(message.body)])
                self.occurrences.delete([message.receipt_handle])
                self.stats.poisoned += 1
                continue
            visible_at = now + timedelta(seconds=self.receive_visibility)
            needed = max(occurrence.scheduled_time, now) + self.hold_past_due
            if needed > visible_at:
                hold = (needed - now).total_seconds()
                self.occurrences.change_visibility(message.receipt_handle, hold)
                visible_at = needed
            items.append(
                Held(
                    due=occurrence.scheduled_time,
                    rank=(-occurrence.priority, next(self._sequence)),
                    occurrence=occurrence,
                    message=message,
                    visible_at=visible_at,
                )
            )
        self.stats.received += len(items)
        if items:
            with self._changed:
                for item in items:
                    heapq.heappush(self._held, item)
                self._changed.notify_all()
        return len(messages)

    def fire(self, item: Held) -> None:
        """Fire one held occurrence that is due, and settle its message."""
        occurrence = item.occurrence
        receipt = item.message.receipt_handle
        schedule = self.store.get_schedule(occurrence.tenant, occurrence.schedule_id)
        reason = self._skip_reason(occurrence, schedule)
        if reason is not None:
            self._skip(occurrence, receipt, reason)
            return
        assert schedule is not None
        definition = schedule.live_definition
        payload = definition.payload
        now = self.clock.now()
        grace = definition.misfire.grace_seconds
        late = (now - occurrence.scheduled_time).total_seconds()
        if (
            grace is not None
            and late > grace
            and not occurrence.manual
            and not self._is_retry(occurrence, item.message)
        ):
            self._skip(occurrence, receipt, f"late by {late:.3f}s, beyond grace of {grace:g}s")
            return
        lease = timedelta(
            seconds=payload.timeout_seconds + self.settings.execution_lease_margin_seconds
        )
        if now + lease > item.visible_at:
            # The message comes back only after the lease: then another executor may take over.
            self.occurrences.change_visibility(receipt, (lease + FIRE_SLACK).total_seconds())
        execution = self.store.begin_attempt(occurrence, self.owner, now, now + lease)
        if execution is None:
            self._not_mine(occurrence, receipt, now)
            return
        request = build_request(occurrence, payload, execution.attempts, self.signer, now)
        FIRE_LATENESS.observe(max(0.0, late))
        http_status: int | None = None
        try:
            response = self.sender.send(request)
        except WebhookError as exc:
            finished = self.clock.now()
            duration_ms = (finished - now).total_seconds() * 1000.0
            verdict = Verdict(succeeded=False, retryable=exc.retryable, reason=str(exc))
        else:
            finished = self.clock.now()
            http_status, duration_ms = response.status, response.duration_ms
            WEBHOOK_DURATION.observe(duration_ms / 1000.0)
            verdict = judge_response(http_status, response.headers, finished)
        HTTP_RESPONSES.labels(status_class(http_status)).inc()
        self._settle(execution, schedule, item.message, finished, verdict, http_status, duration_ms)

    def _is_retry(self, occurrence: Occurrence, message: ReceivedMessage) -> bool:
        """Whether an attempt was made already: grace applies to the first attempt only (a
        retry is late by its backoff). Only a redelivered message needs to look."""
        if message.receive_count <= 1:
            return False
        record = self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)
        return record is not None and record.attempts > 0

    def _not_mine(self, occurrence: Occurrence, receipt: str, now: datetime) -> None:
        """The occurrence could not be taken: final already (this delivery is a duplicate, and
        goes), or held by another executor's live lease (this message waits for the lease to
        end, in case that executor died: deleting it could lose the occurrence)."""
        record = self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)
        if record is not None and not record.status.is_final and record.lease_until is not None:
            wait = record.lease_until - now + FIRE_SLACK
            self.occurrences.change_visibility(receipt, max(wait.total_seconds(), 1.0))
            return
        self.stats.duplicates += 1
        EXECUTIONS.labels("duplicate").inc()
        self._delete(receipt)

    def _skip_reason(self, occurrence: Occurrence, schedule: Schedule | None) -> str | None:
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            return "schedule deleted"
        if occurrence.manual:
            return None
        if schedule.revision != occurrence.revision:
            return f"schedule changed (revision {occurrence.revision} → {schedule.revision})"
        if schedule.status is ScheduleStatus.PAUSED:
            return "schedule paused"
        return None

    def _skip(self, occurrence: Occurrence, receipt: str, reason: str) -> None:
        self.store.record_skips([(occurrence, reason)], self.clock.now())
        self._delete(receipt)
        self.stats.skipped += 1
        EXECUTIONS.labels("skipped").inc()
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

    def _settle(
        self,
        execution: Execution,
        schedule: Schedule,
        message: ReceivedMessage,
        finished: datetime,
        verdict: Verdict,
        http_status: int | None,
        duration_ms: float,
    ) -> None:
        """Record how the attempt ended: success, a retry after backoff, or a dead letter."""
        receipt = message.receipt_handle
        policy = schedule.live_definition.retry
        error = verdict.reason
        extra = {
            "tenant": execution.tenant,
            "schedule_id": execution.schedule_id,
            "occurrence_id": execution.occurrence_id,
            "attempt": execution.attempts,
            "http_status": http_status,
            "duration_ms": round(duration_ms, 3),
            "lateness_ms": round(
                (execution.started_at - execution.scheduled_time).total_seconds() * 1000.0, 3
            )
            if execution.started_at
            else None,
        }
        if verdict.succeeded:
            outcome = AttemptOutcome(
                ExecutionStatus.SUCCEEDED, finished, http_status, duration_ms, None
            )
            self._record_success(execution, outcome, receipt)
            self.stats.succeeded += 1
            EXECUTIONS.labels("succeeded").inc()
            log.info("occurrence succeeded", extra={"event": "occurrence_succeeded", **extra})
            return
        # The queue dead-letters a message delivered max_receives times: then this is the last.
        deliveries_left = message.receive_count < self.settings.max_receives
        if verdict.retryable and execution.attempts < policy.max_attempts and deliveries_left:
            delay = backoff_delay(policy, execution.attempts, verdict.retry_after_seconds)
            outcome = AttemptOutcome(
                ExecutionStatus.RETRYING,
                finished,
                http_status,
                duration_ms,
                error,
                finished + delay,
            )
            self.store.finish_attempt(execution, self.owner, outcome)
            self.occurrences.change_visibility(receipt, delay.total_seconds())
            self.stats.retried += 1
            RETRIES.inc()
            EXECUTIONS.labels("retrying").inc()
            log.warning(
                "attempt failed, retrying in %.1fs: %s",
                delay.total_seconds(),
                error,
                extra={"event": "occurrence_retrying", "error": error, **extra},
            )
            return
        outcome = AttemptOutcome(ExecutionStatus.FAILED, finished, http_status, duration_ms, error)
        self.store.settle_attempts([(execution, outcome)], self.owner)
        self.dead_letters.send([OutgoingMessage(message.body)])
        self._delete(receipt)
        self.stats.failed += 1
        EXECUTIONS.labels("failed").inc()
        log.error(
            "occurrence failed: %s",
            error,
            extra={"event": "occurrence_failed", "error": error, **extra},
        )
