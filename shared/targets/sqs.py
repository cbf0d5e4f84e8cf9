"""The ``sqs`` kind of delivery target: an occurrence becomes a message on the user's queue
(``shared.adapters.sqs_target`` sends it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from shared.jsonvalues import JSON
from shared.targets.aws import AwsMessage, AwsResource, parse_queue_url
from shared.targets.rules import TargetRules

SQS = "sqs"


@dataclass(frozen=True, kw_only=True)
class QueuePayload(AwsMessage):
    """A message on the queue of ``queue_url`` (see ``AwsMessage``)."""

    kind: ClassVar[str] = SQS
    sealed_fields: ClassVar[tuple[str, ...]] = ("queue_url", "body", "role_arn")

    queue_url: str

    def queue(self, own_endpoint: bool) -> AwsResource:
        return parse_queue_url(self.queue_url, own_endpoint)

    def problems(self, rules: TargetRules) -> dict[str, str]:
        problems = self.common_problems("payload")
        try:
            queue = self.queue(rules.own_aws_endpoint)
        except ValueError as exc:
            problems["payload.queue_url"] = str(exc)
        else:
            if queue.name in rules.own_queue_names:
                problems["payload.queue_url"] = "refused target: a queue of the scheduler's own"
        return problems

    @property
    def location(self) -> str:
        return self.queue_url

    def to_document(self) -> dict[str, JSON]:
        return {"kind": SQS, "queue_url": self.queue_url, **self.common_document()}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> QueuePayload:
        return cls(queue_url=document["queue_url"], **cls.common_fields(document))
