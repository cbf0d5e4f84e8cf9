"""Driving an executor by hand, one step at a time, for tests that need the steps in order:
receive a batch, take what is due, fire one occurrence and settle it before going on."""

from __future__ import annotations

import asyncio
import time

from execution_worker.timer import Held
from execution_worker.worker import Executor


def receive_once(executor: Executor, wait_seconds: float = 0.0) -> int:
    """Receive one batch and hold it; how many were held."""
    received = executor.receiving.receive_batch(wait_seconds)
    executor.hold(received)
    return len(received.to_hold)


def take_due(executor: Executor, timeout: float) -> list[Held]:
    """Wait until the earliest held occurrence is due (or ``timeout``); pop the due ones."""
    next_due = executor.held.next_due()
    if next_due is not None:
        wait = (next_due - executor.clock.now()).total_seconds()
        if wait > 0:
            time.sleep(min(wait, timeout))
    return executor.held.pop_due(executor.clock.now())


def fire(executor: Executor, item: Held) -> None:
    """Fire one held occurrence that is due and settle it, all before returning."""
    asyncio.run(_fire_alone(executor, item))


async def _fire_alone(executor: Executor, item: Held) -> None:
    plan = executor.checking.check_and_begin([item])
    executor.observer.checked(plan.skipped, plan.superseded, plan.duplicates)
    try:
        outcomes = [await executor.delivery.deliver(call) for call in plan.calls]
    finally:
        # Each fire runs on a loop of its own: its connections go with it.
        await executor.target.close()
    for call in plan.calls:
        executor.hosts.release(call.host)
    for settled in outcomes:
        executor.settling.add(settled)
    executor.settling.delete(plan.to_delete)
    executor.settler.settle_now(*executor.settling.take())
