"""The user's own AWS resources on LocalStack: queues and topics a schedule delivers to, and
what arrived on them, read as the user would (a receive, attributes and all)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.support.peers import REGION, Peer, fake_aws


@dataclass(frozen=True)
class Arrived:
    """One message as its queue gave it: the body, and its attributes as name → value."""

    body: str
    attributes: dict[str, str]
    group_id: str | None = None
    deduplication_id: str | None = None

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class UserAws:
    endpoint: str
    sqs: Any
    sns: Any
    made: list[tuple[str, str]] = field(default_factory=list)

    def queue(self, fifo: bool = False) -> str:
        """A new queue of the user's; its URL."""
        name = f"user-{uuid.uuid4().hex[:12]}" + (".fifo" if fifo else "")
        attributes = {"FifoQueue": "true"} if fifo else {}
        url = str(self.sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"])
        self.made.append(("queue", url))
        return url

    def topic(self, subscriber: str, fifo: bool = False) -> str:
        """A new topic of the user's, delivering to the queue of URL ``subscriber``; its ARN."""
        name = f"user-{uuid.uuid4().hex[:12]}" + (".fifo" if fifo else "")
        attributes = {"FifoTopic": "true"} if fifo else {}
        arn = str(self.sns.create_topic(Name=name, Attributes=attributes)["TopicArn"])
        self.made.append(("topic", arn))
        queue_arn = self.sqs.get_queue_attributes(QueueUrl=subscriber, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.sns.subscribe(
            TopicArn=arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "true"},
        )
        return arn

    def arrived(self, queue_url: str, count: int, timeout: float = 20.0) -> list[Arrived]:
        """The first ``count`` messages on the queue (deleted as read), waiting up to
        ``timeout``; fewer if no more came."""
        found: list[Arrived] = []
        deadline = time.monotonic() + timeout
        while len(found) < count and time.monotonic() < deadline:
            answer = self.sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["All"],
            )
            for message in answer.get("Messages", []):
                system = message.get("Attributes", {})
                found.append(
                    Arrived(
                        message["Body"],
                        {
                            name: value["StringValue"]
                            for name, value in message.get("MessageAttributes", {}).items()
                        },
                        system.get("MessageGroupId"),
                        system.get("MessageDeduplicationId"),
                    )
                )
                self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def close(self) -> None:
        for kind, name in reversed(self.made):
            if kind == "queue":
                self.sqs.delete_queue(QueueUrl=name)
            else:
                self.sns.delete_topic(TopicArn=name)
        self.sqs.close()
        self.sns.close()


@contextmanager
def user_aws(
    localstack: Peer, monkeypatch: pytest.MonkeyPatch, directory: Path
) -> Iterator[UserAws]:
    """The user's AWS on the session's LocalStack, with fake credentials in this process's
    environment (the executor's standard chain finds them; processes started inherit them)."""
    fake_aws(monkeypatch, directory)
    session = boto3.session.Session()
    resources = UserAws(
        localstack.url,
        session.client("sqs", endpoint_url=localstack.url, region_name=REGION),
        session.client("sns", endpoint_url=localstack.url, region_name=REGION),
    )
    try:
        yield resources
    finally:
        resources.close()
