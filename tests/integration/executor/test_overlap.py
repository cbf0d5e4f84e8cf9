"""The overlap policy in the executors (issue 27 item 1): a slow receiver, two executors on
one SQLite store; ``skip`` and ``buffer_one`` never let two calls of a schedule overlap, by the
receiver's clock; ``allow`` overlaps and never touches the marker; a hold whose executor died
frees the schedule when it ends."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from execution_worker.beginning import OVERLAP_RECHECK, Plan
from execution_worker.worker import Executor
from shared.adapters.mongo.store import MongoStore
from shared.backends import Backends, open_backends
from shared.errors import Transient
from shared.messages import encode_occurrence
from shared.model import Occurrence
from shared.ports import OutgoingMessage, OverlapClaim, OverlapTurn
from shared.timeutil import parse_iso
from tests.support.executor_steps import receive_once, take_due
from tests.support.harness import (
    API,
    TEST_SECRETS,
    Pipeline,
    pipeline_parts,
    running_pipeline,
    sqlite_settings,
)
from tests.support.peers import MONGO_URL, mongo_url_for
from tests.support.receiver import Call, Receiver, answers, running_receiver
from tests.support.schedules import create

# Each call takes this long at the receiver; the schedule fires every second.
CALL_SECONDS = 2.2
# Bounds the wait for the calls a test needs (three take about 7 s).
CALLS_WITHIN_SECONDS = 60.0


def slow(call: Call) -> tuple[int, dict[str, str]]:
    time.sleep(CALL_SECONDS)
    return 200, {}


def body(url: str, overlap: str | None) -> dict[str, Any]:
    made: dict[str, Any] = {
        "name": "slow job",
        "schedule": {"interval": {"number": 1, "unit": "second"}},
        "payload": {"method": "POST", "url": f"{url}/job", "timeout_seconds": 5},
    }
    return made if overlap is None else {**made, "overlap": overlap}


@contextmanager
def two_executors(
    tmp_path: Path, mongo_url: str | None = None
) -> Iterator[tuple[Receiver, Pipeline]]:
    """A pipeline and a second executor on one SQLite file; with ``mongo_url``, its store on
    that MongoDB (the queues on SQLite still)."""
    settings = sqlite_settings(tmp_path, execution_lease_margin_seconds=2.0)
    backends = open_backends(settings)
    if mongo_url is not None:
        database = f"scheduler_test_{uuid.uuid4().hex[:12]}"
        store = MongoStore.from_url(mongo_url, database, secrets=TEST_SECRETS)
        store.ensure_indexes()
        backends = Backends(store, backends.queues, TEST_SECRETS, backends.resources)
    try:
        with running_receiver(slow) as receiver, running_pipeline(settings, backends) as pipeline:
            pipeline.run_worker(pipeline.another("executor"))
            yield receiver, pipeline
    finally:
        if isinstance(backends.store, MongoStore):
            backends.store.client.drop_database(database)
        backends.close()


@pytest.fixture(params=["sqlite", "nx-27017", *(["mongo-url"] if MONGO_URL else [])])
def mongo_url(request: pytest.FixtureRequest) -> str | None:
    """The store of the two executors: SQLite, or MongoDB over the wire."""
    return None if request.param == "sqlite" else mongo_url_for(request, request.param)


def run_until(pipeline: Pipeline, receiver: Receiver, overlap: str | None, calls: int) -> str:
    """Create the schedule, let it fire until the receiver had ``calls`` calls (a fixed time
    once, in which a loaded machine made fewer), then pause it."""
    created = pipeline.client.post(f"{API}/schedule", json=body(receiver.url, overlap))
    assert created.status_code == 202, created.get_json()
    schedule_id: str = created.get_json()["id"]
    assert len(receiver.wait_for(calls, timeout=CALLS_WITHIN_SECONDS)) >= calls, receiver.calls
    assert pipeline.client.post(f"{API}/schedule/{schedule_id}/pause").status_code == 202
    # The calls in flight end.
    time.sleep(CALL_SECONDS + 0.5)
    return schedule_id


def spans(receiver: Receiver) -> list[tuple[float, float]]:
    """Each call's time at the receiver, from its arrival to its answer, in order."""
    return sorted((call.received_at, call.received_at + CALL_SECONDS) for call in receiver.calls)


