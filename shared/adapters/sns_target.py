"""The SNS delivery target: an occurrence becomes a publish to the user's topic
(``shared.targets.sns``; what it carries: ``shared.adapters.aws_message``), on the SNS
endpoint of the topic ARN's region."""

from __future__ import annotations

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
from shared.targets.sns import TopicPayload
from shared.tracing import TraceContext


class SnsTarget(DeliveryTarget[TopicPayload]):
    def __init__(self, clients: AwsClients, clock: Clock) -> None:
        self.clients = clients
        self.clock = clock

    def destination(self, payload: TopicPayload) -> str:
        return f"sns:{payload.topic_arn}"

    async def deliver(
        self,
        occurrence: Occurrence,
        payload: TopicPayload,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Delivered:
        try:
            topic = payload.topic()
        except ValueError as exc:
            return refused(self.clock, now, str(exc))
        request: dict[str, Any] = {
            "TopicArn": payload.topic_arn,
            "Message": message_body(occurrence, payload, attempt, schedule_name),
            "MessageAttributes": message_attributes(occurrence, attempt, trace),
        }
        if topic.fifo:
            request.update(fifo_fields(occurrence, payload))
        key = ClientKey(
            "sns", topic.region or "", payload.timeout_seconds, payload.role_arn, occurrence.tenant
        )

        def publish(client: Any) -> str:
            return str(client.publish(**request)["MessageId"])

        return await sent(self.clock, now, self.clients.call(key, publish), "SNS")

    async def close(self) -> None:
        self.clients.close()
