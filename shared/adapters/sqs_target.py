"""The SQS delivery target: an occurrence becomes a message on the user's queue
(``shared.targets.sqs``; how it is sent and what it carries: ``shared.adapters.aws_message``).

The queue is named by its account and name on the SQS endpoint of its region
(``shared.targets.aws``): the host a queue URL names is never contacted. The scheduler's own
queues are refused, whatever the URL.
"""

from __future__ import annotations

from typing import Any

from shared.adapters.aws_message import AwsMessageTarget
from shared.targets.aws import AwsResource
from shared.targets.sqs import QueuePayload


class SqsTarget(AwsMessageTarget[QueuePayload]):
    service = "sqs"
    label = "SQS"
    body_member = "MessageBody"

    def destination(self, payload: QueuePayload) -> str:
        try:
            queue = self.resource(payload)
        except ValueError:
            return "sqs:"
        return f"sqs:{queue.region or self.clients.default_region}:{queue.account}/{queue.name}"

    def addressed(self, payload: QueuePayload, resource: AwsResource) -> dict[str, Any]:
        """The queue's URL as the endpoint the executor sends to knows it: an AWS URL as
        written; on an endpoint of the executor's own, the queue's path on it."""
        endpoint = self.clients.endpoint_url
        if endpoint is None:
            return {"QueueUrl": payload.queue_url}
        return {"QueueUrl": f"{endpoint.rstrip('/')}/{resource.account}/{resource.name}"}

    def send(self, client: Any, request: dict[str, Any]) -> str:
        return str(client.send_message(**request)["MessageId"])