def overlapping(found: list[tuple[float, float]]) -> int:
    return sum(1 for (_, end), (start, _) in itertools.pairwise(found) if start < end)


def history(pipeline: Pipeline, schedule_id: str, status: str) -> list[Any]:
    page = pipeline.client.get(
        f"{API}/schedule/{schedule_id}/executions?limit=200&status={status}"
    ).get_json()
    items: list[Any] = page["items"]
    return items


def test_allow_lets_calls_overlap_and_never_writes_the_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[Any] = []

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def write(*args: Any) -> Any:
            written.append(args)
            return method(*args)

        return write

    with two_executors(tmp_path) as (receiver, pipeline):
        store = pipeline.backends.store
        monkeypatch.setattr(store, "take_overlaps", counted(store.take_overlaps))
        monkeypatch.setattr(store, "release_overlaps", counted(store.release_overlaps))
        run_until(pipeline, receiver, None, 3)
    assert len(receiver.calls) >= 3
    assert overlapping(spans(receiver)) >= 2
    assert written == []


def test_skip_never_overlaps_and_records_each_skipped_occurrence(
    tmp_path: Path, mongo_url: str | None
) -> None:
    with two_executors(tmp_path, mongo_url) as (receiver, pipeline):
        schedule_id = run_until(pipeline, receiver, "skip", 3)
        skipped = history(pipeline, schedule_id, "skipped")
        succeeded = history(pipeline, schedule_id, "succeeded")
    found = spans(receiver)
    assert len(found) >= 2
    assert overlapping(found) == 0
    assert len(succeeded) == len(found)
    overlap_skips = [item for item in skipped if item["error"].startswith("overlap:")]
    # About two of every three seconds' occurrences were due while a call ran.
    assert len(overlap_skips) >= 3
    assert all(item["attempts"] == 0 and not item["superseded"] for item in overlap_skips)
    assert all("still running or waiting to retry" in item["error"] for item in overlap_skips)
    # Each skipped one was due while a call was in progress (by the receiver's clock, give or
    # take the call's trip).
    for item in overlap_skips:
        due = _epoch(item["scheduled_time"])
        assert any(start - 0.5 <= due <= end + 0.5 for start, end in found), item


def test_buffer_one_runs_the_waiting_one_when_the_earlier_ends(
    tmp_path: Path, mongo_url: str | None
) -> None:
    with two_executors(tmp_path, mongo_url) as (receiver, pipeline):
        schedule_id = run_until(pipeline, receiver, "buffer_one", 3)
        skipped = history(pipeline, schedule_id, "skipped")
    found = spans(receiver)
    assert len(found) >= 3
    assert overlapping(found) == 0
    # Back to back: the waiting one starts within a re-check of the earlier one's end.
    gaps = [start - end for (_, end), (start, _) in itertools.pairwise(found)]
    assert max(gaps) <= OVERLAP_RECHECK.total_seconds() + 1.0, gaps
    reasons = {item["error"] for item in skipped if item["error"].startswith("overlap:")}
    assert reasons and all("another already waits" in reason for reason in reasons)


