"""The SQS delivery target: an occurrence becomes a message on the user's queue
(``shared.targets.sqs``; what it carries: ``shared.adapters.aws_message``).

The queue is named by its account and name on the SQS endpoint of its region
(``shared.targets.aws``): the host a queue URL names is never contacted. The scheduler's own
queues are refused, whatever the URL.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from shared.adapters.aws_clients import AwsClients, ClientKey
from shared.adapters.aws_message import (
    fifo_fields,
    message_attributes,
    message_body,
    refused,
    sent,
)
from shared.model import Occurrence
from shared.ports import Clock, Delivered, DeliveryTarget
from shared.targets.aws import AwsResource
from shared.targets.sqs import QueuePayload
from shared.tracing import TraceContext


class SqsTarget(DeliveryTarget[QueuePayload]):
    def __init__(
        self, clients: AwsClients, clock: Clock, own_queue_names: Collection[str] = ()
    ) -> None:
        self.clients = clients
        self.clock = clock
        self.own_queue_names = frozenset(own_queue_names)

    def _queue(self, payload: QueuePayload) -> AwsResource:
        return payload.queue(own_endpoint=self.clients.endpoint_url is not None)

    def destination(self, payload: QueuePayload) -> str:
        try:
            queue = self._queue(payload)
        except ValueError:
            return "sqs:"
        return f"sqs:{queue.region or self.clients.default_region}:{queue.account}/{queue.name}"

    async def deliver(
        self,
        occurrence: Occurrence,
        payload: QueuePayload,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Delivered:
        try:
            queue = self._queue(payload)
        except ValueError as exc:
            return refused(self.clock, now, str(exc))
        if queue.name in self.own_queue_names:
            return refused(self.clock, now, "refused target: a queue of the scheduler's own")
        region = queue.region or self.clients.default_region
        request: dict[str, Any] = {
            "QueueUrl": self._url(payload, queue),
            "MessageBody": message_body(occurrence, payload, attempt, schedule_name),
            "MessageAttributes": message_attributes(occurrence, attempt, trace),
        }
        if queue.fifo:
            request.update(fifo_fields(occurrence, payload))
        key = ClientKey("sqs", region, payload.timeout_seconds, payload.role_arn, occurrence.tenant)

        def send(client: Any) -> str:
            return str(client.send_message(**request)["MessageId"])

        return await sent(self.clock, now, self.clients.call(key, send), "SQS")

    def _url(self, payload: QueuePayload, queue: AwsResource) -> str:
        """The queue's URL as the endpoint the executor sends to knows it: an AWS URL as
        written; on an endpoint of the executor's own, the queue's path on it."""
        endpoint = self.clients.endpoint_url
        if endpoint is None:
            return payload.queue_url
        return f"{endpoint.rstrip('/')}/{queue.account}/{queue.name}"

    async def close(self) -> None:
        self.clients.close()
