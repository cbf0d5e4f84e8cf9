"""The delivery targets of an executor: one adapter per kind of payload (``shared.targets``),
registered once in ``ADAPTERS``, and ``Targets``, which hands each payload to the adapter of its
kind. Nothing else in the executor knows the kinds."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from shared.adapters.aws_clients import AwsClients
from shared.adapters.http_target import HttpTarget, SignerFor
from shared.adapters.sns_target import SnsTarget
from shared.adapters.sqs_target import SqsTarget
from shared.model import Occurrence
from shared.ports import Clock, Delivered, DeliveryTarget, WebhookSender
from shared.settings import Settings
from shared.targets import DeliveryPayload
from shared.targets.http import HTTP
from shared.targets.sns import SNS
from shared.targets.sqs import SQS
from shared.tracing import TraceContext

# AWS sends in flight at once, each on a thread of its own, at most.
MAX_AWS_THREADS = 64


@dataclass
class TargetContext:
    """What the adapters are made from."""

    sender: WebhookSender
    signers: SignerFor
    clock: Clock
    settings: Settings

    @cached_property
    def aws_clients(self) -> AwsClients:
        return AwsClients(
            self.settings.target_aws_endpoint_url or None,
            self.settings.aws_region,
            self.clock,
            threads=min(MAX_AWS_THREADS, self.settings.executor_concurrency),
        )


ADAPTERS: dict[str, Callable[[TargetContext], DeliveryTarget[Any]]] = {
    HTTP: lambda context: HttpTarget(context.sender, context.signers, context.clock),
    SQS: lambda context: SqsTarget(
        context.aws_clients, context.clock, context.settings.own_queue_names
    ),
    SNS: lambda context: SnsTarget(context.aws_clients, context.clock),
}


class Targets(DeliveryTarget[DeliveryPayload]):
    def __init__(self, by_kind: Mapping[str, DeliveryTarget[Any]]) -> None:
        self.by_kind = dict(by_kind)

    @classmethod
    def of(cls, context: TargetContext) -> Targets:
        return cls({kind: make(context) for kind, make in ADAPTERS.items()})

    def destination(self, payload: DeliveryPayload) -> str:
        return self.by_kind[payload.kind].destination(payload)

    def deliver(
        self,
        occurrence: Occurrence,
        payload: DeliveryPayload,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Coroutine[Any, Any, Delivered]:
        # The adapter's own coroutine, not one more around it: this is on every fire's path.
        target = self.by_kind[payload.kind]
        return target.deliver(occurrence, payload, attempt, now, schedule_name, trace)

    async def close(self) -> None:
        for target in self.by_kind.values():
            await target.close()
