"""What the SQS and SNS targets add to the contract (``test_delivery_targets.py``), on LocalStack:
FIFO queues and topics (group and deduplication ids), a role assumed per schedule, and the
scheduler's own queues refused."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from shared.adapters.aws_clients import AwsClients, _failure, external_id
from shared.adapters.sns_target import SnsTarget
from shared.adapters.sqs_target import SqsTarget
from shared.model import Occurrence
from shared.ports import Delivered, SystemClock
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload
from tests.support.peers import REGION, Peer
from tests.support.user_aws import UserAws, user_aws

SCHEDULED = datetime(2030, 1, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def aws(localstack: Peer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[UserAws]:
    with user_aws(localstack, monkeypatch, tmp_path) as resources:
        yield resources


def clients(aws: UserAws) -> AwsClients:
    return AwsClients(aws.endpoint, REGION, SystemClock(), threads=4)


def occurrence(schedule_id: str = "billing", minutes: int = 0) -> Occurrence:
    return Occurrence("acme", schedule_id, 1, SCHEDULED + timedelta(minutes=minutes))


def send_all(target: Any, *sends: tuple[Occurrence, Any, int]) -> list[Delivered]:
    async def run() -> list[Delivered]:
        try:
            return [
                await target.deliver(item, payload, attempt, SystemClock().now(), "Billing")
                for item, payload, attempt in sends
            ]
        finally:
            await target.close()

    return asyncio.run(run())


def test_a_fifo_queue_gets_the_schedule_as_group_and_each_occurrence_once(aws: UserAws) -> None:
    queue = aws.queue(fifo=True)
    payload = QueuePayload(queue_url=queue, body={"n": 1})
    first, later = occurrence(), occurrence(minutes=1)
    # The second attempt of the first occurrence (its first arrived; its answer was lost).
    delivered = send_all(
        SqsTarget(clients(aws), SystemClock()),
        (first, payload, 1),
        (first, payload, 2),
        (later, payload, 1),
    )
    assert all(item.verdict.succeeded for item in delivered)
    arrived = aws.arrived(queue, 3, timeout=5)
    assert [(m.group_id, m.deduplication_id) for m in arrived] == [
        ("billing", "billing:2030-01-01T09:30:00.000Z"),
        ("billing", "billing:2030-01-01T09:31:00.000Z"),
    ]
    assert [m.attributes["Scheduler-Attempt"] for m in arrived] == ["1", "1"]


def test_a_fifo_queue_takes_the_group_and_deduplication_ids_a_schedule_names(
    aws: UserAws,
) -> None:
    queue = aws.queue(fifo=True)
    payload = QueuePayload(
        queue_url=queue, message_group_id="tenant-42", message_deduplication_id="once-only"
    )
    delivered = send_all(
        SqsTarget(clients(aws), SystemClock()),
        (occurrence(), payload, 1),
        (occurrence(minutes=1), payload, 1),
    )
    assert all(item.verdict.succeeded for item in delivered)
    [message] = aws.arrived(queue, 2, timeout=5)
    assert (message.group_id, message.deduplication_id) == ("tenant-42", "once-only")
    # No body given: the occurrence, described.
    assert message.json() == {
        "occurrence_id": "billing:2030-01-01T09:30:00.000Z",
        "schedule_id": "billing",
        "schedule_name": "Billing",
        "scheduled_time": "2030-01-01T09:30:00.000Z",
        "attempt": 1,
    }


def test_a_fifo_topic_delivers_to_its_fifo_queue_once_per_occurrence(aws: UserAws) -> None:
    queue = aws.queue(fifo=True)
    topic = aws.topic(queue, fifo=True)
    payload = TopicPayload(topic_arn=topic, body="tick {{ occurrence.id }}")
    delivered = send_all(
        SnsTarget(clients(aws), SystemClock()),
        (occurrence(), payload, 1),
        (occurrence(), payload, 2),
    )
    assert all(item.verdict.succeeded for item in delivered)
    [message] = aws.arrived(queue, 2, timeout=5)
    assert message.body == "tick billing:2030-01-01T09:30:00.000Z"
    assert message.group_id == "billing"


def test_a_long_occurrence_id_is_deduplicated_by_its_hash(aws: UserAws) -> None:
    queue = aws.queue(fifo=True)
    long_id = "s" * 128
    payload = QueuePayload(queue_url=queue)
    delivered = send_all(SqsTarget(clients(aws), SystemClock()), (occurrence(long_id), payload, 1))
    assert delivered[0].verdict.succeeded, delivered[0].verdict.reason
    [message] = aws.arrived(queue, 1)
    assert message.deduplication_id is not None and len(message.deduplication_id) == 64


def test_a_role_is_assumed_for_the_tenant_and_the_message_sent_with_its_credentials(
    aws: UserAws,
) -> None:
    queue = aws.queue()
    payload = QueuePayload(
        queue_url=queue, role_arn="arn:aws:iam::000000000000:role/scheduler-sends"
    )
    target = SqsTarget(clients(aws), SystemClock())
    delivered = send_all(target, (occurrence(), payload, 1))
    assert delivered[0].verdict.succeeded, delivered[0].verdict.reason
    assert len(aws.arrived(queue, 1)) == 1
    assert external_id("acme") == "scheduler:acme"
    assert external_id("a~b") == "scheduler:a=b"


def test_the_schedulers_own_queues_are_refused_without_a_send(aws: UserAws) -> None:
    queue = aws.queue()
    name = queue.rsplit("/", 1)[1]
    target = SqsTarget(clients(aws), SystemClock(), own_queue_names={name})
    [delivered] = send_all(target, (occurrence(), QueuePayload(queue_url=queue, body="x"), 1))
    assert not delivered.verdict.succeeded and not delivered.verdict.retryable
    assert "scheduler's own" in (delivered.verdict.reason or "")
    assert aws.arrived(queue, 1, timeout=2) == []


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("ThrottlingException", 400, True),
        ("RequestThrottled", 403, True),
        ("InternalError", 500, True),
        ("AccessDenied", 403, False),
        ("AWS.SimpleQueueService.NonExistentQueue", 400, False),
        ("InvalidParameterValue", 400, False),
    ],
)
def test_aws_errors_are_retried_when_a_later_try_can_succeed(
    code: str, status: int, retryable: bool
) -> None:
    error = ClientError(
        {
            "Error": {"Code": code, "Message": "no Bearer abcdefghijklmnopqrstuvwxyz012345 here"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "SendMessage",
    )
    failure = _failure(error)
    assert failure.retryable is retryable
    assert code in str(failure)
    assert "abcdefghijklmnopqrstuvwxyz012345" not in str(failure)
