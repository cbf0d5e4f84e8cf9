"""The ``sns`` kind of delivery target: an occurrence becomes a publish to the user's topic
(``shared.adapters.sns_target`` publishes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from shared.targets.aws import AwsMessage, AwsResource, parse_topic_arn

SNS = "sns"


@dataclass(frozen=True, kw_only=True)
class TopicPayload(AwsMessage):
    """A publish to the topic of ``topic_arn`` (see ``AwsMessage``)."""

    kind: ClassVar[str] = SNS
    address: ClassVar[str] = "topic_arn"
    sealed_fields: ClassVar[tuple[str, ...]] = ("topic_arn", "body", "role_arn")

    topic_arn: str

    def resource(self, own_endpoint: bool) -> AwsResource:
        """The topic (an ARN names its region whatever the endpoint)."""
        return parse_topic_arn(self.topic_arn)
