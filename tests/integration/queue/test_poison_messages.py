"""Poison messages: a message on queue 1 or queue 2 that cannot be decoded is logged and
dead-lettered, and the workers go on with the good messages behind it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from shared.ports import OutgoingMessage
from tests.support.harness import running_pipeline, sqlite_settings
from tests.support.receiver import answers, running_receiver
from tests.support.schedules import body, create
from tests.support.waiting import eventually

# Queue 1 carries definitions, queue 2 occurrences: each poison is wrong in another way.
POISON_MUTATIONS = [
    "not JSON {",
    '{"v": 1, "kind": "occurrence", "tenant": "default"}',
    '{"v": 99, "kind": "definition", "tenant": "default"}',
    '{"v": 1, "kind": "definition", "tenant": "default", "schedule_id": "s-1"}',
]
POISON_OCCURRENCES = [
    "\u00ff\u00fe not JSON",
    '["v", 1]',
    '{"v": 1, "kind": "occurrence", "tenant": "default", "schedule_id": "s-1"}',
    '{"v": 1, "kind": "occurrence", "tenant": "default", "schedule_id": "s-1",'
    ' "occurrence_id": "s-1:x", "revision": 1, "scheduled_time": "2026-03-08T07:30:00"}',
]


def test_poison_on_both_queues_is_dead_lettered_and_the_next_schedule_fires(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    with (
        running_receiver(answers(200)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        queues = pipeline.backends.queues
        queues.mutations.send([OutgoingMessage(text) for text in POISON_MUTATIONS])
        queues.occurrences.send([OutgoingMessage(text) for text in POISON_OCCURRENCES])
        create(pipeline, body(f"{receiver.url}/after-poison"))
        eventually(lambda: len(receiver.calls) == 1)
        eventually(lambda: pipeline.executor.stats.poisoned == len(POISON_OCCURRENCES))
        assert pipeline.processor.stats.poisoned == len(POISON_MUTATIONS)
        assert pipeline.processor.stats.applied == 1
        assert receiver.calls[0].path == "/after-poison"
        dead = queues.dead_letters.receive(10, 1.0, 30.0)
        assert sorted(message.body for message in dead) == sorted(
            POISON_MUTATIONS + POISON_OCCURRENCES
        )
        for queue in (queues.mutations, queues.occurrences):
            depth = queue.depth()
            assert depth.visible + depth.delayed == 0  # the poison is not delivered again
        assert all(thread.is_alive() for thread in pipeline.threads)
    poisoned = [
        record for record in caplog.records if getattr(record, "event", None) == "poison_message"
    ]
    assert len(poisoned) == len(POISON_MUTATIONS) + len(POISON_OCCURRENCES)
    assert {record.getMessage().split(":")[0] for record in poisoned} == {
        "poison message on queue 1",
        "poison message on queue 2",
    }
