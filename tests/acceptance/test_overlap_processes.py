"""The overlap policy with the components started as users start them (issue 27 item 1): two
executor processes, a slow receiver that stamps each call's arrival and answer by its own
clock, and a kill -9 of the executor whose call the receiver is holding.

With ``skip`` and ``buffer_one``: no two calls of the schedule overlap by the receiver's clock;
the dead executor's hold ends with its call's lease (no occurrence of the schedule reaches the
receiver before then), its occurrence is taken over (attempt 2) and the schedule goes on; each
occurrence has one record, succeeded and delivered, or skipped and never delivered. On one
SQLite file and on the wire peers (MongoDB on nx-27017, SQS on LocalStack).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.ports import Store
from shared.timeutil import iso_z
from tests.support.harness import API
from tests.support.peers import ComponentBackends
from tests.support.processes import UNDER_FAULTS, Components, http_json, started_components
from tests.support.receiver import Call, running_receiver

pytestmark = pytest.mark.slow

OCCURRENCES = 18  # every second
CALL_SECONDS = 2.2  # how long the receiver holds each call
TIMEOUT_SECONDS = 3  # the call's timeout: with the margin below, its lease is 5 s
LEASE_MARGIN_SECONDS = 2
KILL_AT_CALL = 3  # the executor that sent the third call dies while the receiver holds it


@dataclass(frozen=True)
class Span:
    """One call by the receiver's clock: its occurrence, when it arrived and when it was
    answered."""

    key: str
    arrived: float
    answered: float


class SlowReceiver:
    """Holds each call ``CALL_SECONDS``; hands the ``KILL_AT_CALL``-th to the test while it
    holds it."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.held: queue.Queue[Call] = queue.Queue()
        self._lock = threading.Lock()
        self._arrivals = 0

    def __call__(self, call: Call) -> tuple[int, dict[str, str]]:
        with self._lock:
            self._arrivals += 1
            arrival = self._arrivals
        if arrival == KILL_AT_CALL:
            self.held.put(call)
        time.sleep(CALL_SECONDS)
        with self._lock:
            self.spans.append(Span(call.headers["idempotency-key"], call.received_at, time.time()))
        return 200, {}


def kill_the_holder(components: Components, store: Store, call: Call) -> tuple[str, datetime]:
    """kill -9 the executor whose lease the held call's occurrence is under (one read of the
    ``store``, while the receiver holds the call); its name and the lease's end."""
    record = store.get_execution("default", call.headers["idempotency-key"])
    assert record is not None and record.lease_owner is not None and record.lease_until
    pid = int(record.lease_owner.rsplit(":", 1)[1])
    [name] = [
        name
        for name, process in components.processes.items()
        if name.startswith("executor") and process.popen.pid == pid
    ]
    components.processes[name].kill()
    return name, record.lease_until


@pytest.mark.parametrize("overlap", ["skip", "buffer_one"])
def test_kill_9_of_the_executor_holding_a_call_keeps_calls_apart_and_loses_nothing(
    tmp_path: Path, component_backends: ComponentBackends, overlap: str
) -> None:
    env = {
        **component_backends.env,
        **UNDER_FAULTS,
        "SCHEDULER_EXECUTION_LEASE_MARGIN_SECONDS": str(LEASE_MARGIN_SECONDS),
    }
    slow = SlowReceiver()
    names = ["api", "processor", "poller", "executor-1", "executor-2"]
    with (
        running_receiver(slow) as receiver,
        started_components(tmp_path, env, names) as components,
    ):
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=4)
        end = start + timedelta(seconds=OCCURRENCES - 1)
        made: dict[str, Any] = {
            "name": f"slow {overlap}",
            "schedule": {
                "interval": {"number": 1, "unit": "second"},
                "start": iso_z(start),
                "end": iso_z(end),
            },
            "payload": {
                "method": "POST",
                "url": f"{receiver.url}/job",
                "timeout_seconds": TIMEOUT_SECONDS,
            },
            "misfire": {"policy": "fire_all"},
            "retry": {"max_attempts": 5, "backoff_seconds": 0.2},
            "overlap": overlap,
        }
        schedule_id = components.create(made)["id"]

        # The store opened and connected before the call to hold comes: the executor must be
        # killed while the receiver holds its call (CALL_SECONDS), which a loaded machine can
        # spend opening the backends.
        backends = component_backends.open()
        try:
            backends.store.get_execution("default", f"{schedule_id}:none")
            held = slow.held.get(timeout=60)
            killed, lease_end = kill_the_holder(components, backends.store, held)
            killed_at = time.time()
        finally:
            backends.close()
        time.sleep(0.5)
        components.start(killed)  # as a supervisor would

        def executions() -> list[Any]:
            status, page = http_json(
                "GET", f"{components.base_url}{API}/schedule/{schedule_id}/executions?limit=200"
            )
            assert status == 200, page
            items: list[Any] = page["items"]
            return items

        # Until every occurrence has its final record, and the calls in flight have ended.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            records = executions()
            final = [item for item in records if item["status"] in ("succeeded", "skipped")]
            if len(final) == OCCURRENCES and datetime.now(UTC) > end:
                break
            time.sleep(0.5)
        # A late duplicate (a call, a record changed after the read above) shows by now: what
        # the assertions judge is read after it.
        time.sleep(CALL_SECONDS + 0.5)
        records = executions()

    expected = {f"{schedule_id}:{iso_z(start + timedelta(seconds=k))}" for k in range(OCCURRENCES)}
    spans = sorted(slow.spans, key=lambda span: span.arrived)
    deliveries = Counter(span.key for span in spans)
    status_of = {item["occurrence_id"]: item for item in records}
    held_key = held.headers["idempotency-key"]
    print(
        f"\noverlap {overlap} ({component_backends.variant}): {len(spans)} calls,"
        f" {Counter(item['status'] for item in records)}, killed {killed}"
    )

    # No two calls overlap by the receiver's clock, the dead executor's included.
    assert all(later.arrived >= earlier.answered for earlier, later in itertools.pairwise(spans)), (
        spans
    )
    # The dead executor's hold lasted until its lease ended: nothing came in between.
    after_kill = [span for span in spans if span.arrived > held.received_at]
    assert after_kill and min(span.arrived for span in after_kill) >= lease_end.timestamp() - 0.1
    # Its occurrence was taken over, and the schedule went on after it.
    assert killed_at < held.received_at + CALL_SECONDS, "killed after its call was answered"
    assert deliveries[held_key] == 2, (status_of.get(held_key), spans)
    assert status_of[held_key]["status"] == "succeeded"
    assert status_of[held_key]["attempts"] == 2
    assert any(span.key > held_key for span in after_kill if span.key != held_key)
    # Nothing lost, nothing doubled: one record per occurrence, each succeeded one called
    # once (the held one twice, by the same key), each skipped one never.
    assert set(status_of) == expected
    succeeded = {key for key, item in status_of.items() if item["status"] == "succeeded"}
    skipped = {key for key, item in status_of.items() if item["status"] == "skipped"}
    assert succeeded | skipped == expected
    assert set(deliveries) == succeeded
    assert all(count == 1 for key, count in deliveries.items() if key != held_key), deliveries
    assert skipped and all(status_of[key]["error"].startswith("overlap:") for key in skipped)
