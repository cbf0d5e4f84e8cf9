"""SQS as AWS runs it: the queues the service creates, their redrive policy, their size limit.

On moto (in-process) and LocalStack (over the wire), and on ``SCHEDULER_TEST_SQS_URL`` when set.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

from scheduler_service.app import create_app
from shared.adapters.sqs_queue import SqsQueue, sqs_client
from shared.backends import open_backends
from shared.ports import MessageTooLarge, OutgoingMessage, QueueSpec
from shared.settings import Settings
from tests.integration.queue.test_queue_contract import receive_all
from tests.support.harness import API
from tests.support.peers import SQS_URL, aws_for, sqs_endpoint_for

VARIANTS = ["moto", "localstack", *(["sqs-url"] if SQS_URL else [])]


@dataclass
class Sqs:
    client: Any
    work: str
    dead: str

    def queue(self, max_receives: int = 5) -> SqsQueue:
        return SqsQueue(self.client, QueueSpec(self.work, self.dead, max_receives))

    def attributes(self, name: str) -> dict[str, str]:
        url = self.client.get_queue_url(QueueName=name)["QueueUrl"]
        answer = self.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
        return dict(answer["Attributes"])


@pytest.fixture(params=VARIANTS)
def sqs(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Sqs]:
    region = aws_for(monkeypatch, tmp_path, request.param)
    suffix = uuid.uuid4().hex[:12]
    if request.param == "moto":
        with mock_aws():
            client = sqs_client(None, "us-east-1")
            yield Sqs(client, f"work-{suffix}", f"dead-{suffix}")
            client.close()
        return
    client = sqs_client(sqs_endpoint_for(request, request.param), region)
    try:
        yield Sqs(client, f"work-{suffix}", f"dead-{suffix}")
    finally:
        for name in (f"work-{suffix}", f"dead-{suffix}"):
            try:
                url = client.get_queue_url(QueueName=name)["QueueUrl"]
            except client.exceptions.QueueDoesNotExist:
                continue
            client.delete_queue(QueueUrl=url)
        client.close()


def test_created_queues_keep_messages_14_days_take_1_mib_and_redrive(sqs: Sqs) -> None:
    sqs.queue(max_receives=7).create()
    for name in (sqs.work, sqs.dead):
        attributes = sqs.attributes(name)
        assert attributes["MessageRetentionPeriod"] == str(14 * 24 * 3600)
        assert attributes["MaximumMessageSize"] == str(1024 * 1024)
    policy = json.loads(sqs.attributes(sqs.work)["RedrivePolicy"])
    assert policy["deadLetterTargetArn"] == sqs.attributes(sqs.dead)["QueueArn"]
    assert int(policy["maxReceiveCount"]) == 7


def test_a_start_does_not_overwrite_a_redrive_policy_an_operator_changed(sqs: Sqs) -> None:
    sqs.queue(max_receives=7).create()
    url = sqs.client.get_queue_url(QueueName=sqs.work)["QueueUrl"]
    arn = sqs.attributes(sqs.dead)["QueueArn"]
    changed = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 50})
    sqs.client.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": changed})
    sqs.queue(max_receives=7).create()  # the next start
    assert int(json.loads(sqs.attributes(sqs.work)["RedrivePolicy"])["maxReceiveCount"]) == 50


def test_a_queue_made_without_a_redrive_policy_gets_one(sqs: Sqs) -> None:
    sqs.client.create_queue(QueueName=sqs.work)
    sqs.queue(max_receives=3).create()
    assert int(json.loads(sqs.attributes(sqs.work)["RedrivePolicy"])["maxReceiveCount"]) == 3


def test_a_message_over_the_queues_limit_is_refused_and_nothing_of_its_batch_is_sent(
    sqs: Sqs,
) -> None:
    sqs.client.create_queue(QueueName=sqs.work, Attributes={"MaximumMessageSize": "1024"})
    queue = sqs.queue()
    queue.create()
    with pytest.raises(MessageTooLarge) as refused:
        queue.send([OutgoingMessage("small"), OutgoingMessage("x" * 1025)])
    assert (refused.value.size, refused.value.limit) == (1025, 1024)
    assert queue.receive(10, 1, 30) == []
    # Messages that fit one by one but not together go in several batches.
    queue.send([OutgoingMessage(str(n) * 600) for n in range(4)])
    assert sorted(m.body[0] for m in receive_all(queue, 4)) == ["0", "1", "2", "3"]


def test_the_api_answers_413_naming_the_body_when_the_queue_would_refuse_the_schedule(
    sqs: Sqs, tmp_path: Path
) -> None:
    # A queue an operator made with a smaller limit than the API's body limit.
    sqs.client.create_queue(QueueName=sqs.work, Attributes={"MaximumMessageSize": "2048"})
    store_url = f"sqlite:///{tmp_path.resolve() / 'scheduler.db'}"
    endpoint = sqs.client.meta.endpoint_url
    queue_url = "sqs://?region=us-east-1" if "amazonaws" in endpoint else f"sqs+{endpoint}"
    settings = Settings.from_env(
        {},
        store_url=store_url,
        queue_url=queue_url,
        mutations_queue=sqs.work,
        occurrences_queue=f"{sqs.work}-occurrences",
        dead_letter_queue=sqs.dead,
        api_auth="none",
    )
    backends = open_backends(settings)
    try:
        client = create_app(settings, backends).test_client()
        body = {
            "schedule": {"cron": "@daily"},
            "payload": {"method": "POST", "url": "https://example.com/", "body": "x" * 4000},
        }
        answer = client.post(f"{API}/schedule", json=body)
        assert answer.status_code == 413
        problem = answer.get_json()
        assert problem["errors"][0]["field"] == "body"
        assert "2048" in problem["errors"][0]["message"]
    finally:
        backends.close()
        sqs.client.delete_queue(
            QueueUrl=sqs.client.get_queue_url(QueueName=f"{sqs.work}-occurrences")["QueueUrl"]
        )
