"""The store goes away while one-time occurrences fall due: the outage costs no more than itself.

- MongoDB cut off for 15 s: the four ``scheduler`` processes reach it (the session's nx-27017)
  through a proxy that cuts it off (``tests/support/cutting_proxy.py``: every connection reset,
  new ones refused), then restores it; SQS is the session's LocalStack.
- SQLite locked for 35 s: another process holds the database's write lock (as a long
  ``VACUUM`` or migration would), longer than a write waits for it (30 s); the four processes
  share the one file for the store and the queues. The lock is taken half a second before the
  first occurrence is due, when no write is waiting yet (a write that waits behind another
  thread's of the same process waits its own 30 s after that one's).

The occurrences fall due over 5 s, with a short look-ahead, so that some wait in the executor
for their version check and others have not been claimed yet when the store goes. Checked
against the receiver's log and its clock: every occurrence called once, none twice, and every
one that fell due during the outage called within 2 s of the store's return.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from shared.adapters.sqlite.db import sqlite_path
from shared.timeutil import iso_z
from tests.support import peers
from tests.support.cutting_proxy import CuttingProxy
from tests.support.factories import one_time
from tests.support.harness import API, sqlite_settings
from tests.support.processes import UNDER_FAULTS, Components, http_json, started_components
from tests.support.receiver import running_receiver

pytestmark = pytest.mark.slow

OCCURRENCES = 40
SPREAD_SECONDS = 5.0
CUT_AFTER_SECONDS = 1.0  # after the first occurrence is due
CUT_SECONDS = 15.0
LOCK_AFTER_SECONDS = -0.5
# Longer than a SQLite write waits for the lock (SqliteDatabase.busy_timeout_seconds).
LOCK_SECONDS = 35.0
# How soon after the store is back every occurrence it held up must have been called.
RESUME_WITHIN_SECONDS = 2.0

# Runs the outage: returns when the store is back.
Outage = Callable[[], None]


def test_mongodb_cut_off_for_15_s_costs_no_more_than_the_cut(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not peers.ENABLED:
        pytest.skip(peers.DISABLED_REASON)
    with (
        peers.wire_backends(request, monkeypatch, tmp_path, "wire-peers") as wire,
        CuttingProxy(_address(wire.mongo_url)) as proxy,
    ):

        def cut() -> None:
            proxy.cut()
            time.sleep(CUT_SECONDS)
            proxy.restore()

        env = {**wire.env(), "SCHEDULER_STORE_URL": proxy.url_for(wire.mongo_url)}
        _check_outage(tmp_path, env, cut, CUT_AFTER_SECONDS, CUT_SECONDS)
        assert proxy.cuts == 1


def test_a_sqlite_write_lock_held_35_s_by_another_process_costs_no_more_than_the_lock(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path)
    path = sqlite_path(settings.store_url)

    def lock() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            time.sleep(LOCK_SECONDS)
            other.execute("ROLLBACK")
        finally:
            other.close()

    env = {"SCHEDULER_STORE_URL": settings.store_url, "SCHEDULER_QUEUE_URL": settings.queue_url}
    _check_outage(tmp_path, env, lock, LOCK_AFTER_SECONDS, LOCK_SECONDS)


def _check_outage(
    tmp_path: Path, backends: dict[str, str], outage: Outage, after: float, lasts: float
) -> None:
    """The four processes on ``backends``; ``outage`` from ``after`` seconds after the first
    occurrence is due, as they fall due."""
    # Claimed 2 s ahead: the later occurrences are claimed only after the store is back.
    env = {**backends, **UNDER_FAULTS, "SCHEDULER_LOOKAHEAD_SECONDS": "2"}
    with (
        running_receiver() as receiver,
        started_components(tmp_path, env) as components,
    ):
        base = components.base_url
        first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
        step = timedelta(seconds=SPREAD_SECONDS / OCCURRENCES)
        expected = {
            _create(base, f"{receiver.url}/outage/{n}", first + n * step)
            for n in range(OCCURRENCES)
        }
        time.sleep(max(0.0, first.timestamp() + after - time.time()))
        went = time.time()
        outage()
        back = time.time()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if expected <= {call.headers["idempotency-key"] for call in receiver.calls}:
                break
            time.sleep(0.2)
        time.sleep(2.0)  # room for a late duplicate to show

    deliveries = Counter(call.headers["idempotency-key"] for call in receiver.calls)
    arrived: dict[str, float] = {}  # the first call of each, by the receiver's clock
    for call in receiver.calls:
        key = call.headers["idempotency-key"]
        arrived[key] = min(arrived.get(key, call.received_at), call.received_at)
    held_up = {key for key in expected if went <= _due(key) < back}
    resumed = {key: arrived[key] - back for key in held_up & set(arrived)}
    print(
        f"\noutage of {back - went:.1f} s: {len(expected)} occurrences, {len(held_up)} due "
        f"during it; {len(deliveries)} delivered, {sum(deliveries.values()) - len(deliveries)} "
        f"twice; those due during it called {min(resumed.values(), default=0):+.2f} to "
        f"{max(resumed.values(), default=0):+.2f} s after it"
    )
    assert back - went >= lasts
    assert expected - set(deliveries) == set(), "occurrences never called"
    assert set(deliveries) - expected == set(), "calls nobody scheduled"
    assert [key for key, count in deliveries.items() if count > 1] == [], "called twice"
    assert len(held_up) >= OCCURRENCES // 2
    late = {key: round(after, 2) for key, after in resumed.items() if after > RESUME_WITHIN_SECONDS}
    assert late == {}, f"called more than {RESUME_WITHIN_SECONDS} s after the store was back"


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 27017


def _create(base: str, url: str, at: datetime) -> str:
    """A one-time schedule calling ``url`` at ``at``: its occurrence id."""
    body = {
        "name": "outage",
        "schedule": {"at": iso_z(at)},
        "payload": {"method": "POST", "url": url},
    }
    status, created = http_json("POST", f"{base}{API}/schedule", body)
    assert status == 202, created
    return f"{created['id']}:{iso_z(at)}"


def _due(occurrence_id: str) -> float:
    return datetime.fromisoformat(occurrence_id.split(":", 1)[1]).timestamp()


def test_workers_started_while_mongodb_is_cut_off_start_when_it_is_back(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rolling deploy or a restart during an outage: the workers wait for the store instead of
    # exiting (and being restarted in a loop by whatever runs them).
    if not peers.ENABLED:
        pytest.skip(peers.DISABLED_REASON)
    with (
        peers.wire_backends(request, monkeypatch, tmp_path, "wire-peers") as wire,
        CuttingProxy(_address(wire.mongo_url)) as proxy,
        running_receiver() as receiver,
    ):
        proxy.cut()
        store_url = proxy.url_for(wire.mongo_url)
        env = {**wire.env(), "SCHEDULER_STORE_URL": store_url, "SCHEDULER_LOG_FORMAT": "json"}
        components = Components(tmp_path, env)
        names = ("processor", "poller", "executor")
        processes = [components.start(name) for name in names]
        try:
            for process in processes:
                process.wait_for_output("backend_unavailable", timeout=60)
            time.sleep(4.0)  # a server selection or two more
            assert [process.popen.poll() for process in processes] == [None] * len(names)
            proxy.restore()
            for process in processes:
                process.wait_for_output(rf"{process.args[0]} started")
            backends = wire.open(sqlite_settings(tmp_path))
            try:
                now = datetime.now(UTC)
                due = now.replace(microsecond=0) + timedelta(seconds=2)
                backends.store.apply_definition(
                    ("default", "after-the-cut", 1, one_time(f"{receiver.url}/back", due), due, now)
                )
            finally:
                backends.close()
            [call] = receiver.wait_for(1, timeout=30)
            assert call.headers["idempotency-key"] == f"after-the-cut:{iso_z(due)}"
        finally:
            components.kill()