def test_a_run_whose_executor_died_holds_the_schedule_until_its_lease_ends(
    tmp_path: Path,
) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        schedule_id = create(pipeline, body(receiver.url, "skip"))
        stored = pipeline.wait_until_stored(schedule_id)
        # An executor began an occurrence, took the marker and died: both end in 3 s. Its
        # message comes back; the schedule's own occurrences meanwhile are skipped.
        now = datetime.now(UTC)
        dead = Occurrence("default", schedule_id, stored["revision"], now - timedelta(seconds=1))
        lease_end = now + timedelta(seconds=3)
        store = pipeline.backends.store
        assert store.begin_attempt(dead, "executor:dead", now, lease_end) is not None
        claim = OverlapClaim("default", schedule_id, dead.occurrence_id, lease_end)
        assert store.take_overlaps([claim], now) == [OverlapTurn.HELD]
        pipeline.backends.queues.occurrences.send([OutgoingMessage(encode_occurrence(dead))])
        calls = receiver.wait_for(3, timeout=10)
        skipped = history(pipeline, schedule_id, "skipped")
    assert len(calls) >= 3
    # Nothing before the lease ended; then the dead run first, taken over, then the others.
    assert min(call.received_at for call in calls) >= lease_end.timestamp() - 0.1
    assert sorted(calls, key=_arrival)[0].headers["idempotency-key"] == dead.occurrence_id
    assert len({call.headers["idempotency-key"] for call in calls}) == len(calls)
    record = store.get_execution("default", dead.occurrence_id)
    assert record is not None and record.attempts == 2
    assert any(f"{dead.occurrence_id} is still running" in item["error"] for item in skipped)


def test_a_store_that_fails_the_claims_leaves_each_item_due_again_once(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path)
    with running_receiver() as receiver, pipeline_parts(settings) as pipeline:
        schedule_id = create(pipeline, body(receiver.url, "skip"))
        stored = pipeline.wait_until_stored(schedule_id)
        executor = pipeline.another("executor")
        assert isinstance(executor, Executor)
        now = datetime.now(UTC)
        occurrences = [
            Occurrence("default", schedule_id, stored["revision"], now - timedelta(seconds=n))
            for n in (1, 2)
        ]
        pipeline.backends.queues.occurrences.send(
            [OutgoingMessage(encode_occurrence(one)) for one in occurrences]
        )
        assert receive_once(executor, 1.0) == 2
        items = take_due(executor, 1.0)
        store = pipeline.backends.store
        claims = store.take_overlaps

        def down(*_: Any) -> Any:
            raise Transient("store down")

        store.take_overlaps = down  # type: ignore[method-assign]
        failed = executor.checking.check_and_begin(items)
        store.take_overlaps = claims  # type: ignore[method-assign]
        assert failed.unavailable is not None and failed.calls == []
        assert sorted(id(item) for item in failed.not_begun) == sorted(id(item) for item in items)
        again = executor.checking.check_and_begin(failed.not_begun)
    assert [call.execution.occurrence_id for call in again.calls] == [occurrences[1].occurrence_id]
    assert [(o.occurrence_id, reason[:8]) for o, reason in again.skipped] == [
        (occurrences[0].occurrence_id, "overlap:")
    ]


def test_an_occurrence_waiting_to_retry_keeps_the_schedule_under_skip(tmp_path: Path) -> None:
    # Every occurrence fails once and is retried 2 s later: with skip, none other starts
    # between its two attempts.
    respond = answers((503, {"Retry-After": "2"}), 200)
    settings = sqlite_settings(tmp_path, execution_lease_margin_seconds=2.0)
    with running_receiver(respond) as receiver, running_pipeline(settings) as pipeline:
        pipeline.run_worker(pipeline.another("executor"))
        made = {**body(receiver.url, "skip"), "retry": {"max_attempts": 3}}
        schedule_id = pipeline.client.post(f"{API}/schedule", json=made).get_json()["id"]
        receiver.wait_for(5, timeout=12)
        assert pipeline.client.post(f"{API}/schedule/{schedule_id}/pause").status_code == 202
        time.sleep(2.5)
        skipped = history(pipeline, schedule_id, "skipped")
    keys = [call.headers["idempotency-key"] for call in sorted(receiver.calls, key=_arrival)]
    assert len(keys) >= 5
    # In arrival order, each occurrence's attempts come together: first, then its retry.
    runs = [key for key, _ in itertools.groupby(keys)]
    assert len(runs) == len(set(keys)), keys
    assert all(keys.count(key) == 2 for key in runs[:-1]), keys
    assert any("still running or waiting to retry" in item["error"] for item in skipped)


def _arrival(call: Call) -> float:
    return call.received_at


