"""The lateness a run records is what its receiver saw: the first attempt's request sent minus
the scheduled time, measured here by the receiver's own clock; a retry's delay is a figure of
its own, and every millisecond figure is rounded."""

from __future__ import annotations

import io
import re
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from scheduler_cli.executions import EXECUTION_COLUMNS
from scheduler_cli.operator import table
from shared.timeutil import parse_iso
from tests.support.harness import API, Pipeline, running_pipeline, sqlite_settings
from tests.support.receiver import Call, answers, running_receiver
from tests.support.schedules import at_in, create, history
from tests.support.waiting import eventually

# How far before the receiver's clock a recorded figure is, typically (the median of a test's
# figures): the start is stamped as the request is written, then kept to the millisecond
# (truncated: up to 1 ms), mapped from the clock of the attempt's start (itself to the
# millisecond: up to 1 ms more); the rest is the way from the stamp to the receiving socket.
WITHIN_MS = 5.0
# How far before it any one figure may be: on a busy machine the sender may wait for a core
# or for its interpreter lock between the stamp and the socket (12 ms seen at load ~16 on two
# cores). Still far below what a stamp taken at the wrong moment is off by (the slow name's
# 300 ms in the tests below).
TURN_MS = 50.0
# How long the name of the host of a call resolves for, in the test of a slow connection.
SLOW_DNS_SECONDS = 0.3


def seen_late_ms(call: Call) -> float:
    """How late the receiver saw the call, by its own clock."""
    scheduled = parse_iso(call.headers["x-scheduler-scheduled-time"]).timestamp()
    return (call.received_at - scheduled) * 1000.0


def at_ms(text: str) -> float:
    return parse_iso(text).timestamp() * 1000.0


def assert_seen(recorded_ms: float, seen_ms: float, record: dict[str, Any]) -> float:
    """A recorded moment or lateness is the receiver's: never after it (a tenth of a
    millisecond for rounding), at most ``TURN_MS`` before; how far before it is."""
    before = seen_ms - recorded_ms
    assert -0.1 <= before <= TURN_MS, (before, record)
    return before


def assert_typically_within(before: list[float]) -> None:
    """The figures of several calls are typically (their median) ``WITHIN_MS`` or less
    before the receiver's clock."""
    assert statistics.median(before) <= WITHIN_MS, before


def occurrence(pipeline: Pipeline, schedule_id: str, occurrence_id: str) -> dict[str, Any]:
    answer = pipeline.client.get(f"{API}/schedule/{schedule_id}/executions/{occurrence_id}")
    assert answer.status_code == 200
    found: dict[str, Any] = answer.get_json()
    return found


def assert_rounded(record: dict[str, Any]) -> None:
    """Every millisecond figure is whole tenths: no float noise in the JSON."""
    figures = {key: value for key, value in record.items() if key.endswith("_ms")}
    for attempt in record.get("attempt_log", []):
        figures.update({f"attempt.{k}": v for k, v in attempt.items() if k.endswith("_ms")})
    assert figures
    for key, value in figures.items():
        assert value is None or round(value, 1) == value, (key, value)


def test_on_time_runs_record_the_lateness_their_receiver_saw(tmp_path: Path) -> None:
    body = {
        "schedule": {"cron": "@every 1s"},
        "payload": {"method": "POST", "url": "", "body": {"k": "v"}},
        "jitter_seconds": 0.3,
    }
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        body["payload"]["url"] = f"{receiver.url}/hook"
        schedule_id = create(pipeline, body)
        receiver.wait_for(4, timeout=15)
        calls = {call.headers["idempotency-key"]: call for call in receiver.calls}
        eventually(
            lambda: sum(r["status"] == "succeeded" for r in history(pipeline, schedule_id)) >= 4
        )
        records = [r for r in history(pipeline, schedule_id) if r["status"] == "succeeded"]
        details = [occurrence(pipeline, schedule_id, r["occurrence_id"]) for r in records]
    before: list[float] = []
    for record in details:
        call = calls[record["occurrence_id"]]
        assert record["scheduled_time"] == call.headers["x-scheduler-scheduled-time"]
        # Never early, and what the receiver saw, give or take the call's way there.
        assert record["lateness_ms"] >= 0
        before.append(assert_seen(record["lateness_ms"], seen_late_ms(call), record))
        before.append(assert_seen(at_ms(record["started_at"]), call.received_at * 1000.0, record))
        assert record["retry_delay_ms"] is None
        # The jitter is not lateness: it is in the scheduled time, and shown apart.
        assert 0 <= record["jitter_ms"] <= 300
        assert_rounded(record)
    assert_typically_within(before)


