"""Delivery, on the executor's event loop: each begun occurrence waits for its exact moment, goes
to its target through the ``DeliveryTarget`` port (``shared.adapters.targets``: a webhook call,
a message on an SQS queue, a publish to an SNS topic), and the target's verdict decides the
next step (``shared.retry.next_step``: succeeded, retry after a backoff, or failed)."""

from __future__ import annotations

import asyncio
import time

from execution_worker.beginning import Call
from execution_worker.settler import Settled
from shared.model import AttemptOutcome
from shared.ports import Clock, DeliveryTarget
from shared.retry import next_step
from shared.targets import DeliveryPayload


class Delivery:
    def __init__(
        self, target: DeliveryTarget[DeliveryPayload], clock: Clock, max_receives: int
    ) -> None:
        self.target = target
        self.clock = clock
        self.max_receives = max_receives

    async def deliver(self, call: Call) -> Settled:
        """Wait for the occurrence's moment (it was begun up to ``PREPARE_AHEAD`` before), then
        make the attempt and judge how it ended. The attempt starts at its moment, never before
        by the clock that stamps it: its lateness is never negative."""
        began = time.perf_counter()
        execution, item = call.execution, call.item
        while (now := self.clock.now()) < item.due:
            await asyncio.sleep((item.due - now).total_seconds())
        call.started = now
        definition = call.schedule.live_definition
        delivered = await self.target.deliver(
            item.occurrence, definition.payload, execution.attempts, call.started, definition.name
        )
        # The queue dead-letters a message delivered max_receives times: then this is the last.
        deliveries_left = item.message.receive_count < self.max_receives
        step = next_step(delivered.verdict, definition.retry, execution.attempts, deliveries_left)
        finished = delivered.finished_at
        outcome = AttemptOutcome(
            step.status,
            finished,
            delivered.status,
            delivered.duration_ms,
            None if delivered.verdict.succeeded else delivered.verdict.reason,
            finished + step.delay if step.delay is not None else None,
            delivered.status_line,
            delivered.excerpt,
            delivered.truncated,
            started_at=call.started,
        )
        return Settled(
            execution,
            outcome,
            item.occurrence,
            item.message,
            step.delay,
            call.schedule,
            processing_seconds=time.perf_counter() - began,
        )
