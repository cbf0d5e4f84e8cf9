"""Lateness and absence alerts with real processes: the four components on one SQLite file and
on MongoDB and SQS over the wire (nx-27017, LocalStack), two pollers, the executor frozen
(SIGSTOP); and ``scheduler dev``, where an occurrence on time brings no alert. Times are the
receiver's own clock."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from shared.timeutil import iso_z, parse_iso
from tests.support.harness import API
from tests.support.peers import ComponentBackends
from tests.support.processes import QUICK, UNDER_FAULTS, Process, http_json, started_components
from tests.support.receiver import Call, running_receiver
from tests.support.waiting import eventually

pytestmark = pytest.mark.slow

LATE_AFTER = 2


def alerted(receiver_url: str, **changes: Any) -> dict[str, Any]:
    return {
        "name": "alerted",
        "payload": {"method": "POST", "url": f"{receiver_url}/hook"},
        "on_failure": f"{receiver_url}/alerts",
        "alert": {"late_after_seconds": LATE_AFTER},
        **changes,
    }


def late_alerts(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.path == "/alerts" and c.json()["type"] == "occurrence.late"]


def test_a_frozen_executor_is_told_of_once_by_two_pollers(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {**component_backends.env, **UNDER_FAULTS}
    names = ("api", "processor", "poller", "poller-2", "executor")
    with running_receiver() as receiver, started_components(tmp_path, env, names) as components:
        executor = components.processes["executor"].popen.pid
        os.kill(executor, signal.SIGSTOP)
        try:
            at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
            body = alerted(receiver.url, schedule={"at": iso_z(at)})
            status, created = http_json("POST", f"{components.base_url}{API}/schedule", body)
            assert status == 202, created
            [call] = eventually(lambda: late_alerts(receiver.calls), 20, "the late alert")
            waited = call.received_at - at.timestamp()
            assert LATE_AFTER <= waited < LATE_AFTER + 4.0, waited
            Webhook(QUICK["SCHEDULER_WEBHOOK_SECRET"]).verify(call.body, call.headers)
            assert call.json()["occurrence_id"] == f"{created['id']}:{iso_z(at)}"
            time.sleep(3)  # both pollers go on checking: nothing more
            assert len(late_alerts(receiver.calls)) == 1
        finally:
            os.kill(executor, signal.SIGCONT)
        # Thawed, the executor runs it, late; no second alert.
        eventually(lambda: [c for c in receiver.calls if c.path == "/hook"], 20, "the run")
        # Its lateness is on its record once the run has ended ("running" has none yet).
        url = f"{components.base_url}{API}/schedule/{created['id']}/executions?status=succeeded"
        [run] = eventually(lambda: http_json("GET", url)[1]["items"], 10, "its record")
        assert run["lateness_ms"] >= LATE_AFTER * 1000
        time.sleep(1.5)
        assert len(late_alerts(receiver.calls)) == 1
        assert set(components.terminate().values()) == {0}


def test_scheduler_dev_tells_of_an_occurrence_held_back_by_a_slow_call_once(
    tmp_path: Path,
) -> None:
    """One call at a time to the host (``calls_per_host``) and a receiver that holds the first
    call 6 s: the next occurrence cannot start, and is told of once as late."""

    def slow_first(call: Call) -> tuple[int, dict[str, str]]:
        if call.path == "/hook" and len([c for c in receiver.calls if c.path == "/hook"]) == 0:
            time.sleep(6)
        return 200, {}

    with running_receiver(slow_first) as receiver:
        args = ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")]
        dev = Process(args, {}, tmp_path / "dev.log")
        try:
            base = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
            start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
            schedule = {"interval": {"number": 1, "unit": "second"}, "start": iso_z(start)}
            body = alerted(
                receiver.url,
                schedule={**schedule, "max_occurrences": 2},
                payload={
                    "method": "POST",
                    "url": f"{receiver.url}/hook",
                    "calls_per_host": 1,
                    "timeout_seconds": 10,
                },
            )
            # The first request of a just started API may take a while on a loaded machine.
            status, created = http_json("POST", f"{base}{API}/schedule", body, timeout=30)
            assert status == 202, created
            # The first time at or after the create was accepted (which may be after start).
            second = parse_iso(created["next_schedule_time"]) + timedelta(seconds=1)
            [call] = eventually(lambda: late_alerts(receiver.calls), 20, "the late alert")
            assert call.json()["occurrence_id"] == f"{created['id']}:{iso_z(second)}"
            waited = call.received_at - second.timestamp()
            assert LATE_AFTER <= waited < LATE_AFTER + 4.0, waited
            secret = (tmp_path / "data" / "webhook-secret").read_text().strip()
            Webhook(secret).verify(call.body, call.headers)
            # Both run in the end; the second, late, is told of no more.
            eventually(lambda: len([c for c in receiver.calls if c.path == "/hook"]) == 2, 20)
            time.sleep(1.5)
            assert len(late_alerts(receiver.calls)) == 1
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]


def test_scheduler_dev_tells_nothing_of_occurrences_on_time(tmp_path: Path) -> None:
    with running_receiver() as receiver:
        args = ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")]
        dev = Process(args, {}, tmp_path / "dev.log")
        try:
            base = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
            body = alerted(receiver.url, schedule={"cron": "@every 1s"})
            # The first request of a just started API may take a while on a loaded machine.
            status, created = http_json("POST", f"{base}{API}/schedule", body, timeout=30)
            assert status == 202, created
            status, shown = eventually(
                lambda: (
                    (answer := http_json("GET", f"{base}{API}/schedule/{created['id']}"))[0] == 200
                    and answer
                ),
                10,
            )
            assert shown["alert"] == {"late_after_seconds": LATE_AFTER}
            receiver.wait_for(3, timeout=15)
            time.sleep(LATE_AFTER + 2)
            assert [c.path for c in receiver.calls if c.path != "/hook"] == []
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]
