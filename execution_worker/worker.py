"""The executor: long-polls queue 2, holds each occurrence until its exact moment, fires it.

One event loop does the waiting and the calling; the blocking store and queue work leaves it in
batches, on a thread of its own per kind of work (receiving, checking and beginning, settling),
never one blocking call per fire:
- receiving (``_receive_batch``): up to ``receive_batch_size`` messages per call, each made
  invisible to other executors for as long as it is held and run, while there is room
  (``max_held``: held, waiting, calling, and outcomes not yet recorded);
- the timer (``execution_worker.timer``) wakes the loop ``PREPARE_AHEAD`` (20 ms) before the
  earliest held occurrence is due;
- for the occurrences due within that time, one thread hop (``_check_and_begin``) reads their
  schedules in one ``get_schedules`` (deleted, paused or changed → superseded:
  ``execution_worker.superseding``; too late for grace → skipped), takes a call slot for each
  (``execution_worker.sending``: at most ``executor_calls_per_host`` calls per host), and
  begins their execution records in one ``begin_attempts`` (a lease: a duplicate delivery
  never makes a second run);
- each call waits on the loop for its exact moment and runs there (``HttpSender``, aiohttp), up
  to ``executor_concurrency`` at once;
- the settler (``execution_worker.settler``) records outcomes in batches, and only then deletes,
  dead-letters or delays their messages. A retry is the message coming back after a backoff,
  so retry state survives a crash.

A message is received invisible for long enough to be held, fired and given its execution lease
when the call has the default timeout, so firing needs no visibility change. A crash after a
call and before its record brings back a message whose call is made again with the same
``Idempotency-Key``, as after a crash during the call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

from execution_worker.notifier import NOTIFY_TIMEOUT_SECONDS, Notifier
from execution_worker.sending import HostLimits
from execution_worker.settler import Settled, Settler, defer
from execution_worker.superseding import SupersededLog
from execution_worker.timer import Held, HeldOccurrences
from shared.adapters.http_target import destination
from shared.decisions import Superseded, grace_refusal, superseded
from shared.errors import PoisonMessage, Transient
from shared.lifecycle import Shutdown
from shared.messages import decode_occurrence
from shared.metrics import (
    EXECUTIONS,
    FIRE_LATENESS,
    FIRE_PROCESSING,
    RETRIES,
    SUCCEEDED,
    WEBHOOK_DURATION,
    Heartbeat,
    count_response,
)
from shared.model import (
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    Payload,
    Schedule,
)
from shared.ports import (
    Clock,
    MessageQueue,
    OutgoingMessage,
    ReceivedMessage,
    Store,
    SystemClock,
    WebhookError,
    WebhookResponse,
    WebhookSender,
)
from shared.retry import Verdict, judge_response, next_step
from shared.settings import Settings
from shared.webhooks import WebhookSigner, build_request

log = logging.getLogger(__name__)

T = TypeVar("T")

# A call's timeout unless its schedule sets another: the receive visibility covers it.
DEFAULT_CALL_SECONDS: float = Payload.timeout_seconds
# How late a fire may start and still need no visibility change; also how long after a lease
# ends its message comes back.
FIRE_SLACK_SECONDS = 1.0
FIRE_SLACK = timedelta(seconds=FIRE_SLACK_SECONDS)
# Occurrences due this soon are checked and begun together, then each is called at its
# moment: the thread hop's latency is hidden, and the batches grow with the load.
PREPARE_AHEAD = timedelta(milliseconds=20)
# Check-and-begin batches on their way at once when behind: the next is checked while the loop
# starts the calls of the one before. A second starts only with this many due: on time, what
# falls due while one batch is on its way waits for the next, so batches stay large.
BATCHES_AT_ONCE = 2
SECOND_BATCH_FROM = 16
# Receive calls one thread hop makes at most, while the queue gives full batches.
RECEIVES_PER_HOP = 10
# The longest the loop sleeps without looking at the stop flag.
TICK_SECONDS = 0.2


@dataclass
class ExecutorStats:
    received: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    skipped: int = 0
    superseded: int = 0
    duplicates: int = 0
    poisoned: int = 0


@dataclass
class Call:
    """A due occurrence whose attempt is begun: the call to make, and what settles it."""

    item: Held
    schedule: Schedule
    execution: Execution
    host: str
    started: datetime


@dataclass
class Plan:
    """What one check-and-begin batch leaves for the loop."""

    calls: list[Call] = field(default_factory=list)
    to_delete: list[str] = field(default_factory=list)
    # Parked items whose host slot freed while the batch ran: due again.
    due_again: list[Held] = field(default_factory=list)


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
        self.heartbeat = Heartbeat(30.0)
        self.stats = ExecutorStats()
        self.superseded_log = SupersededLog()
        self.held = HeldOccurrences()
        self.hosts: HostLimits[Held] = HostLimits()
        self.notifier = Notifier(sender, self.signer, self.clock)
        self.settler = Settler(
            store, occurrences, dead_letters, self.owner, self.clock, self.notifier.notify
        )
        # Due, waiting for room among the calls in flight (or handed back by ``hosts``).
        self._due: deque[Held] = deque()
        self._calls = 0
        self._starting = 0
        self._batches = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiter: asyncio.Future[None] | None = None
        # One thread per kind of blocking work: the loop hands each a batch at a time.
        self._threads: dict[str, ThreadPoolExecutor] = {}

    # -- the loop -------------------------------------------------------------------------

    def run(self, shutdown: Shutdown) -> None:
        asyncio.run(self.serve(shutdown))

    async def serve(self, shutdown: Shutdown) -> None:
        log.info("executor started", extra={"event": "executor_started", "owner": self.owner})
        if self.signer is None:
            log.warning(
                "SCHEDULER_WEBHOOK_SECRET is not set: webhooks are sent unsigned",
                extra={"event": "webhooks_unsigned"},
            )
        self.notifier.attach(asyncio.get_running_loop())
        settled = asyncio.Event()
        settler = asyncio.create_task(self.settler.run(settled, partial(self._off_loop, "settle")))
        receiver = asyncio.create_task(self._receive_loop(shutdown))
        finished = False
        try:
            await self._dispatch_loop(shutdown)
        finally:
            await asyncio.wait({receiver}, timeout=self.settings.receive_wait_seconds + 5)
            await self._release_held()
            finished = await self._wait_for_calls(self.settings.shutdown_timeout_seconds)
            settled.set()
            await asyncio.wait({settler}, timeout=self.settings.shutdown_timeout_seconds)
            self.settler.abandoned.set()
            await self.notifier.wait(NOTIFY_TIMEOUT_SECONDS)
            if finished:
                await self.sender.close()
            for thread in self._threads.values():
                thread.shutdown(wait=False)
            log.info(
                "executor stopped" if finished else "executor stopped with calls in flight",
                extra={"event": "executor_stopped", "in_flight": self._calls},
            )

    async def _off_loop(self, kind: str, work: Callable[..., T], *arguments: Any) -> T:
        """``work(*arguments)`` on the thread of ``kind``: blocking store and queue calls."""
        if kind not in self._threads:
            self._threads[kind] = ThreadPoolExecutor(1, thread_name_prefix=kind)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads[kind], work, *arguments)

    @property
    def in_flight(self) -> int:
        """Calls started and not finished (after a stop: those abandoned to their messages)."""
        return self._calls

    @property
    def holding(self) -> int:
        """Occurrences this executor answers for: held, due, calling, or not yet recorded."""
        return (
            len(self.held)
            + len(self._due)
            + self._starting
            + self.hosts.parked()
            + self._calls
            + self.settler.pending
        )

    def _poke(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)

    async def _receive_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            if self.holding >= self.max_held:
                await asyncio.sleep(0.05)
                continue
            room = self.max_held - self.holding
            try:
                received = await self._off_loop(
                    "receive", self._receive_batches, self.settings.receive_wait_seconds, room
                )
            except Transient as exc:
                log.warning("queue unavailable: %s", exc, extra={"event": "transient_error"})
                await asyncio.sleep(1.0)
                continue
            except Exception:
                log.exception("receive failed", extra={"event": "receive_failed"})
                await asyncio.sleep(1.0)
                continue
            self._hold(received)

    async def _dispatch_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            self.heartbeat.beat()
            self._due.extend(self.held.pop_due(self.clock.now() + PREPARE_AHEAD))
            self._start_due()
            wait = TICK_SECONDS
            next_due = self.held.next_due()
            if next_due is not None:
                ahead = next_due - PREPARE_AHEAD - self.clock.now()
                wait = min(wait, ahead.total_seconds())
            if wait > 0:
                await self._sleep(wait)

    async def _sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, waking early at ``_poke`` (something arrived or ended)."""
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _start_due(self) -> None:
        # A few batches at a time: what falls due while they are checked and begun goes in the
        # next, so the batches grow with the load and the store work per fire shrinks.
        room = self.settings.executor_concurrency - self._calls - self._starting
        if self._batches >= BATCHES_AT_ONCE or room <= 0 or not self._due:
            return
        if self._batches and len(self._due) < SECOND_BATCH_FROM:
            return
        batch = [self._due.popleft() for _ in range(min(room, len(self._due)))]
        self._starting += len(batch)
        self._batches += 1
        self._spawn(self._start_batch(batch))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_batch(self, batch: list[Held]) -> None:
        try:
            plan = await self._off_loop("begin", self._check_and_begin, batch)
        except Exception:
            # Their messages stay; they come back after their visibility timeout.
            log.exception("firing failed", extra={"event": "fire_failed"})
            return
        finally:
            self._starting -= len(batch)
            self._batches -= 1
        self.settler.delete(plan.to_delete)
        self._due.extendleft(reversed(plan.due_again))
        for call in plan.calls:
            self._calls += 1
            self._spawn(self._call_and_settle(call))
        self._poke()

    async def _call_and_settle(self, call: Call) -> None:
        started = time.perf_counter()
        try:
            settled = await self._call(call)
            self._settle(settled, call.started)
            FIRE_PROCESSING.observe(time.perf_counter() - started)
        except Exception:
            # The message stays; it comes back after its visibility timeout.
            log.exception(
                "firing failed",
                extra={"event": "fire_failed", "occurrence_id": call.execution.occurrence_id},
            )
        finally:
            self._calls -= 1
            waiter = self.hosts.release(call.host)
            if waiter is not None:
                self._due.appendleft(waiter)
            self._poke()

    async def _wait_for_calls(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the calls in flight to finish; whether they all did.

        Those still running when it expires keep their messages undeleted: they come back.
        """
        deadline = time.monotonic() + timeout
        while (self._calls or self._starting) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return not (self._calls or self._starting)

    async def _release_held(self) -> None:
        """On shutdown, hand the occurrences not yet fired back to the queue at once."""
        items = [*self.held.take_all(), *self._due, *self.hosts.take_all_parked()]
        self._due.clear()
        if items:
            await self._off_loop("begin", self._release, items)

    def _release(self, items: Sequence[Held]) -> None:
        for item in items:
            try:
                self.occurrences.change_visibility(item.message.receipt_handle, 0)
            except Exception:
                log.warning("could not release a held message; it returns after its timeout")

    # -- receiving (off the loop) ----------------------------------------------------------

    def _receive_batches(
        self, wait_seconds: float, room: int
    ) -> list[tuple[Occurrence, ReceivedMessage, datetime]]:
        """``_receive_batch`` again while the queue gives full batches and there is room: one
        thread hop for many batches when the queue is busy."""
        received = self._receive_batch(wait_seconds)
        size = self.settings.receive_batch_size
        for _ in range(RECEIVES_PER_HOP - 1):
            if len(received) % size or len(received) + size > room:
                break
            more = self._receive_batch(0.0)
            if not more:
                break
            received += more
        return received

    def _receive_batch(
        self, wait_seconds: float
    ) -> list[tuple[Occurrence, ReceivedMessage, datetime]]:
        """Receive messages and make each invisible for as long as it is held; dead-letter
        those that cannot be decoded, and send long-delayed retries on (``defer``)."""
        messages = self.occurrences.receive(
            self.settings.receive_batch_size, wait_seconds, self.receive_visibility
        )
        now = self.clock.now()
        received = []
        for message in messages:
            try:
                occurrence = decode_occurrence(message.body)
            except PoisonMessage as exc:
                log.error("poison message on queue 2: %s", exc, extra={"event": "poison_message"})
                self.dead_letters.send([OutgoingMessage(message.body)])
                self.occurrences.delete([message.receipt_handle])
                self.stats.poisoned += 1
                continue
            due = occurrence.scheduled_time
            if occurrence.not_before is not None:
                due = max(due, occurrence.not_before)
                if due - now > timedelta(seconds=self.receive_visibility):
                    defer(self.occurrences, occurrence, message.receipt_handle, due, now)
                    continue
            visible_at = now + timedelta(seconds=self.receive_visibility)
            needed = max(due, now) + self.hold_past_due
            if needed > visible_at:
                self.occurrences.change_visibility(
                    message.receipt_handle, (needed - now).total_seconds()
                )
                visible_at = needed
            received.append((occurrence, message, visible_at))
        self.stats.received += len(received)
        return received

    def _hold(self, received: Sequence[tuple[Occurrence, ReceivedMessage, datetime]]) -> None:
        for occurrence, message, visible_at in received:
            self.held.hold(occurrence, message, visible_at)
        if received:
            self._poke()

    # -- checking and beginning a batch (off the loop) ---------------------------------------

    def _check_and_begin(self, batch: Sequence[Held]) -> Plan:
        """The version check of the batch in one read, then the records of those that go in
        one write per lease length.

        An item that passed its check at most ``PREPARE_AHEAD`` ago and then waited for a call
        slot of its host is not read again: a check may precede its call by that long anyway.
        """
        plan = Plan()
        now = self.clock.now()
        fresh: dict[int, Schedule] = {}
        for item in batch:
            if item.checked is not None and now - item.checked[1] <= PREPARE_AHEAD:
                fresh[id(item)] = item.checked[0]
        schedules = self.store.get_schedules(
            [
                (item.occurrence.tenant, item.occurrence.schedule_id)
                for item in batch
                if id(item) not in fresh
            ]
        )
        skips: list[tuple[Held, str]] = []
        replaced: list[tuple[Held, Superseded]] = []
        going: dict[float, list[tuple[Held, Schedule, str]]] = defaultdict(list)
        for item in batch:
            occurrence = item.occurrence
            schedule = fresh.get(id(item)) or schedules.get(
                (occurrence.tenant, occurrence.schedule_id)
            )
            change = superseded(occurrence, schedule)
            if change is not None:
                replaced.append((item, change))
                continue
            assert schedule is not None
            reason = grace_refusal(occurrence, schedule.live_definition, now, self._is_retry(item))
            if reason is not None:
                skips.append((item, reason))
                continue
            payload = schedule.live_definition.payload
            host = destination(payload.url)
            limit = payload.calls_per_host or self.settings.executor_calls_per_host
            if self.hosts.take(host, limit, item):
                going[payload.timeout_seconds].append((item, schedule, host))
            else:
                item.checked = (schedule, now)
        try:
            if replaced:
                self._supersede(replaced, now, plan)
            if skips:
                self._skip(skips, now, plan)
            for timeout, group in going.items():
                self._begin(group, timeout, now, plan)
        except Exception:
            # The items not begun keep their messages, which come back after their visibility;
            # their call slots are given back.
            log.exception("could not begin attempts", extra={"event": "fire_failed"})
            begun = {id(call.item) for call in plan.calls}
            for group in going.values():
                for item, _, host in group:
                    if id(item) not in begun:
                        self._give_back(host, plan)
        return plan

    def _begin(
        self, group: list[tuple[Held, Schedule, str]], timeout: float, now: datetime, plan: Plan
    ) -> None:
        """Begin the attempts of occurrences whose calls share a timeout (one lease length)."""
        lease = timedelta(seconds=timeout + self.settings.execution_lease_margin_seconds)
        executions = self.store.begin_attempts(
            [item.occurrence for item, _, _ in group], self.owner, now, now + lease
        )
        for (item, schedule, host), execution in zip(group, executions, strict=True):
            if execution is None:
                self._not_mine(item, now, plan)
                self._give_back(host, plan)
                continue
            plan.calls.append(Call(item, schedule, execution, host, now))
            if now + lease > item.visible_at:
                # It comes back only after the lease: then another executor may take over.
                self.occurrences.change_visibility(
                    item.message.receipt_handle, (lease + FIRE_SLACK).total_seconds()
                )

    def _give_back(self, host: str, plan: Plan) -> None:
        """Give a call slot back that will not be used; what waited for it is due again."""
        waiter = self.hosts.release(host)
        if waiter is not None:
            plan.due_again.append(waiter)

    def _is_retry(self, item: Held) -> bool:
        """Whether an attempt was made already: grace applies to the first attempt only (a
        retry is late by its backoff). Only a redelivered message needs to look."""
        if item.occurrence.not_before is not None:
            return True
        if item.message.receive_count <= 1:
            return False
        occurrence = item.occurrence
        record = self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)
        return record is not None and record.attempts > 0

    def _not_mine(self, item: Held, now: datetime, plan: Plan) -> None:
        """The occurrence could not be taken: final already (this delivery is a duplicate, and
        goes), or held by another executor's live lease (this message waits for the lease to
        end, in case that executor died: deleting it could lose the occurrence)."""
        occurrence = item.occurrence
        record = self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)
        if record is not None and not record.status.is_final and record.lease_until is not None:
            wait = record.lease_until - now + FIRE_SLACK
            self.occurrences.change_visibility(
                item.message.receipt_handle, max(wait.total_seconds(), 1.0)
            )
            return
        self.stats.duplicates += 1
        EXECUTIONS.labels("duplicate").inc()
        plan.to_delete.append(item.message.receipt_handle)

    def _supersede(
        self, replaced: Sequence[tuple[Held, Superseded]], now: datetime, plan: Plan
    ) -> None:
        skips = [(item.occurrence, change.reason) for item, change in replaced]
        self.store.record_skips(skips, now, superseded=True)
        for item, change in replaced:
            plan.to_delete.append(item.message.receipt_handle)
            self.stats.superseded += 1
            self.superseded_log.tell(item.occurrence, change)

    def _skip(self, skips: Sequence[tuple[Held, str]], now: datetime, plan: Plan) -> None:
        self.store.record_skips([(item.occurrence, reason) for item, reason in skips], now)
        for item, reason in skips:
            plan.to_delete.append(item.message.receipt_handle)
            self.stats.skipped += 1
            EXECUTIONS.labels("skipped").inc()
            occurrence = item.occurrence
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

    # -- calling (on the loop) -------------------------------------------------------------

    async def _call(self, call: Call) -> Settled:
        """Wait for the occurrence's moment (it was begun up to ``PREPARE_AHEAD`` before), then
        make the call and judge its answer."""
        execution, item = call.execution, call.item
        wait = (item.due - self.clock.now()).total_seconds()
        if wait > 0:
            await asyncio.sleep(wait)
        call.started = self.clock.now()
        FIRE_LATENESS.observe(max(0.0, (call.started - item.due).total_seconds()))
        payload = call.schedule.live_definition.payload
        request = build_request(
            item.occurrence, payload, execution.attempts, self.signer, call.started
        )
        http_status: int | None = None
        response: WebhookResponse | None = None
        try:
            response = await self.sender.send(request)
        except WebhookError as exc:
            finished = self.clock.now()
            duration_ms = (finished - call.started).total_seconds() * 1000.0
            verdict = Verdict(succeeded=False, retryable=exc.retryable, reason=str(exc))
        else:
            finished = self.clock.now()
            http_status, duration_ms = response.status, response.duration_ms
            WEBHOOK_DURATION.observe(duration_ms / 1000.0)
            verdict = judge_response(http_status, response.headers, finished)
        count_response(http_status)
        # The queue dead-letters a message delivered max_receives times: then this is the last.
        deliveries_left = item.message.receive_count < self.settings.max_receives
        step = next_step(
            verdict, call.schedule.live_definition.retry, execution.attempts, deliveries_left
        )
        next_attempt = finished + step.delay if step.delay is not None else None
        error = None if verdict.succeeded else verdict.reason
        outcome = AttemptOutcome(
            step.status,
            finished,
            http_status,
            duration_ms,
            error,
            next_attempt,
            *_answer(response),
        )
        return Settled(execution, outcome, item.occurrence, item.message, step.delay, call.schedule)

    def _settle(self, settled: Settled, started: datetime) -> None:
        """Hand the outcome to the settler; count and log it."""
        self.settler.add(settled)
        outcome = settled.outcome
        if outcome.status is ExecutionStatus.SUCCEEDED:
            # The record keeps every success: its line is for debugging only (at thousands
            # of fires a second, formatting it was a tenth of the executor's CPU).
            self.stats.succeeded += 1
            SUCCEEDED.inc()
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "occurrence succeeded",
                    extra={"event": "occurrence_succeeded", **_context(settled, started)},
                )
            return
        extra = _context(settled, started)
        if outcome.status is ExecutionStatus.RETRYING:
            delay = settled.delay or timedelta(0)
            self.stats.retried += 1
            RETRIES.inc()
            EXECUTIONS.labels("retrying").inc()
            log.warning(
                "attempt failed, retrying in %.1fs: %s",
                delay.total_seconds(),
                outcome.error,
                extra={"event": "occurrence_retrying", "error": outcome.error, **extra},
            )
        else:
            self.stats.failed += 1
            EXECUTIONS.labels("failed").inc()
            log.error(
                "occurrence failed: %s",
                outcome.error,
                extra={"event": "occurrence_failed", "error": outcome.error, **extra},
            )

    # -- one step each, for tests that drive the executor by hand -----------------------------

    def receive_once(self, wait_seconds: float = 0.0) -> int:
        """Receive one batch and hold it; how many were held."""
        received = self._receive_batch(wait_seconds)
        self._hold(received)
        return len(received)

    def take_due(self, timeout: float) -> list[Held]:
        """Wait until the earliest held occurrence is due (or ``timeout``); pop the due ones."""
        next_due = self.held.next_due()
        if next_due is not None:
            wait = (next_due - self.clock.now()).total_seconds()
            if wait > 0:
                time.sleep(min(wait, timeout))
        return self.held.pop_due(self.clock.now())

    def fire(self, item: Held) -> None:
        """Fire one held occurrence that is due and settle it, all before returning."""
        asyncio.run(self._fire_alone(item))

    async def _fire_alone(self, item: Held) -> None:
        plan = self._check_and_begin([item])
        try:
            outcomes = [await self._call(call) for call in plan.calls]
        finally:
            await self.sender.close()
        for call in plan.calls:
            self.hosts.release(call.host)
        for call, settled in zip(plan.calls, outcomes, strict=True):
            self._settle(settled, call.started)
        self.settler.settle_now(self.settler.take_outcomes(), plan.to_delete)


def _context(settled: Settled, started: datetime) -> dict[str, Any]:
    """What an outcome's log line says besides its event."""
    execution, outcome = settled.execution, settled.outcome
    return {
        "tenant": execution.tenant,
        "schedule_id": execution.schedule_id,
        "occurrence_id": execution.occurrence_id,
        "attempt": execution.attempts,
        "http_status": outcome.http_status,
        "duration_ms": round(outcome.duration_ms or 0.0, 3),
        "lateness_ms": round((started - execution.scheduled_time).total_seconds() * 1000.0, 3),
    }


def _answer(response: WebhookResponse | None) -> tuple[str | None, str | None, bool]:
    """What an attempt keeps of the webhook's answer: its status line, the start of its body
    as text, and whether the body was longer."""
    if response is None:
        return None, None, False
    excerpt = response.body_excerpt.decode("utf-8", "replace") if response.body_excerpt else None
    return response.status_line or None, excerpt, response.body_truncated


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
