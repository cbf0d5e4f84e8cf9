"""What an SQS message and an SNS publish of an occurrence carry, shared by
``shared.adapters.sqs_target`` and ``shared.adapters.sns_target``.

The body: the payload's body with its placeholders filled in (a string as it is, any other
JSON value as compact JSON), or, without one, the occurrence in JSON. The attributes (String):
``Scheduler-Occurrence-Id``, ``Scheduler-Schedule-Id``, ``Scheduler-Scheduled-Time`` (ISO 8601
UTC), ``Scheduler-Attempt``, and the attempt's W3C ``traceparent`` (and ``tracestate``). To a
FIFO queue or topic also a message group id (the payload's, else the schedule id) and a
deduplication id (the payload's, else the occurrence id: a retry of an attempt that did arrive
is dropped by SQS within its five-minute window).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from shared.adapters.aws_clients import AwsCallFailed
from shared.model import Occurrence
from shared.ports import Clock, Delivered
from shared.retry import Verdict
from shared.targets.aws import AwsMessage, deduplication_id
from shared.templating import TemplateValues, render_json
from shared.timeutil import iso_z
from shared.tracing import TraceContext


def message_body(
    occurrence: Occurrence, payload: AwsMessage, attempt: int, schedule_name: str
) -> str:
    body = payload.body
    if body is None:
        body = {
            "occurrence_id": occurrence.occurrence_id,
            "schedule_id": occurrence.schedule_id,
            "schedule_name": schedule_name,
            "scheduled_time": iso_z(occurrence.scheduled_time),
            "attempt": attempt,
        }
    elif payload.templated:
        values = TemplateValues.of(occurrence, attempt, schedule_name).by_name()
        body = render_json(body, values)
    return body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))


def message_attributes(
    occurrence: Occurrence, attempt: int, trace: TraceContext | None
) -> dict[str, dict[str, str]]:
    values = {
        "Scheduler-Occurrence-Id": occurrence.occurrence_id,
        "Scheduler-Schedule-Id": occurrence.schedule_id,
        "Scheduler-Scheduled-Time": iso_z(occurrence.scheduled_time),
        "Scheduler-Attempt": str(attempt),
    }
    if trace is not None:
        # The attempt's span: a consumer continues the trace from ``traceparent``.
        values.update(trace.headers())
    return {name: {"DataType": "String", "StringValue": value} for name, value in values.items()}


def fifo_fields(occurrence: Occurrence, payload: AwsMessage) -> dict[str, Any]:
    return {
        "MessageGroupId": payload.message_group_id or occurrence.schedule_id,
        "MessageDeduplicationId": payload.message_deduplication_id
        or deduplication_id(occurrence.occurrence_id),
    }


async def sent(clock: Clock, now: datetime, call: Any, what: str) -> Delivered:
    """How a send ended: ``call`` is its coroutine, answering the id the service gave the
    message; a failure is a verdict."""
    try:
        message_id = await call
    except AwsCallFailed as exc:
        finished = clock.now()
        return Delivered(
            Verdict(False, exc.retryable, str(exc)),
            finished,
            (finished - now).total_seconds() * 1000.0,
        )
    finished = clock.now()
    return Delivered(
        Verdict(succeeded=True, retryable=False),
        finished,
        (finished - now).total_seconds() * 1000.0,
        excerpt=f"{what} MessageId {message_id}",
    )


def refused(clock: Clock, now: datetime, reason: str) -> Delivered:
    """A send not made: the target is refused, or cannot be read (final)."""
    finished = clock.now()
    return Delivered(
        Verdict(False, False, reason), finished, (finished - now).total_seconds() * 1000.0
    )
