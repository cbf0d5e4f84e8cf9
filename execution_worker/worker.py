"""The executor: long-polls queue 2, holds each occurrence until its exact moment, fires it.

``Executor`` is the event loop: it holds the occurrences by time (``execution_worker.timer``),
wakes ``CHECK_LEAD`` (10 ms) before the earliest is due, takes every occurrence due within
``PREPARE_AHEAD`` (20 ms) as one batch (when more is due than there is room to call, the most
urgent first: ``execution_worker.timer.DueOccurrences``), and hands the work to one role per
concurrency context, never one blocking call per fire:
- receiving (``execution_worker.receiving``, on the receive thread): batches from queue 2,
  while there is room (``max_held``: held, waiting, calling, and outcomes not yet recorded);
- checking and beginning (``execution_worker.beginning``, on the begin thread): the version
  check of the occurrences due within ``PREPARE_AHEAD`` in one read, a call slot each
  (``execution_worker.sending``), their execution records in one write;
- delivery (``execution_worker.delivery``, on the loop): each call at its exact moment, up to
  ``executor_concurrency`` at once, through the ``DeliveryTarget`` port;
- settling (``execution_worker.settling`` on the loop, ``execution_worker.settler`` on the
  settle thread): outcomes recorded in batches, and only then their messages deleted,
  dead-lettered or delayed; a retry is the message coming back after a backoff, so retry
  state survives a crash;
- notifying (``shared.notifying``, on the loop): ``on_failure`` webhooks.
Each reports what happens to one observer (``execution_worker.observer``): counts, metrics,
logs.

A message is received invisible for long enough to be held, fired and given its execution lease
when the call has the default timeout, so firing needs no visibility change. A crash after a
call and before its record brings back a message whose call is made again with the same
``Idempotency-Key``, as after a crash during the call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from execution_worker.beginning import OVERLAP_RECHECK, Call, CheckAndBegin, Plan
from execution_worker.delivery import Delivery
from execution_worker.observer import ExecutorObserver
from execution_worker.receiving import Received, Receiving
from execution_worker.sending import HostLimits
from execution_worker.settler import Settler
from execution_worker.settling import Settling
from execution_worker.threads import WorkThread
from execution_worker.timer import (
    CHECK_LEAD,
    PREPARE_AHEAD,
    DueOccurrences,
    Held,
    HeldOccurrences,
)
from shared.adapters.targets import TargetContext, Targets
from shared.backends import secret_box
from shared.backoff import Backoff
from shared.counts import Counts
from shared.errors import Transient
from shared.lifecycle import Shutdown
from shared.metrics import Heartbeat
from shared.notifying import NOTIFY_TIMEOUT_SECONDS, Notifier
from shared.ports import Clock, MessageQueue, Store, SystemClock, WebhookSender
from shared.ports.spans import Spans
from shared.secrets import SecretBox
from shared.settings import Settings
from shared.tenant_signers import TenantSigners

# Check-and-begin batches on their way at once when behind: the next is checked while the loop
# starts the calls of the one before. A second starts only with this many due: on time, what
# falls due while one batch is on its way waits for the next, so batches stay large.
BATCHES_AT_ONCE = 2
SECOND_BATCH_FROM = 16
# The longest the loop sleeps without looking at the stop flag.
TICK_SECONDS = 0.2
# After a receive that failed at once, the pause before the next (one that waited, e.g. for a
# SQLite lock, tries again at once).
RECEIVE_RETRY_SECONDS = 1.0


class Executor:
    def __init__(
        self,
        store: Store,
        occurrences: MessageQueue,
        dead_letters: MessageQueue,
        sender: WebhookSender,
        settings: Settings,
        clock: Clock | None = None,
        box: SecretBox | None = None,
        spans: Spans | None = None,
    ) -> None:
        """``box`` opens the tenants' signing secrets and the definitions the occurrences carry
        (by default the one the settings name, as the store's); ``spans`` records each attempt
        (``shared.ports.spans``)."""
        self.settings = settings
        self.clock = clock or SystemClock()
        self.owner = f"executor:{settings.worker_id}"
        box = box or secret_box(settings)
        self.signers = TenantSigners(
            store,
            box,
            settings.webhook_secret,
            self.clock,
            settings.signing_cache_seconds,
        )
        self.max_held = max(1000, settings.executor_concurrency * 4)
        self.heartbeat = Heartbeat(30.0)
        self.observer = ExecutorObserver(self.owner)
        self.held = HeldOccurrences()
        self.hosts: HostLimits[Held] = HostLimits()
        self.target = Targets.of(TargetContext(sender, self.signers.signer, self.clock, settings))
        self.receiving = Receiving(occurrences, dead_letters, settings, self.clock)
        self.checking = CheckAndBegin(
            store,
            occurrences,
            self.target,
            self.hosts,
            settings,
            owner=self.owner,
            clock=self.clock,
            observer=self.observer,
            box=box,
        )
        self.delivery = Delivery(self.target, self.clock, settings.max_receives, spans)
        self.notifier = Notifier(sender, self.signers.signer, self.clock, observer=self.observer)
        self.settler = Settler(
            store,
            occurrences,
            dead_letters,
            self.owner,
            self.clock,
            notify=self.notifier.notify,
            observer=self.observer,
        )
        self.settling = Settling(self.settler, self.observer)
        self._threads = {name: WorkThread(name) for name in ("receive", "begin", "settle")}
        # Due, waiting for room among the calls in flight (or handed back by ``hosts``).
        self._due = DueOccurrences()
        self._calls = 0
        self._starting = 0
        self._batches = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiter: asyncio.Future[None] | None = None
        # While the store does not answer, the due occurrences wait (``_wait_for_store``).
        self.backoff = Backoff("executor: check and begin")
        self._store_again_at = 0.0

    @property
    def stats(self) -> Counts:
        return self.observer.stats

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
            + self.settling.pending
        )

    def run(self, shutdown: Shutdown) -> None:
        asyncio.run(self.serve(shutdown))

    async def serve(self, shutdown: Shutdown) -> None:
        self.observer.started(signed=bool(self.settings.webhook_secret))
        self.notifier.attach(asyncio.get_running_loop())
        settled = asyncio.Event()
        settling = asyncio.create_task(self.settling.run(settled, self._threads["settle"].run))
        receiving = asyncio.create_task(self._receive_loop(shutdown))
        finished = False
        try:
            await self._dispatch_loop(shutdown)
        finally:
            await asyncio.wait({receiving}, timeout=self.settings.receive_wait_seconds + 5)
            await self._release_held()
            finished = await self._wait_for_calls(self.settings.shutdown_timeout_seconds)
            settled.set()
            await asyncio.wait({settling}, timeout=self.settings.shutdown_timeout_seconds)
            self.settler.abandoned.set()
            await self.notifier.wait(NOTIFY_TIMEOUT_SECONDS)
            if finished:
                await self.target.close()
            for thread in self._threads.values():
                thread.shutdown()
            self.observer.stopped(finished, self._calls)

    def hold(self, received: Received) -> None:
        """Hold what a receive gave (and report it)."""
        self.observer.received(len(received.to_hold), received.poisoned)
        for occurrence, message, visible_at in received.to_hold:
            self.held.hold(occurrence, message, visible_at)
        if received.to_hold:
            self._poke()

    def _poke(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)

    async def _receive_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            if self.holding >= self.max_held:
                await asyncio.sleep(0.05)
                continue
            room = self.max_held - self.holding
            started = time.monotonic()
            try:
                received = await self._threads["receive"].run(
                    self.receiving.receive_batches, self.settings.receive_wait_seconds, room
                )
            except Exception as exc:
                self.observer.receive_failed(exc)
                await asyncio.sleep(max(0.0, RECEIVE_RETRY_SECONDS - (time.monotonic() - started)))
                continue
            self.hold(received)

    async def _dispatch_loop(self, shutdown: Shutdown) -> None:
        while not shutdown.is_set():
            self.heartbeat.beat()
            now = self.clock.now()
            next_due = self.held.next_due()
            if next_due is not None and next_due - CHECK_LEAD <= now:
                self._due.add(self.held.pop_due(now + PREPARE_AHEAD))
            self._start_due()
            wait = TICK_SECONDS
            next_due = self.held.next_due()
            if next_due is not None:
                ahead = next_due - CHECK_LEAD - self.clock.now()
                wait = min(wait, ahead.total_seconds())
            store_again = self._store_again_at - time.monotonic()
            if self._due and store_again > 0:
                wait = min(wait, store_again)
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
        if time.monotonic() < self._store_again_at:
            return
        if self._batches and len(self._due) < SECOND_BATCH_FROM:
            return
        batch = self._due.take(room)
        self._starting += len(batch)
        self._batches += 1
        self._spawn(self._start_batch(batch))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_batch(self, batch: list[Held]) -> None:
        started = time.monotonic()
        try:
            plan = await self._threads["begin"].run(self._check_and_begin, batch)
        except Transient as exc:
            self._wait_for_store(exc, started, batch)
            return
        except Exception:
            # Their messages stay; they come back after their visibility timeout.
            self.observer.fire_failed()
            return
        finally:
            self._starting -= len(batch)
            self._batches -= 1
        if plan.unavailable is not None:
            self._wait_for_store(plan.unavailable, started, plan.not_begun)
        else:
            self.backoff.succeeded()
            self._store_again_at = 0.0
        self.start_calls(plan)

    def _check_and_begin(self, batch: list[Held]) -> Plan:
        """On the begin thread: the signing secrets of the batch's tenants read again if older
        than their bound (one read at most), then the batch checked and begun."""
        self.signers.refresh({item.occurrence.tenant for item in batch})
        return self.checking.check_and_begin(batch)

    def _wait_for_store(self, error: Transient, started: float, items: list[Held]) -> None:
        """The store did not answer: the items are due again, first, after the backoff's pause.
        Their messages stay invisible meanwhile for as long as a held occurrence's do (its
        execution lease past its time); an item whose message is visible again is given up to
        that delivery, and the execution record keeps the two from calling twice."""
        self._store_again_at = time.monotonic() + self.backoff.failed(
            error, time.monotonic() - started
        )
        now = self.clock.now()
        self._due.put_back([item for item in items if item.visible_at > now])
        self._poke()

    def start_calls(self, plan: Plan) -> None:
        """Take a checked batch on: its calls start, its skips and duplicates go."""
        self.observer.checked(plan.skipped, plan.superseded, plan.duplicates)
        if plan.missed:
            self.notifier.notify(plan.missed)
        self.settling.delete(plan.to_delete)
        self._due.put_back(plan.due_again)
        if plan.waiting:
            # Each waits for an earlier occurrence of its schedule: checked again shortly.
            again = self.clock.now() + OVERLAP_RECHECK
            for item in plan.waiting:
                item.due = again
            self.held.put_back(plan.waiting)
        # Each call's task starts at its moment (a loop timer per call, not a task asleep
        # until then); ``Delivery.deliver`` still waits for it by the clock that stamps it.
        loop = asyncio.get_running_loop()
        at, now = loop.time(), self.clock.now()
        for call in plan.calls:
            self._calls += 1
            ahead = (call.item.due - now).total_seconds()
            if ahead > 0:
                loop.call_at(at + ahead, self._start_call, call)
            else:
                self._start_call(call)
        self._poke()

    def _start_call(self, call: Call) -> None:
        self._spawn(self._deliver(call))

    async def _deliver(self, call: Call) -> None:
        try:
            self.settling.add(await self.delivery.deliver(call))
        except Exception:
            # The message stays; it comes back after its visibility timeout.
            self.observer.fire_failed(call.execution.occurrence_id)
        finally:
            self._calls -= 1
            waiter = self.hosts.release(call.host)
            if waiter is not None:
                self._due.put_back([waiter])
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
        items: Sequence[Held] = [
            *self.held.take_all(),
            *self._due,
            *self.hosts.take_all_parked(),
        ]
        self._due.clear()
        if items:
            await self._threads["begin"].run(self.checking.release, items)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
