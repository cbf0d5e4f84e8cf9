"""Delivery, on the executor's event loop: each begun occurrence waits for its exact moment, goes
to its target through the ``DeliveryTarget`` port (``shared.adapters.targets``: a webhook call,
a message on an SQS queue, a publish to an SNS topic), and the target's verdict decides the
next step (``shared.retry.next_step``: succeeded, retry after a backoff, or failed).

Each attempt is a span of the occurrence's trace (``shared.ports.spans``): the target sends its
context (``traceparent``), with a span id of its own, recorded or not."""

from __future__ import annotations

import asyncio
import time

from execution_worker.beginning import Call
from execution_worker.settler import Settled
from shared.model import AttemptOutcome
from shared.ports import Clock, DeliveryTarget
from shared.ports.spans import AttributeValue, NoSpans, SpanKind, Spans, SpanStart
from shared.retry import next_step
from shared.targets import DeliveryPayload


class Delivery:
    def __init__(
        self,
        target: DeliveryTarget[DeliveryPayload],
        clock: Clock,
        max_receives: int,
        spans: Spans | None = None,
    ) -> None:
        self.target = target
        self.clock = clock
        self.max_receives = max_receives
        self.spans = spans or NoSpans()

    async def deliver(self, call: Call) -> Settled:
        """Wait for the occurrence's moment (it was begun up to ``PREPARE_AHEAD`` before), then
        make the attempt and judge how it ended. The attempt starts at its moment, never before
        by the clock that stamps it: its lateness is never negative. Its start is when its
        request left, where the target says (a webhook's, once its name resolved and its
        connection opened: what its receiver sees)."""
        began = time.perf_counter()
        execution, item = call.execution, call.item
        while (now := self.clock.now()) < item.due:
            await asyncio.sleep((item.due - now).total_seconds())
        call.started = now
        definition = call.schedule.live_definition
        occurrence = item.occurrence
        span = self.spans.begin(
            SpanStart(
                "occurrence attempt",
                SpanKind.CLIENT,
                occurrence.trace,
                self._attributes(call) if self.spans.recording else {},
                outgoing=True,
            )
        )
        try:
            delivered = await self.target.deliver(
                occurrence,
                definition.payload,
                execution.attempts,
                call.started,
                definition.name,
                span.context,
            )
        except BaseException as exc:
            span.end(f"no verdict: {type(exc).__name__}")
            raise
        if delivered.started_at is not None:
            call.started = delivered.started_at
        # The queue dead-letters a message delivered max_receives times: then this is the last.
        deliveries_left = item.message.receive_count < self.max_receives
        step = next_step(delivered.verdict, definition.retry, execution.attempts, deliveries_left)
        if self.spans.recording:
            span.set(
                {
                    "http.response.status_code": delivered.answer.status,
                    "scheduler.outcome": step.status.value,
                }
            )
        span.end(None if delivered.verdict.succeeded else _failed(delivered.answer.status))
        finished = delivered.finished_at
        outcome = AttemptOutcome(
            step.status,
            finished,
            delivered.answer,
            delivered.duration_ms,
            None if delivered.verdict.succeeded else delivered.verdict.reason,
            finished + step.delay if step.delay is not None else None,
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

    @staticmethod
    def _attributes(call: Call) -> dict[str, AttributeValue | None]:
        occurrence = call.item.occurrence
        return {
            "scheduler.tenant": occurrence.tenant,
            "scheduler.schedule.id": occurrence.schedule_id,
            "scheduler.occurrence.id": occurrence.occurrence_id,
            "scheduler.attempt": call.execution.attempts,
            "scheduler.target": call.schedule.live_definition.payload.kind,
        }


def _failed(status: int | None) -> str:
    """A failed attempt's span status: never the verdict's reason, which may quote the URL."""
    return "no answer" if status is None else f"answered {status}"
