"""The contract of the ``DeliveryTarget`` port, over every kind (``shared.adapters.targets``):
an HTTP webhook (a local receiver), an SQS queue and an SNS topic (the user's, on LocalStack,
read back as the user would).

Whatever the kind: a delivery that arrives is a success, and what arrived names the occurrence,
its schedule and its time, carries the attempt's W3C ``traceparent`` and ``tracestate`` (a
header, a message attribute), with the body's placeholders filled in; a target that cannot take it
is a verdict that is not a success, never an exception; calls are counted by destination.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared.adapters.http_sender import HttpSender
from shared.adapters.http_target import one_signer
from shared.adapters.targets import TargetContext, Targets
from shared.model import Occurrence, Payload
from shared.ports import Delivered, SystemClock
from shared.settings import Settings
from shared.ssrf import TargetPolicy
from shared.targets import DeliveryPayload
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload
from shared.tracing import TraceContext
from shared.webhooks import WebhookSigner
from tests.support.peers import Peer
from tests.support.receiver import Receiver, running_receiver
from tests.support.user_aws import UserAws, user_aws

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SCHEDULED = datetime(2030, 1, 1, 9, 30, tzinfo=UTC)
OCCURRENCE = Occurrence("acme", "nightly-report", 7, SCHEDULED)
# The context the executor gives an attempt (``execution_worker.delivery``): the target sends it.
TRACE = TraceContext("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "01", "congo=t61")
TEMPLATED = {
    "run": "{{ occurrence.id }}",
    "at": "{{occurrence.scheduled_time}}",
    "try": "attempt {{ occurrence.attempt }} of {{ schedule.name }} ({{ schedule.id }})",
    "literal": "\\{{ not a placeholder }}",
}
FILLED = {
    "run": "nightly-report:2030-01-01T09:30:00.000Z",
    "at": "2030-01-01T09:30:00.000Z",
    "try": "attempt 3 of Nightly report (nightly-report)",
    "literal": "{{ not a placeholder }}",
}


@dataclass(frozen=True)
class Arrival:
    """What a delivery left at its target, as the user reads it."""

    body: Any
    occurrence_id: str
    schedule_id: str
    scheduled_time: str
    attempt: str
    traceparent: str | None
    tracestate: str | None


@dataclass
class Kind:
    """One kind of target under the contract."""

    name: str
    # A payload whose delivery arrives, with this body.
    payload: Callable[[Any], DeliveryPayload]
    # What arrived since the last look.
    arrivals: Callable[[int], list[Arrival]]
    # A payload of this kind whose target cannot take it.
    nowhere: DeliveryPayload
    # Two payloads of this kind to the same destination, and one to another.
    same: tuple[DeliveryPayload, DeliveryPayload, DeliveryPayload]


def deliver(targets: Targets, payload: DeliveryPayload) -> Delivered:
    """One delivery, then the targets closed (each test makes one)."""

    async def once() -> Delivered:
        try:
            return await targets.deliver(
                OCCURRENCE, payload, 3, SystemClock().now(), "Nightly report", TRACE
            )
        finally:
            await targets.close()

    return asyncio.run(once())


def http_kind(receiver: Receiver) -> Kind:
    def arrivals(count: int) -> list[Arrival]:
        calls = receiver.wait_for(count, 10)
        receiver.calls.clear()
        return [
            Arrival(
                call.json(),
                call.headers["idempotency-key"],
                call.headers["x-scheduler-schedule-id"],
                call.headers["x-scheduler-scheduled-time"],
                call.headers["x-scheduler-attempt"],
                call.headers.get("traceparent"),
                call.headers.get("tracestate"),
            )
            for call in calls
        ]

    return Kind(
        "http",
        lambda body: Payload("POST", f"{receiver.url}/hook", body=body),
        arrivals,
        # Nothing listens on the discard port.
        Payload("POST", "http://127.0.0.1:9/hook", timeout_seconds=2),
        (
            Payload("GET", f"{receiver.url}/a"),
            Payload("POST", f"{receiver.url}/b?x=1"),
            Payload("GET", "http://127.0.0.2:9/a"),
        ),
    )


def aws_arrivals(aws: UserAws, queue_url: str) -> Callable[[int], list[Arrival]]:
    def arrivals(count: int) -> list[Arrival]:
        return [
            Arrival(
                message.json(),
                message.attributes["Scheduler-Occurrence-Id"],
                message.attributes["Scheduler-Schedule-Id"],
                message.attributes["Scheduler-Scheduled-Time"],
                message.attributes["Scheduler-Attempt"],
                message.attributes.get("traceparent"),
                message.attributes.get("tracestate"),
            )
            for message in aws.arrived(queue_url, count)
        ]

    return arrivals


def sqs_kind(aws: UserAws) -> Kind:
    queue_url = aws.queue()
    missing = queue_url.rsplit("/", 1)[0] + "/no-such-queue"
    return Kind(
        "sqs",
        lambda body: QueuePayload(queue_url=queue_url, body=body),
        aws_arrivals(aws, queue_url),
        QueuePayload(queue_url=missing, body="lost"),
        (
            QueuePayload(queue_url=queue_url, body=1),
            QueuePayload(queue_url=queue_url, body="x", timeout_seconds=3),
            QueuePayload(queue_url=missing),
        ),
    )


def sns_kind(aws: UserAws) -> Kind:
    subscriber = aws.queue()
    topic = aws.topic(subscriber)
    missing = topic.rsplit(":", 1)[0] + ":no-such-topic"
    return Kind(
        "sns",
        lambda body: TopicPayload(topic_arn=topic, body=body),
        aws_arrivals(aws, subscriber),
        TopicPayload(topic_arn=missing, body="lost"),
        (
            TopicPayload(topic_arn=topic, body=1),
            TopicPayload(topic_arn=topic, body="x", timeout_seconds=3),
            TopicPayload(topic_arn=missing),
        ),
    )


@pytest.fixture(params=["http", "sqs", "sns"])
def kind(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Kind, Targets]]:
    endpoint = ""
    with running_receiver() as receiver:
        if request.param == "http":
            subject = http_kind(receiver)
            yield subject, targets_for(endpoint)
            return
        localstack: Peer = request.getfixturevalue("localstack")
        with user_aws(localstack, monkeypatch, tmp_path) as aws:
            subject = sqs_kind(aws) if request.param == "sqs" else sns_kind(aws)
            yield subject, targets_for(localstack.url)


def targets_for(endpoint: str) -> Targets:
    settings = Settings.from_env({}, target_aws_endpoint_url=endpoint)
    sender = HttpSender(policy=TargetPolicy(("127.0.0.0/8",)))
    return Targets.of(
        TargetContext(sender, one_signer(WebhookSigner(SECRET)), SystemClock(), settings)
    )


def test_a_delivery_that_arrives_names_its_occurrence_and_fills_in_its_placeholders(
    kind: tuple[Kind, Targets],
) -> None:
    subject, targets = kind
    delivered = deliver(targets, subject.payload(TEMPLATED))
    assert delivered.verdict.succeeded, delivered.verdict.reason
    [arrival] = subject.arrivals(1)
    assert arrival == Arrival(
        FILLED,
        "nightly-report:2030-01-01T09:30:00.000Z",
        "nightly-report",
        "2030-01-01T09:30:00.000Z",
        "3",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "congo=t61",
    )


def test_a_body_without_placeholders_arrives_as_it_is(kind: tuple[Kind, Targets]) -> None:
    subject, targets = kind
    body = {"braces": "{ not } {{ a template", "n": [1, 2.5, None, True]}
    # Made as a stored one is: a schedule stored before placeholders existed.
    stored = type(subject.payload(body)).from_document(
        {**subject.payload(body).to_document(), "templated": False}
    )
    assert deliver(targets, stored).verdict.succeeded
    assert [arrival.body for arrival in subject.arrivals(1)] == [body]


def test_a_target_that_cannot_take_it_is_a_failed_verdict_not_an_exception(
    kind: tuple[Kind, Targets],
) -> None:
    subject, targets = kind
    delivered = deliver(targets, subject.nowhere)
    assert not delivered.verdict.succeeded
    assert delivered.verdict.reason
    assert delivered.duration_ms >= 0


def test_deliveries_are_counted_by_destination(kind: tuple[Kind, Targets]) -> None:
    subject, targets = kind
    first, second, other = subject.same
    assert targets.destination(first) == targets.destination(second)
    assert targets.destination(first) != targets.destination(other)