def test_a_retried_run_keeps_its_first_attempts_lateness_and_shows_the_delay_apart(
    tmp_path: Path,
) -> None:
    later = (503, {"Retry-After": "1"})
    with (
        running_receiver(answers(later, 200)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        schedule_id = create(
            pipeline,
            {
                "schedule": {"at": at_in(1.5)},
                "payload": {"method": "POST", "url": f"{receiver.url}/flaky"},
                "retry": {"max_attempts": 3, "backoff_seconds": 0.05},
            },
        )
        receiver.wait_for(2, timeout=15)
        eventually(lambda: [r["status"] for r in history(pipeline, schedule_id)] == ["succeeded"])
        [listed] = history(pipeline, schedule_id)
        record = occurrence(pipeline, schedule_id, listed["occurrence_id"])
        page = pipeline.client.get(f"/console/runs/{listed['occurrence_id']}")
    first, second = receiver.calls
    assert record["attempts"] == 2
    # The first attempt was on time: the run's lateness is its, not the retry's.
    assert record["lateness_ms"] >= 0
    late_before = assert_seen(record["lateness_ms"], seen_late_ms(first), record)
    retried_after = (second.received_at - first.received_at) * 1000.0
    assert retried_after >= 1000
    # The difference of the two attempts' stamps: each up to ``TURN_MS`` before its arrival.
    assert abs(record["retry_delay_ms"] - retried_after) <= TURN_MS, record
    assert listed["lateness_ms"] == record["lateness_ms"]
    assert listed["retry_delay_ms"] == record["retry_delay_ms"]
    # Each attempt's start is when its request left.
    one, two = record["attempt_log"]
    first_before = assert_seen(at_ms(one["started_at"]), first.received_at * 1000.0, record)
    second_before = assert_seen(at_ms(two["started_at"]), second.received_at * 1000.0, record)
    assert_typically_within([late_before, first_before, second_before])
    assert_rounded(record)
    # The CLI's table and the console show the same figures.
    out = io.StringIO()
    table([listed], EXECUTION_COLUMNS, out)
    assert f"{record['lateness_ms']:,.1f}" in out.getvalue()
    assert f"{record['retry_delay_ms']:,.1f}" in out.getvalue()
    assert page.status_code == 200
    shown = page.get_data(as_text=True)
    assert re.search(rf"<th>late</th><td>{record['lateness_ms']:.0f} ms", shown)
    assert re.search(rf"<th>retried after</th><td>{record['retry_delay_ms']:.0f} ms", shown)


def test_a_call_that_waits_for_its_connection_records_when_its_request_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt begins at its moment, but its request leaves only once the host's name is
    resolved (here 0.3 s, as a slow DNS takes): the run is as late as the receiver saw it."""

    def slow_dns(host: str) -> list[str]:
        time.sleep(SLOW_DNS_SECONDS)
        return ["127.0.0.1"]

    monkeypatch.setattr("shared.adapters.http_sender.system_resolver", slow_dns)
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        port = urlsplit(receiver.url).port
        schedule_id = create(
            pipeline,
            {
                "schedule": {"at": at_in(1.0)},
                "payload": {"method": "POST", "url": f"http://slow-dns.test:{port}/hook"},
            },
        )
        [call] = receiver.wait_for(1, timeout=15)
        eventually(lambda: [r["status"] for r in history(pipeline, schedule_id)] == ["succeeded"])
        [listed] = history(pipeline, schedule_id)
        record = occurrence(pipeline, schedule_id, listed["occurrence_id"])
    assert seen_late_ms(call) >= SLOW_DNS_SECONDS * 1000.0
    assert_seen(record["lateness_ms"], seen_late_ms(call), record)
    assert_seen(at_ms(record["started_at"]), call.received_at * 1000.0, record)
    [attempt] = record["attempt_log"]
    assert attempt["started_at"] == record["started_at"]


def test_a_call_that_gets_no_answer_records_when_its_request_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No answer within the timeout, after a slow name (0.3 s): the failed run's start and
    lateness are still when its request was written, as its receiver saw it."""

    def slow_dns(host: str) -> list[str]:
        time.sleep(SLOW_DNS_SECONDS)
        return ["127.0.0.1"]

    def too_late(call: Call) -> tuple[int, dict[str, str]]:
        time.sleep(2.0)
        return 200, {}

    monkeypatch.setattr("shared.adapters.http_sender.system_resolver", slow_dns)
    with (
        running_receiver(too_late) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        port = urlsplit(receiver.url).port
        schedule_id = create(
            pipeline,
            {
                "schedule": {"at": at_in(1.0)},
                "payload": {
                    "method": "POST",
                    "url": f"http://slow-dns.test:{port}/hook",
                    "timeout_seconds": 1,
                },
                "retry": {"max_attempts": 1},
            },
        )
        [call] = receiver.wait_for(1, timeout=15)
        eventually(lambda: [r["status"] for r in history(pipeline, schedule_id)] == ["failed"])
        [listed] = history(pipeline, schedule_id)
        record = occurrence(pipeline, schedule_id, listed["occurrence_id"])
    [attempt] = record["attempt_log"]
    assert "no answer within 1s" in attempt["error"], attempt
    assert seen_late_ms(call) >= SLOW_DNS_SECONDS * 1000.0
    assert_seen(record["lateness_ms"], seen_late_ms(call), record)
    assert_seen(at_ms(record["started_at"]), call.received_at * 1000.0, record)
    assert attempt["started_at"] == record["started_at"]