def _epoch(text: str) -> float:
    return parse_iso(text).timestamp()


@contextmanager
def skipped_for_overlap(
    tmp_path: Path, overlap: str
) -> Iterator[tuple[Pipeline, Executor, Occurrence, Plan, datetime]]:
    """A pipeline whose executor took one occurrence's message and skipped it for overlap:
    another occurrence held the schedule (and, for buffer_one, another waited) for 1 s; with
    that plan and the end of the hold."""
    with pipeline_parts(sqlite_settings(tmp_path)) as pipeline:
        schedule_id = create(pipeline, body("http://127.0.0.1:9", overlap))
        stored = pipeline.wait_until_stored(schedule_id)
        executor = pipeline.another("executor")
        assert isinstance(executor, Executor)
        store = pipeline.backends.store
        now = datetime.now(UTC)
        earlier, waiting, skipped = (
            Occurrence("default", schedule_id, stored["revision"], now - timedelta(seconds=n))
            for n in (3, 2, 1)
        )
        until = now + timedelta(seconds=1)
        held = store.take_overlaps(
            [OverlapClaim("default", schedule_id, earlier.occurrence_id, until)], now
        )
        assert held == [OverlapTurn.HELD]
        wait = OverlapClaim("default", schedule_id, waiting.occurrence_id, until, buffer=True)
        assert store.take_overlaps([wait], now) == [OverlapTurn.WAITING]
        pipeline.backends.queues.occurrences.send([OutgoingMessage(encode_occurrence(skipped))])
        assert receive_once(executor, 1.0) == 1
        first = executor.checking.check_and_begin(take_due(executor, 1.0))
        assert [(o.occurrence_id, reason[:8]) for o, reason in first.skipped] == [
            (skipped.occurrence_id, "overlap:")
        ]
        yield pipeline, executor, skipped, first, until


def stays_skipped(pipeline: Pipeline, executor: Executor, skipped: Occurrence) -> None:
    """The occurrence's message taken again is not begun (no call): a duplicate, deleted, its
    record skipped with no attempt."""
    assert receive_once(executor, 1.0) == 1
    again = executor.checking.check_and_begin(take_due(executor, 1.0))
    record = pipeline.backends.store.get_execution("default", skipped.occurrence_id)
    assert again.calls == []
    assert again.duplicates == 1 and len(again.to_delete) == 1
    assert record is not None and (record.status.value, record.attempts) == ("skipped", 0)


@pytest.mark.parametrize("overlap", ["skip", "buffer_one"])
def test_a_skipped_occurrence_delivered_again_is_not_run_once_the_schedule_is_free(
    tmp_path: Path, overlap: str
) -> None:
    # An executor recorded an occurrence skipped for overlap and died before deleting its
    # message (kill -9): the message comes back once the schedule is free. The occurrence was
    # skipped: it stays so, and is not called late, out of its schedule's order.
    with skipped_for_overlap(tmp_path, overlap) as (pipeline, executor, skipped, first, until):
        time.sleep((until - datetime.now(UTC)).total_seconds() + 0.2)
        pipeline.backends.queues.occurrences.change_visibility(first.to_delete[0], 0)
        stays_skipped(pipeline, executor, skipped)


@pytest.mark.parametrize("overlap", ["skip", "buffer_one"])
def test_a_second_copy_of_a_skipped_occurrence_is_not_run_once_the_schedule_is_free(
    tmp_path: Path, overlap: str
) -> None:
    # The same occurrence sent twice (a poller that resent it after a crash): the first copy was
    # skipped for overlap and deleted; the second, a first delivery of its own, comes once the
    # schedule is free. The store refuses to begin the skip: no call.
    with skipped_for_overlap(tmp_path, overlap) as (pipeline, executor, skipped, first, until):
        pipeline.backends.queues.occurrences.delete(first.to_delete)
        time.sleep((until - datetime.now(UTC)).total_seconds() + 0.2)
        pipeline.backends.queues.occurrences.send([OutgoingMessage(encode_occurrence(skipped))])
        stays_skipped(pipeline, executor, skipped)
