"""The ``sns`` kind of delivery target: an occurrence becomes a publish to the user's topic
(``shared.adapters.sns_target`` publishes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from shared.jsonvalues import JSON
from shared.targets.aws import AwsMessage, AwsResource, parse_topic_arn
from shared.targets.rules import TargetRules

SNS = "sns"


@dataclass(frozen=True, kw_only=True)
class TopicPayload(AwsMessage):
    """A publish to the topic of ``topic_arn`` (see ``AwsMessage``)."""

    kind: ClassVar[str] = SNS
    sealed_fields: ClassVar[tuple[str, ...]] = ("topic_arn", "body", "role_arn")

    topic_arn: str

    def topic(self) -> AwsResource:
        return parse_topic_arn(self.topic_arn)

    def problems(self, rules: TargetRules) -> dict[str, str]:
        problems = self.common_problems("payload")
        try:
            self.topic()
        except ValueError as exc:
            problems["payload.topic_arn"] = str(exc)
        return problems

    @property
    def location(self) -> str:
        return self.topic_arn

    def to_document(self) -> dict[str, JSON]:
        return {"kind": SNS, "topic_arn": self.topic_arn, **self.common_document()}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> TopicPayload:
        return cls(topic_arn=document["topic_arn"], **cls.common_fields(document))
