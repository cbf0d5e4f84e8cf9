"""Retry delays longer than a queue message may stay in flight: the message is re-sent carrying
the time of the next attempt, never comes back early, and holds no in-flight slot meanwhile."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from execution_worker.settler import defer
from execution_worker.worker import Executor
from shared.adapters.http_sender import HttpSender
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.messages import decode_occurrence, encode_occurrence
from shared.model import Occurrence
from shared.ports import MessageQueue, OutgoingMessage
from shared.timeutil import parse_iso
from tests.integration.queue.test_queue_contract import QueuePair, queues  # noqa: F401
from tests.support.executor_steps import receive_once
from tests.support.harness import TEST_SECRETS, running_pipeline, sqlite_settings
from tests.support.receiver import answers, running_receiver
from tests.support.schedules import QUICK_RETRY, body, create, final_status, history
from tests.support.waiting import eventually


def executor_on(pair: QueuePair, tmp_path: Path) -> Executor:
    store = SqliteStore(SqliteDatabase(tmp_path / "store.db"), secrets=TEST_SECRETS)
    store.ensure_indexes()
    settings = sqlite_settings(tmp_path, receive_wait_seconds=1.0)
    return Executor(store, pair.queue, pair.dead_letters, HttpSender(), settings)


def occurrence(not_before: datetime | None = None) -> Occurrence:
    return Occurrence("default", "s-1", 1, datetime.now(UTC), not_before=not_before)


def test_a_retry_due_in_hours_is_sent_on_not_held(
    queues: QueuePair,  # noqa: F811
    tmp_path: Path,
) -> None:
    executor = executor_on(queues, tmp_path)
    not_before = datetime.now(UTC) + timedelta(hours=2)
    queues.queue.send([OutgoingMessage(encode_occurrence(occurrence(not_before)))])
    held = 0
    deadline = time.monotonic() + 10
    while executor.stats.received == 0 and time.monotonic() < deadline:
        held += receive_once(executor, wait_seconds=1.0)
        if queues.queue.depth().delayed:
            break
    assert held == 0 and len(executor.held) == 0
    depth = queues.queue.depth()
    assert (depth.visible, depth.in_flight, depth.delayed) == (0, 0, 1)
    # It stays away (sent on with the longest delay a queue allows, 15 minutes).
    assert queues.queue.receive(10, 1.0, 30.0) == []


def test_a_deferred_retry_arrives_before_its_time_and_is_held_until_then(
    queues: QueuePair,  # noqa: F811
    tmp_path: Path,
) -> None:
    executor = executor_on(queues, tmp_path)
    queues.queue.send([OutgoingMessage(encode_occurrence(occurrence()))])
    [message] = queues.queue.receive(1, 5.0, 30.0)
    now = datetime.now(UTC)
    not_before = now + timedelta(seconds=3)
    defer(queues.queue, decode_occurrence(message.body), message.receipt_handle, not_before, now)
    assert queues.queue.receive(10, 0.5, 30.0) == []  # neither the old delivery nor the new
    deadline = time.monotonic() + 10
    while not len(executor.held) and time.monotonic() < deadline:
        receive_once(executor, wait_seconds=1.0)
    [item] = executor.held.pop_due(not_before)
    assert item.due == not_before.replace(microsecond=not_before.microsecond // 1000 * 1000)
    assert item.occurrence.not_before == item.due
    assert datetime.now(UTC) < not_before  # it came before its time, to be held


def test_a_retry_after_of_an_hour_leaves_no_message_in_flight(tmp_path: Path) -> None:
    an_hour = (503, {"Retry-After": "3600"})
    with (
        running_receiver(answers(an_hour)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        schedule_id = create(pipeline, body(f"{receiver.url}/later", retry=QUICK_RETRY))
        eventually(lambda: final_status(pipeline, schedule_id) == "retrying")
        queue = pipeline.backends.queues.occurrences
        # The settler sends the delayed copy, then deletes the delivery in hand: between the
        # two, both are there. Once deleted, only the delayed copy is left, and stays.
        eventually(lambda: _visible_in_flight_delayed(queue) == (0, 0, 1))
        assert _visible_in_flight_delayed(queue) == (0, 0, 1)
        [record] = history(pipeline, schedule_id)
        assert record["attempts"] == 1
        next_attempt = parse_iso(record["next_attempt_at"])
        assert next_attempt - datetime.now(UTC) > timedelta(minutes=59)
    assert len(receiver.calls) == 1


def _visible_in_flight_delayed(queue: MessageQueue) -> tuple[int, int, int]:
    depth = queue.depth()
    return depth.visible, depth.in_flight, depth.delayed
