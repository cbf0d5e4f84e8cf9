"""The SNS delivery target: an occurrence becomes a publish to the user's topic
(``shared.targets.sns``; how it is sent and what it carries: ``shared.adapters.aws_message``),
on the SNS endpoint of the topic ARN's region."""

from __future__ import annotations

from typing import Any

from shared.adapters.aws_message import AwsMessageTarget
from shared.targets.aws import AwsResource
from shared.targets.sns import TopicPayload


class SnsTarget(AwsMessageTarget[TopicPayload]):
    service = "sns"
    label = "SNS"
    body_member = "Message"

    def destination(self, payload: TopicPayload) -> str:
        return f"sns:{payload.topic_arn}"

    def addressed(self, payload: TopicPayload, resource: AwsResource) -> dict[str, Any]:
        return {"TopicArn": payload.topic_arn}

    def send(self, client: Any, request: dict[str, Any]) -> str:
        return str(client.publish(**request)["MessageId"])
