"""The ``sqs`` kind of delivery target: an occurrence becomes a message on the user's queue
(``shared.adapters.sqs_target`` sends it)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import ClassVar

from shared.targets.aws import AwsMessage, AwsResource, parse_queue_url

SQS = "sqs"
OWN_QUEUE = "refused target: a queue of the scheduler's own"


@dataclass(frozen=True, kw_only=True)
class QueuePayload(AwsMessage):
    """A message on the queue of ``queue_url`` (see ``AwsMessage``); never on one of the
    scheduler's own queues."""

    kind: ClassVar[str] = SQS
    address: ClassVar[str] = "queue_url"
    sealed_fields: ClassVar[tuple[str, ...]] = ("queue_url", "body", "role_arn")

    queue_url: str

    def resource(self, own_endpoint: bool) -> AwsResource:
        return parse_queue_url(self.queue_url, own_endpoint)

    def refusal(self, resource: AwsResource, own_queue_names: Collection[str]) -> str | None:
        return OWN_QUEUE if resource.name in own_queue_names else None
