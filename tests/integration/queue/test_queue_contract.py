"""One contract for every queue adapter: the docstrings of ``MessageQueue`` (SQS's semantics).

Short real intervals: SQS counts delays and visibility timeouts in whole seconds, so the tests
use 1-2 s and never assert sub-second precision.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from moto import mock_aws

from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite_queue import SqliteQueue
from shared.adapters.sqs_queue import SqsQueue, sqs_client
from shared.errors import Transient
from shared.ports import MessageQueue, OutgoingMessage, QueueDepth, QueueSpec, ReceivedMessage
from shared.timeutil import UTC
from tests.support.peers import SQS_URL, aws_for, sqs_endpoint_for

MAX_RECEIVES = 2
LONG = 30.0  # a visibility timeout no test waits out


@dataclass
class QueuePair:
    queue: MessageQueue
    dead_letters: MessageQueue


# SQS over the wire: LocalStack (started for the session) and, when SCHEDULER_TEST_SQS_URL is set,
# that endpoint too (then it fails rather than skips if it does not answer).
QUEUES = ["sqlite", "moto", "localstack", *(["sqs-url"] if SQS_URL else [])]


@pytest.fixture(params=QUEUES)
def queues(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[QueuePair]:
    if request.param == "sqlite":
        database = SqliteDatabase(tmp_path / "queues.db")
        pair = QueuePair(
            SqliteQueue(database, QueueSpec("work", "dead", MAX_RECEIVES)),
            SqliteQueue(database, QueueSpec("dead")),
        )
        pair.queue.create()
        pair.dead_letters.create()
        try:
            yield pair
        finally:
            pair.queue.close()
            pair.dead_letters.close()
            database.close()
        return
    region = aws_for(monkeypatch, tmp_path, request.param)
    if request.param in ("localstack", "sqs-url"):
        client = sqs_client(sqs_endpoint_for(request, request.param), region)
        suffix = uuid.uuid4().hex[:12]
        pair = QueuePair(
            SqsQueue(client, QueueSpec(f"work-{suffix}", f"dead-{suffix}", MAX_RECEIVES)),
            SqsQueue(client, QueueSpec(f"dead-{suffix}")),
        )
        pair.queue.create()
        pair.dead_letters.create()
        try:
            yield pair
        finally:
            for name in (f"work-{suffix}", f"dead-{suffix}"):
                client.delete_queue(QueueUrl=client.get_queue_url(QueueName=name)["QueueUrl"])
            client.close()
        return
    with mock_aws():
        client = sqs_client(None, "us-east-1")
        # The work queue first: its create() makes the dead-letter queue it points at.
        pair = QueuePair(
            SqsQueue(client, QueueSpec("work", "dead", MAX_RECEIVES)),
            SqsQueue(client, QueueSpec("dead")),
        )
        pair.queue.create()
        pair.dead_letters.create()
        try:
            yield pair
        finally:
            pair.queue.close()
            pair.dead_letters.close()
            client.close()


def receive_all(
    queue: MessageQueue, expected: int, visibility: float = LONG, within: float = 10.0
) -> list[ReceivedMessage]:
    """Receive until ``expected`` messages came, or ``within`` seconds passed."""
    received: list[ReceivedMessage] = []
    deadline = time.monotonic() + within
    while len(received) < expected and time.monotonic() < deadline:
        received += queue.receive(10, 1, visibility)
    return received


def test_send_receive_delete(queues: QueuePair) -> None:
    queue = queues.queue
    before = datetime.now(UTC) - timedelta(seconds=2)
    queue.send([OutgoingMessage('{"hello": "world"}')])
    [message] = receive_all(queue, 1)
    assert message.body == '{"hello": "world"}'
    assert message.receive_count == 1
    assert message.message_id
    assert message.sent_at is not None
    assert before <= message.sent_at <= datetime.now(UTC) + timedelta(seconds=2)
    assert queue.receive(10, 0, LONG) == []  # in flight: invisible to others
    queue.delete([message.receipt_handle])
    assert queue.depth() == QueueDepth(0, 0, 0)
    queue.delete([message.receipt_handle])  # a stale receipt is ignored
    queue.delete([])


def test_an_undeleted_message_comes_back_after_its_visibility_timeout(
    queues: QueuePair,
) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage("again")])
    [first] = receive_all(queue, 1, visibility=1)
    assert first.receive_count == 1
    assert queue.receive(10, 0, LONG) == []
    started = time.monotonic()
    [second] = receive_all(queue, 1, within=5)
    assert time.monotonic() - started < 5
    assert second.body == "again"
    assert second.receive_count == 2
    assert second.message_id == first.message_id
    queue.delete([second.receipt_handle])


def test_change_visibility(queues: QueuePair) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage("hold")])
    [message] = receive_all(queue, 1, visibility=LONG)
    queue.change_visibility(message.receipt_handle, 0)  # give it back now
    [again] = queue.receive(10, 1, 1)
    assert again.receive_count == 2
    queue.change_visibility(again.receipt_handle, LONG)  # keep it longer than received for
    assert queue.receive(10, 2, LONG) == []  # its first 1 s timeout passed meanwhile
    queue.delete([again.receipt_handle])
    queue.change_visibility(again.receipt_handle, 5)  # stale: ignored


def test_change_visibilities_in_batches(queues: QueuePair) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage(f"hold {number}") for number in range(13)])
    received = sorted(receive_all(queue, 13, visibility=2), key=lambda message: message.body)
    assert len(received) == 13
    *kept, back, gone = received
    queue.delete([gone.receipt_handle])
    queue.change_visibilities(
        [
            *((message.receipt_handle, LONG) for message in kept),  # more than one SQS batch
            (back.receipt_handle, 0),  # given back now
            (gone.receipt_handle, 5),  # stale: ignored
        ]
    )
    [again] = receive_all(queue, 1, within=5)
    assert (again.body, again.receive_count) == (back.body, 2)
    assert queue.receive(10, 3, LONG) == []  # the others' first 2 s timeout passed meanwhile
    queue.change_visibilities([])
    queue.delete([again.receipt_handle, *(message.receipt_handle for message in kept)])


def test_a_delayed_message_is_invisible_until_its_delay(queues: QueuePair) -> None:
    queue = queues.queue
    started = time.monotonic()
    queue.send([OutgoingMessage("later", delay_seconds=2)])
    assert queue.receive(10, 0, LONG) == []
    assert queue.depth().delayed == 1
    [message] = receive_all(queue, 1, within=10)
    assert time.monotonic() - started >= 1.5
    assert message.body == "later"
    queue.delete([message.receipt_handle])


def test_a_long_poll_returns_early_when_a_message_arrives(queues: QueuePair) -> None:
    queue = queues.queue
    started = time.monotonic()
    assert queue.receive(10, 1, LONG) == []  # an empty long poll waits
    assert time.monotonic() - started >= 0.9
    sender = threading.Timer(0.5, queue.send, args=([OutgoingMessage("wake up")],))
    started = time.monotonic()
    sender.start()
    try:
        received = queue.receive(10, 10, LONG)
    finally:
        sender.join()
    elapsed = time.monotonic() - started
    assert [message.body for message in received] == ["wake up"]
    assert elapsed < 5, f"the long poll should have ended when the message came ({elapsed:.1f} s)"


def test_a_message_received_too_often_goes_to_the_dead_letter_queue(queues: QueuePair) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage("poison")])
    for delivery in range(1, MAX_RECEIVES + 1):
        [message] = receive_all(queue, 1, visibility=0)
        assert message.receive_count == delivery
    assert queue.receive(10, 1, 0) == []  # the next delivery goes to the dead letters
    [dead] = receive_all(queues.dead_letters, 1)
    assert dead.body == "poison"
    queues.dead_letters.delete([dead.receipt_handle])
    assert queue.depth() == QueueDepth(0, 0, 0)
    assert queues.dead_letters.depth() == QueueDepth(0, 0, 0)


def test_a_batch_of_25(queues: QueuePair) -> None:
    queue = queues.queue
    bodies = [f"message {number}" for number in range(25)]
    queue.send([OutgoingMessage(body) for body in bodies])
    assert queue.depth().visible == 25
    received = receive_all(queue, 25)
    assert sorted(message.body for message in received) == sorted(bodies)
    assert len({message.message_id for message in received}) == 25
    assert queue.depth() == QueueDepth(visible=0, in_flight=25, delayed=0)
    queue.delete([message.receipt_handle for message in received])
    assert queue.depth() == QueueDepth(0, 0, 0)


def test_receive_takes_at_most_max_messages(queues: QueuePair) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage(str(number)) for number in range(5)])
    assert 1 <= len(queue.receive(3, 1, LONG)) <= 3


def test_depth_counts_visible_in_flight_and_delayed(queues: QueuePair) -> None:
    queue = queues.queue
    queue.send([OutgoingMessage("taken"), OutgoingMessage("waiting")])
    queue.send([OutgoingMessage("delayed", delay_seconds=60)])
    [taken] = queue.receive(1, 1, LONG)
    assert queue.depth() == QueueDepth(visible=1, in_flight=1, delayed=1)
    queue.delete([taken.receipt_handle])
    assert queue.depth() == QueueDepth(visible=1, in_flight=0, delayed=1)


def test_create_is_idempotent(queues: QueuePair) -> None:
    queues.queue.create()
    queues.dead_letters.create()
    queues.queue.create()
    queues.queue.send([OutgoingMessage("still there")])
    assert [message.body for message in receive_all(queues.queue, 1)] == ["still there"]


def test_an_unreachable_sqs_endpoint_is_transient(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    client = sqs_client("http://127.0.0.1:9", "us-east-1")
    try:
        queue = SqsQueue(client, QueueSpec("work"))
        with pytest.raises(Transient):
            queue.send([OutgoingMessage("lost?")])
        with pytest.raises(Transient):
            queue.create()
    finally:
        client.close()
