"""Pause until a time with the components started as users start them (issue 27 item 2): two
pollers and two executors, one of each killed (kill -9) in the middle of the pause and started
again. The pause resumes once (one poller logs it), no call reaches the receiver while paused,
each occurrence from ``until`` on is called once, and each occurrence has one record: succeeded
and called once, or skipped by the pause and never called. On one SQLite file and on the wire
peers (MongoDB on nx-27017, SQS on LocalStack).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.timeutil import iso_z, parse_iso
from tests.support.harness import API
from tests.support.peers import ComponentBackends
from tests.support.processes import UNDER_FAULTS, http_json, started_components
from tests.support.receiver import running_receiver

pytestmark = pytest.mark.slow

OCCURRENCES = 25  # every second
PAUSE_AFTER = 4  # seconds after the first occurrence
PAUSE_SECONDS = 8


def events(log: str, name: str) -> list[dict[str, Any]]:
    found = []
    for line in log.splitlines():
        if f'"{name}"' in line:
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return [event for event in found if event.get("event") == name]


def test_pause_until_resumes_once_and_fires_each_occurrence_after_it_once(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {
        **component_backends.env,
        **UNDER_FAULTS,
        "SCHEDULER_POLLER_LEASE_SECONDS": "2",
        "SCHEDULER_EXECUTION_LEASE_MARGIN_SECONDS": "2",
    }
    names = ["api", "processor", "poller-1", "poller-2", "executor-1", "executor-2"]
    with (
        running_receiver() as receiver,
        started_components(tmp_path, env, names) as components,
    ):
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=4)
        end = start + timedelta(seconds=OCCURRENCES - 1)
        made = {
            "name": "paused job",
            "schedule": {
                "interval": {"number": 1, "unit": "second"},
                "start": iso_z(start),
                "end": iso_z(end),
            },
            "payload": {"method": "POST", "url": f"{receiver.url}/job"},
            "misfire": {"policy": "fire_all"},
            "retry": {"max_attempts": 5, "backoff_seconds": 0.2},
        }
        base = f"{components.base_url}{API}"
        status, created = http_json("POST", f"{base}/schedule", made)
        assert status == 202, created
        schedule_id = created["id"]

        time.sleep(max(0.0, (start - datetime.now(UTC)).total_seconds()) + PAUSE_AFTER)
        until = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=PAUSE_SECONDS)
        status, paused = http_json(
            "POST", f"{base}/schedule/{schedule_id}/pause", {"until": iso_z(until), "note": "n"}
        )
        paused_at = time.time()
        assert status == 202, paused
        assert (paused["status"], paused["paused_until"]) == ("paused", iso_z(until))
        assert (paused["pause_note"], paused["pause_set_by"]) == ("n", "no key")

        # In the middle of the pause, one poller and one executor die and come back.
        time.sleep(PAUSE_SECONDS / 2)
        for name in ("poller-1", "executor-1"):
            components.processes[name].kill()
        time.sleep(0.5)
        for name in ("poller-1", "executor-1"):
            components.start(name)

        deadline = time.monotonic() + 90
        status_of: dict[str, Any] = {}
        while time.monotonic() < deadline:
            # The runs, and the occurrences the pause superseded (not runs: listed apart).
            for listing in ("", "&status=skipped"):
                history = f"{base}/schedule/{schedule_id}/executions?limit=200{listing}"
                status, page = http_json("GET", history)
                assert status == 200, page
                status_of.update((item["occurrence_id"], item) for item in page["items"])
            final = [
                item for item in status_of.values() if item["status"] in ("succeeded", "skipped")
            ]
            if len(final) == OCCURRENCES and datetime.now(UTC) > end:
                break
            time.sleep(0.5)
        time.sleep(1.0)  # room for a late duplicate to show
        status, shown = http_json("GET", f"{base}/schedule/{schedule_id}")
        logs = "".join(
            process.output() for name, process in components.processes.items() if "poller" in name
        )

    resumes = events(logs, "pause_ended")
    calls = receiver.calls
    deliveries = Counter(call.headers["idempotency-key"] for call in calls)
    expected = {f"{schedule_id}:{iso_z(start + timedelta(seconds=k))}" for k in range(OCCURRENCES)}
    after = {key for key in expected if parse_iso(key.split(":", 1)[1]) >= until}
    print(
        f"\npause until ({component_backends.variant}): {len(calls)} calls,"
        f" {Counter(item['status'] for item in status_of.values())}, {len(resumes)} resume(s)"
    )

    # Resumed once, by one poller, on its own; the pause and its note are gone.
    assert len(resumes) == 1, resumes
    assert shown["status"] in ("active", "completed") and shown["paused_until"] is None
    # Nothing reached the receiver while paused (a call in flight as it landed aside).
    during = [call for call in calls if paused_at + 1.0 <= call.received_at < until.timestamp()]
    assert during == [], [call.headers["idempotency-key"] for call in during]
    # Each occurrence from until on was called, once; none was called twice.
    assert after and after <= set(deliveries)
    assert [key for key, count in deliveries.items() if count > 1] == []
    # One record each: succeeded and called, or skipped by the pause and never called.
    assert set(status_of) == expected
    succeeded = {key for key, item in status_of.items() if item["status"] == "succeeded"}
    assert set(deliveries) == succeeded
    skipped = expected - succeeded
    assert skipped and all(status_of[key]["status"] == "skipped" for key in skipped)
    assert all(
        until.timestamp() - PAUSE_SECONDS - 1
        <= parse_iso(key.split(":", 1)[1]).timestamp()
        < until.timestamp()
        for key in skipped
    ), sorted(skipped)
