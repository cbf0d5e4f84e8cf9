"""Priority under a backlog (issue 27 item 4), inside one process: a poller that is behind
sends the highest priority first and, every few claims, the most overdue whatever its priority;
an executor with more due than room calls the highest priority first. (Two pollers and two
executors as processes, with a backlog of their own: ``tests/acceptance/test_priority.py``.)"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from polling_worker.worker import OLDEST_EVERY, Poller
from shared.backends import Backends, open_backends
from shared.messages import decode_occurrence
from shared.ports import ClaimRequest
from tests.integration.store.test_store_contract import TENANT
from tests.support.factories import one_time
from tests.support.harness import sqlite_settings

BATCH = 5
MINUTE = timedelta(minutes=1)


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    opened = open_backends(sqlite_settings(tmp_path))
    yield opened
    opened.close()


class RecordsClaims:
    """The store, with each claim's ``oldest_first`` recorded."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.oldest_first: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def claim_due_schedules(self, claim: ClaimRequest) -> Any:
        self.oldest_first.append(claim.oldest_first)
        return self._store.claim_due_schedules(claim)


def test_a_poller_behind_sends_the_highest_priority_first_and_ages_its_backlog(
    backends: Backends,
) -> None:
    now = datetime.now(UTC)
    store = backends.store
    # Ten priority-0 schedules an hour overdue, then thirty of priority 9 a minute overdue.
    for number in range(40):
        priority, due = (0, now - timedelta(hours=1)) if number < 10 else (9, now - MINUTE)
        due += timedelta(seconds=number)
        definition = dataclasses.replace(one_time("http://127.0.0.1:9/", due), priority=priority)
        store.apply_definition((TENANT, f"s{number:02d}", 1, definition, due, now))
    recorder = RecordsClaims(store)
    settings = sqlite_settings(Path("/unused"), claim_batch_size=BATCH)
    poller = Poller(recorder, backends.queues.occurrences, settings)  # type: ignore[arg-type]
    while poller.poll_once():
        pass
    sent = []
    while received := backends.queues.occurrences.receive(10, 0.0, 30.0):
        sent += [decode_occurrence(message.body) for message in received]
    # In claims of five: three of priority 9, then (the poller behind) the five most overdue,
    # three more of priority 9, the last five of priority 0, and one that finds nothing.
    assert OLDEST_EVERY == 4
    assert recorder.oldest_first == [False, False, False, True, False, False, False, True, False]
    by_claim = [[o.schedule_id for o in sent[at : at + BATCH]] for at in range(0, 40, BATCH)]
    assert by_claim == [
        [f"s{n:02d}" for n in range(first, first + BATCH)]
        for first in (10, 15, 20, 0, 25, 30, 35, 5)
    ]
    # A claim that finds less than a batch: the poller is no longer behind.
    assert poller.poll_once() == 0
    assert recorder.oldest_first[-1] is False
