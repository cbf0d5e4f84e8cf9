"""A store that stops answering for a while: the poller, the processor and the executor wait it
out with a bounded backoff and go on the moment it answers, leaving nothing leased or invisible
until a lease or a visibility timeout ends. (The whole pipeline against MongoDB cut off on the
wire, and SQLite locked: ``tests/acceptance/test_store_cut.py``.)"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock_ng
import pytest
from pymongo.errors import AutoReconnect

from polling_worker.worker import Poller
from processor_worker.worker import Processor
from scheduler_cli.components import build_executor
from shared.adapters.mongo.store import MongoStore
from shared.backends import Backends, open_backends
from shared.errors import Transient
from shared.lifecycle import Shutdown
from shared.messages import DefinitionMutation, decode_occurrence, encode_mutation
from shared.model import occurrence_id
from shared.ports import Advance, ClaimRequest, OutgoingMessage
from shared.settings import Settings
from shared.timeutil import utc_ms
from tests.integration.store.test_store_contract import TENANT, definition
from tests.support.factories import one_time
from tests.support.harness import TEST_SECRETS, sqlite_settings
from tests.support.peers import mongo_url_for
from tests.support.receiver import running_receiver


class LosesTheAnswer:
    """A store whose named method is applied and then, the first time, fails with
    ``Transient``: a write whose answer a reset connection lost."""

    def __init__(self, store: Any, method: str) -> None:
        self._store = store
        self._method = method
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name != self._method:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            result = attribute(*args, **kwargs)
            if self.calls == 1:
                raise Transient(f"{name}: connection reset, the answer lost")
            return result

        return call


class Outage:
    """A store whose named methods fail with ``Transient`` while ``down`` (or ``failures``
    more times), the rest passing through."""

    def __init__(self, store: Any, methods: set[str], failures: int = 0) -> None:
        self._store = store
        self._methods = methods
        self.failures = failures
        self.down = threading.Event()
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._store, name)
        if name not in self._methods:
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            if self.down.is_set() or self.failures > 0:
                self.failures -= 1
                raise Transient(f"{name}: store unreachable")
            return attribute(*args, **kwargs)

        return call


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    opened = open_backends(sqlite_settings(tmp_path))
    yield opened
    opened.close()


def test_an_advance_that_fails_is_tried_again_while_the_lease_holds(backends: Backends) -> None:
    now = datetime.now(UTC)
    store = backends.store
    for n in range(3):
        store.apply_definition((TENANT, f"s{n}", 1, one_time("http://127.0.0.1:9/", now), now, now))
    outage = Outage(store, {"advance_schedules"}, failures=3)
    settings = sqlite_settings(Path("/unused"))
    poller = Poller(outage, backends.queues.occurrences, settings)  # type: ignore[arg-type]
    assert poller.poll_once() == 3
    assert outage.calls == ["advance_schedules"] * 4
    # Advanced, lease released: completed, with each occurrence sent once.
    for n in range(3):
        schedule = store.get_schedule(TENANT, f"s{n}")
        assert schedule is not None and schedule.status.value == "completed"
        assert schedule.lease_owner is None
    sent = backends.queues.occurrences.receive(10, 0.0, 30.0)
    assert sorted(decode_occurrence(m.body).schedule_id for m in sent) == ["s0", "s1", "s2"]


def test_the_poller_claims_the_moment_the_store_answers_again(backends: Backends) -> None:
    store = backends.store
    outage = Outage(store, {"claim_due_schedules"})
    settings = sqlite_settings(Path("/unused"), poll_interval_seconds=5.0)
    poller = Poller(outage, backends.queues.occurrences, settings)  # type: ignore[arg-type]
    outage.down.set()
    shutdown = Shutdown()
    thread = threading.Thread(target=poller.run, args=(shutdown,), daemon=True)
    thread.start()
    try:
        now = datetime.now(UTC)
        store.apply_definition((TENANT, "due", 1, one_time("http://127.0.0.1:9/", now), now, now))
        time.sleep(1.5)  # failing meanwhile: a doubling pause, never longer than a second
        assert 4 <= len(outage.calls) <= 8, outage.calls
        outage.down.clear()
        back = time.monotonic()
        while not backends.queues.occurrences.depth().visible and time.monotonic() < back + 5:
            time.sleep(0.01)
        # Within the longest pause, not the 5 s poll interval.
        assert time.monotonic() - back < 1.5
    finally:
        shutdown.request()
        thread.join(10)
    assert not poller.backoff.failing


def test_the_processor_writes_a_batch_again_while_its_messages_stay_invisible(
    backends: Backends,
) -> None:
    store = backends.store
    now = datetime.now(UTC)
    mutation = DefinitionMutation(TENANT, "created", 1, now, definition())
    backends.queues.mutations.send([OutgoingMessage(encode_mutation(mutation, backends.secrets))])
    outage = Outage(store, {"apply_definitions"}, failures=2)
    processor = Processor(
        outage,  # type: ignore[arg-type]
        backends.queues.mutations,
        backends.queues.dead_letters,
        backends.secrets,
    )
    assert processor.process_batch() == 1
    assert outage.calls == ["apply_definitions"] * 3
    assert store.get_schedule(TENANT, "created") is not None
    depth = backends.queues.mutations.depth()
    assert (depth.visible, depth.in_flight) == (0, 0)  # deleted, not left to come back


# -- MongoDB: a claim cut off between its update and its read -------------------------------


class LosesTheRead:
    """``schedules`` whose first read by claim token fails as a reset connection would, after
    the update it follows was applied."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection
        self.lost = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)

    def find(self, selector: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if "claim_token" in selector and not self.lost:
            self.lost += 1
            raise AutoReconnect("127.0.0.1:27017: [Errno 104] Connection reset by peer")
        return self._collection.find(selector, *args, **kwargs)


@pytest.fixture(params=["mongomock", "nx-27017"])
def mongo(request: pytest.FixtureRequest) -> Iterator[MongoStore]:
    if request.param == "mongomock":
        client: Any = mongomock_ng.MongoClient(tz_aware=True)
        store = MongoStore(client, "scheduler_test", secrets=TEST_SECRETS)
        store.ensure_indexes()
        yield store
        return
    database = f"scheduler_test_outage_{time.monotonic_ns()}"
    store = MongoStore.from_url(mongo_url_for(request, "nx-27017"), database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    try:
        yield store
    finally:
        store.client.drop_database(database)
        store.close()


def test_what_a_claim_leased_but_never_read_back_is_taken_by_the_owners_next_claim(
    mongo: MongoStore,
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    for n in range(3):
        mongo.apply_definition((TENANT, f"s{n}", 1, definition(), now - timedelta(seconds=n), now))
    lease = now + timedelta(seconds=30)
    mongo.schedules = LosesTheRead(mongo.schedules)  # type: ignore[assignment]
    with pytest.raises(Transient):
        mongo.claim_due_schedules(ClaimRequest(now, now, 10, "poller:a", lease))
    # Leased to poller:a, which never learned it: another poller cannot take them…
    assert mongo.claim_due_schedules(ClaimRequest(now, now, 10, "poller:b", lease)) == []
    # …and poller:a's next claim does, at once, not when the lease ends.
    later = now + timedelta(seconds=1)
    claimed = mongo.claim_due_schedules(
        ClaimRequest(later, later, 10, "poller:a", later + timedelta(seconds=30))
    )
    assert [schedule.schedule_id for schedule in claimed] == ["s2", "s1", "s0"]
    advanced = mongo.advance_schedules([Advance(s, None, 1) for s in claimed], "poller:a", later)
    assert advanced == [True, True, True]
    assert (
        mongo.claim_due_schedules(
            ClaimRequest(later, later, 10, "poller:a", later + timedelta(seconds=30))
        )
        == []
    )


# -- the executor: occurrences held while the store is away ---------------------------------


@contextmanager
def executing(settings: Settings, backends: Backends, store: Any) -> Iterator[None]:
    """An executor on ``backends`` but ``store``, running in a thread while the block runs."""
    executor = build_executor(settings, dataclasses.replace(backends, store=store))
    shutdown = Shutdown()
    thread = threading.Thread(target=executor.run, args=(shutdown,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        shutdown.request()
        thread.join(30)


def dispatch_one(settings: Settings, backends: Backends, url: str, seconds: float) -> str:
    """A one-time schedule due in ``seconds``, its occurrence sent to queue 2: its id."""
    now = datetime.now(UTC)
    due = utc_ms(now + timedelta(seconds=seconds))
    backends.store.apply_definition((TENANT, "held", 1, one_time(url, due), due, now))
    assert Poller(backends.store, backends.queues.occurrences, settings).poll_once() == 1
    return occurrence_id("held", due)


def test_the_executor_holds_due_occurrences_while_the_store_is_away_and_fires_at_its_return(
    tmp_path: Path, backends: Backends
) -> None:
    settings = sqlite_settings(tmp_path)
    with running_receiver() as receiver:
        key = dispatch_one(settings, backends, f"{receiver.url}/held", 0.5)
        outage = Outage(backends.store, {"get_schedules", "begin_attempts"})
        outage.down.set()
        with executing(settings, backends, outage):
            time.sleep(2.5)  # due for 2 s, the store away
            assert receiver.calls == []
            tries = len(outage.calls)
            assert 3 <= tries <= 12, outage.calls  # a bounded backoff, no busy loop
            outage.down.clear()
            back = time.monotonic()
            [call] = receiver.wait_for(1, timeout=5)
            # Within the longest pause (1 s), not when the message's visibility ends (~45 s).
            assert time.monotonic() - back < 1.5
            assert call.headers["idempotency-key"] == key
            time.sleep(0.5)
        record = backends.store.get_execution(TENANT, key)
        assert record is not None and record.status.value == "succeeded"
        assert record.attempts == 1
        assert len(receiver.calls) == 1


def test_a_begin_whose_answer_was_lost_is_the_executors_own_and_fires_once_at_once(
    tmp_path: Path, backends: Backends
) -> None:
    settings = sqlite_settings(tmp_path)
    with running_receiver() as receiver:
        key = dispatch_one(settings, backends, f"{receiver.url}/lost", 0.5)
        lossy = LosesTheAnswer(backends.store, "begin_attempts")
        with executing(settings, backends, lossy):
            # The record was written with the executor's lease (40 s): waiting for it to end
            # would fire 40 s late; taking it for another's would never fire at all.
            [call] = receiver.wait_for(1, timeout=5)
            assert call.headers["idempotency-key"] == key
            time.sleep(1.0)
        assert lossy.calls == 2
        assert len(receiver.calls) == 1
        record = backends.store.get_execution(TENANT, key)
        assert record is not None and record.status.value == "succeeded"
        assert record.attempts == 1


class CountsVisibility:
    """A queue that counts its visibility-change requests, the rest passing through."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self.singles = 0
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._queue, name)

    def change_visibility(self, receipt_handle: str, timeout_seconds: float) -> None:
        self.singles += 1
        self._queue.change_visibility(receipt_handle, timeout_seconds)

    def change_visibilities(self, changes: list[tuple[str, float]]) -> None:
        self.batches.append(len(changes))
        self._queue.change_visibilities(changes)


def test_after_an_outage_the_overdue_are_kept_invisible_for_their_lease_a_batch_at_a_time(
    tmp_path: Path, backends: Backends
) -> None:
    """Overdue by more than the slack, each begun occurrence needs its message kept invisible
    for its lease: one request per batch, not per occurrence (one each held the drain after an
    outage to about 110 fires a second on SQS)."""
    settings = sqlite_settings(tmp_path)
    now = datetime.now(UTC)
    due = utc_ms(now + timedelta(seconds=0.5))
    with running_receiver() as receiver:
        for number in range(30):
            schedule_id = f"held-{number}"
            spec = one_time(f"{receiver.url}/{schedule_id}", due)
            backends.store.apply_definition((TENANT, schedule_id, 1, spec, due, now))
        assert Poller(backends.store, backends.queues.occurrences, settings).poll_once() == 30
        counting = CountsVisibility(backends.queues.occurrences)
        queues = dataclasses.replace(backends.queues, occurrences=counting)
        outage = Outage(backends.store, {"get_schedules", "begin_attempts"})
        outage.down.set()
        executor = build_executor(
            settings, dataclasses.replace(backends, store=outage, queues=queues)
        )
        shutdown = Shutdown()
        thread = threading.Thread(target=executor.run, args=(shutdown,), daemon=True)
        thread.start()
        try:
            # Due for 3.5 s: longer than the messages were received invisible for past their
            # time (the dispatch lead and 1 s of slack, beside the lease).
            time.sleep(4.0)
            outage.down.clear()
            calls = receiver.wait_for(30, timeout=10)
            time.sleep(0.5)
        finally:
            shutdown.request()
            thread.join(30)
    assert sorted(call.path for call in calls) == sorted(f"/held-{n}" for n in range(30))
    assert counting.singles == 0
    assert sum(counting.batches) == 30
    assert len(counting.batches) <= 3, counting.batches
    for number in range(30):
        record = backends.store.get_execution(TENANT, occurrence_id(f"held-{number}", due))
        assert record is not None and record.status.value == "succeeded"
        assert record.attempts == 1
