"""Sending an occurrence as an SQS message or an SNS publish: ``AwsMessageTarget``, which
``shared.adapters.sqs_target`` and ``shared.adapters.sns_target`` each complete with only what
differs (the service, the request's members naming the queue or topic and holding the body, the
call), and what the message carries.

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
from abc import abstractmethod
from collections.abc import Collection
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from shared.adapters.aws_clients import AwsCallFailed, AwsClients, ClientKey
from shared.model import Answer, Occurrence
from shared.ports import Clock, Delivered, DeliveryTarget
from shared.retry import Verdict
from shared.targets.aws import AwsMessage, AwsResource, deduplication_id
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload
from shared.templating import TemplateValues, render_json
from shared.timeutil import iso_z
from shared.tracing import TraceContext

# The payloads that are an ``AwsMessage``.
M = TypeVar("M", bound=QueuePayload | TopicPayload)


class AwsMessageTarget(DeliveryTarget[M]):
    """An occurrence sent to the queue or topic of a payload of kind ``M``, on the endpoint of
    its region, with the credentials of its ``role_arn`` or the executor's; the scheduler's own
    queues (``own_queue_names``) are refused."""

    # The AWS service (its client's name), and how an answer names it.
    service: ClassVar[str]
    label: ClassVar[str]
    # The request's member that holds the body.
    body_member: ClassVar[str]

    def __init__(
        self, clients: AwsClients, clock: Clock, own_queue_names: Collection[str] = ()
    ) -> None:
        self.clients = clients
        self.clock = clock
        self.own_queue_names = frozenset(own_queue_names)

    def resource(self, payload: M) -> AwsResource:
        return payload.resource(own_endpoint=self.clients.endpoint_url is not None)

    @abstractmethod
    def addressed(self, payload: M, resource: AwsResource) -> dict[str, Any]:
        """The request's member naming the queue or topic."""

    @abstractmethod
    def send(self, client: Any, request: dict[str, Any]) -> str:
        """Make the request with ``client``; the id the service gave the message."""

    async def deliver(
        self,
        occurrence: Occurrence,
        payload: M,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Delivered:
        try:
            resource = self.resource(payload)
        except ValueError as exc:
            return refused(self.clock, now, str(exc))
        if (refusal := payload.refusal(resource, self.own_queue_names)) is not None:
            return refused(self.clock, now, refusal)
        request: dict[str, Any] = {
            **self.addressed(payload, resource),
            self.body_member: message_body(occurrence, payload, attempt, schedule_name),
            "MessageAttributes": message_attributes(occurrence, attempt, trace),
        }
        if resource.fifo:
            request.update(fifo_fields(occurrence, payload))
        region = resource.region or self.clients.default_region
        key = ClientKey(
            self.service, region, payload.timeout_seconds, payload.role_arn, occurrence.tenant
        )

        def call(client: Any) -> str:
            return self.send(client, request)

        return await sent(self.clock, now, self.clients.call(key, call), self.label)

    async def close(self) -> None:
        self.clients.close()


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
        Answer(excerpt=f"{what} MessageId {message_id}"),
    )


def refused(clock: Clock, now: datetime, reason: str) -> Delivered:
    """A send not made: the target is refused, or cannot be read (final)."""
    finished = clock.now()
    return Delivered(
        Verdict(False, False, reason), finished, (finished - now).total_seconds() * 1000.0
    )
