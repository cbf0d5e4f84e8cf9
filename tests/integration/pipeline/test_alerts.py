"""A schedule's ``alert`` end to end in one process: the late alert comes from the pollers when
no executor runs, once with two pollers, about ``late_after_seconds`` after the time by the
receiver's clock, signed as every on_failure notification; an occurrence on time brings
none; one the misfire policy drops brings one ``occurrence.missed``."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from standardwebhooks.webhooks import Webhook

from scheduler_cli.components import build_poller, build_processor
from scheduler_service.app import create_app
from shared.backends import open_backends
from shared.timeutil import iso_z, parse_iso
from tests.support.clocks import FixedClock
from tests.support.harness import API, FAST, pipeline_parts, running_pipeline, sqlite_settings
from tests.support.receiver import Call, running_receiver
from tests.support.schedules import history
from tests.support.waiting import eventually

LATE_AFTER = 2


def body(receiver_url: str, **changes: Any) -> dict[str, Any]:
    return {
        "name": "nightly",
        "schedule": {"interval": {"number": 1, "unit": "second"}},
        "payload": {"method": "POST", "url": f"{receiver_url}/hook"},
        "on_failure": {"url": f"{receiver_url}/alerts", "headers": {"Authorization": "Bearer a"}},
        "alert": {"late_after_seconds": LATE_AFTER},
        **changes,
    }


def alerts(calls: list[Call], kind: str) -> list[Call]:
    return [call for call in calls if call.path == "/alerts" and call.json()["type"] == kind]


def counted(tenant: str, kind: str) -> float:
    value = REGISTRY.get_sample_value(
        "scheduler_occurrence_alerts_total", {"tenant": tenant, "kind": kind}
    )
    return value or 0.0


def test_with_no_executor_the_pollers_tell_of_a_late_occurrence_once(tmp_path: Path) -> None:
    before = counted("default", "occurrence.late")
    with running_receiver() as receiver, pipeline_parts(sqlite_settings(tmp_path)) as pipeline:
        pipeline.run_worker(pipeline.poller)
        pipeline.run_worker(pipeline.another("poller"))
        at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        once = body(receiver.url, schedule={"at": iso_z(at)})
        assert pipeline.client.put(f"{API}/schedule/late1", json=once).status_code == 202
        [call] = eventually(lambda: alerts(receiver.calls, "occurrence.late"), 15, "the alert")
        # Not before its time + late_after_seconds, and soon after, by the receiver's clock.
        waited = call.received_at - at.timestamp()
        assert LATE_AFTER <= waited < LATE_AFTER + 3.0, waited
        Webhook(FAST["webhook_secret"]).verify(call.body, call.headers)
        assert call.headers["authorization"] == "Bearer a"
        event = call.json()
        assert event["schedule_id"] == "late1"
        assert event["occurrence_id"] == f"late1:{iso_z(at)}"
        assert parse_iso(event["scheduled_time"]) == at
        assert event["late_after_seconds"] == LATE_AFTER
        assert "not started" in event["error"]
        time.sleep(2.5)  # both pollers check several times more: nothing more is told
        assert len(alerts(receiver.calls, "occurrence.late")) == 1
        assert [c.path for c in receiver.calls] == ["/alerts"]
        assert counted("default", "occurrence.late") == before + 1

        # The executor starts at last: the occurrence runs, late, and nothing more is told.
        pipeline.run_worker(pipeline.executor)
        eventually(lambda: [c for c in receiver.calls if c.path == "/hook"], 15, "the late run")
        # Its record shows its lateness once the run has ended (while the call is in flight it
        # is "running", its lateness not known yet).
        [run] = eventually(lambda: history(pipeline, "late1", "succeeded"), 10, "the run's end")
        assert run["occurrence_id"] == f"late1:{iso_z(at)}"
        assert run["lateness_ms"] >= LATE_AFTER * 1000
        time.sleep(1.5)
        assert len(alerts(receiver.calls, "occurrence.late")) == 1


def test_occurrences_on_time_bring_no_alert(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        assert pipeline.client.put(f"{API}/schedule/ok1", json=body(receiver.url)).status_code
        receiver.wait_for(4, timeout=15)
        time.sleep(LATE_AFTER + 1.5)
        pipeline.client.delete(f"{API}/schedule/ok1")
        assert [c.path for c in receiver.calls if c.path != "/hook"] == []


def test_an_occurrence_the_misfire_policy_drops_is_told_as_missed_once(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, misfire_threshold_seconds=0.5)
    before = counted("default", "occurrence.missed")
    with running_receiver() as receiver, pipeline_parts(settings) as pipeline:
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        dropped = body(
            receiver.url,
            schedule={"interval": {"number": 1, "unit": "second"}, "start": iso_z(start)},
            misfire={"policy": "skip"},
            alert={"late_after_seconds": 600},
        )
        assert pipeline.client.put(f"{API}/schedule/m1", json=dropped).status_code == 202
        pipeline.wait_until_stored("m1")
        # No poller for three seconds: the occurrences of that time are dropped when two come.
        time.sleep(max(0.0, start.timestamp() + 3 - time.time()))
        pipeline.run_worker(pipeline.poller)
        pipeline.run_worker(pipeline.another("poller"))
        missed = eventually(lambda: alerts(receiver.calls, "occurrence.missed"), 10, "missed")
        time.sleep(1.5)
        missed = alerts(receiver.calls, "occurrence.missed")
        ids = [call.json()["occurrence_id"] for call in missed]
        assert len(ids) == len(set(ids)) >= 2
        assert f"m1:{iso_z(start)}" in ids
        records = pipeline.client.get(f"{API}/schedule/m1/executions?status=skipped").get_json()
        assert {item["occurrence_id"] for item in records["items"]} >= set(ids)
        signing = Webhook(FAST["webhook_secret"])
        for call in missed:
            signing.verify(call.body, call.headers)
            assert "misfire" in call.json()["error"]
        assert counted("default", "occurrence.missed") == before + len(ids)
        pipeline.client.delete(f"{API}/schedule/m1")


def test_an_occurrence_past_its_grace_when_the_executor_takes_it_is_told_as_missed(
    tmp_path: Path,
) -> None:
    before = counted("default", "occurrence.missed")
    with running_receiver() as receiver, pipeline_parts(sqlite_settings(tmp_path)) as pipeline:
        pipeline.run_worker(pipeline.poller)
        at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=2)
        graced = body(
            receiver.url,
            schedule={"at": iso_z(at)},
            misfire={"policy": "fire_once", "grace_seconds": 1},
            alert={"late_after_seconds": 600},
        )
        assert pipeline.client.put(f"{API}/schedule/g1", json=graced).status_code == 202
        # The executor comes 3 s after the time: beyond the grace of 1 s, it drops it.
        time.sleep(max(0.0, at.timestamp() + 3 - time.time()))
        pipeline.run_worker(pipeline.executor)
        pipeline.run_worker(pipeline.another("executor"))
        [call] = eventually(lambda: alerts(receiver.calls, "occurrence.missed"), 15, "missed")
        Webhook(FAST["webhook_secret"]).verify(call.body, call.headers)
        assert call.json()["occurrence_id"] == f"g1:{iso_z(at)}"
        time.sleep(1.5)
        assert len(alerts(receiver.calls, "occurrence.missed")) == 1
        assert [c for c in receiver.calls if c.path == "/hook"] == []
        [record] = pipeline.client.get(f"{API}/schedule/g1/executions?status=skipped").get_json()[
            "items"
        ]
        assert "grace" in record["error"]
        assert counted("default", "occurrence.missed") == before + 1


@pytest.mark.parametrize(
    ("timezone", "dates", "shift", "created", "sent", "checked", "late"),
    [
        # Europe/Berlin (CET, UTC+1) at the year end, holidays Th 31 Dec and Fr 1 Jan: from
        # Wednesday's 09:00 the next business day is Monday 4 January.
        (
            "Europe/Berlin",
            ["2026-12-24", "2026-12-25", "2026-12-31", "2027-01-01"],
            "skip",
            "2026-12-29T12:00:00Z",
            "2026-12-30T07:59:55Z",  # Wednesday 08:59:55 CET
            "2027-01-04T09:00:00Z",  # Monday 10:00 CET
            ["2026-12-30T08:00:00.000Z", "2027-01-04T08:00:00.000Z"],
        ),
        # America/New_York across its spring change (Sunday 14 March 2027): Friday 09:00 EST;
        # the weekend's 09:00s move to Monday 09:00 EDT, which fires once.
        (
            "America/New_York",
            ["2027-07-05"],
            "next_business_day",
            "2027-03-11T15:00:00Z",  # Thursday 10:00 EST
            "2027-03-12T13:59:55Z",  # Friday 08:59:55 EST
            "2027-03-15T14:00:00Z",  # Monday 10:00 EDT
            ["2027-03-12T14:00:00.000Z", "2027-03-15T13:00:00.000Z"],
        ),
    ],
)
def test_late_alerts_tell_only_of_the_times_the_business_calendar_fires(
    tmp_path: Path,
    timezone: str,
    dates: list[str],
    shift: str,
    created: str,
    sent: str,
    checked: str,
    late: list[str],
) -> None:
    """No executor runs: the poller's check at ``checked`` tells of each occurrence the schedule
    had since the one it sent, and of none on a day off (a weekend or a holiday)."""
    settings = sqlite_settings(tmp_path)
    backends = open_backends(settings)
    clock = FixedClock(parse_iso(created))
    poller = build_poller(settings, backends, clock)
    try:
        with running_receiver() as receiver:
            client = create_app(settings, backends, clock).test_client()
            made = client.post(f"{API}/calendars", json={"name": "days-off", "dates": dates})
            assert made.status_code == 201, made.get_json()
            daily = body(
                receiver.url,
                schedule={"cron": "0 9 * * *", "timezone": timezone},
                calendar={"exclude": ["days-off"], "shift": shift},
                alert={"late_after_seconds": 60},
            )
            made = client.put(f"{API}/schedule/daily", json=daily)
            assert made.status_code == 202, made.get_json()
            build_processor(settings, backends, clock).process_batch()
            clock.current = parse_iso(sent)
            assert poller.poll_once() == 1
            clock.current = parse_iso(checked)
            assert poller.check_lateness() == len(late)
            calls = receiver.wait_for(len(late), timeout=10)
            events = [call.json() for call in alerts(calls, "occurrence.late")]
            assert sorted(event["scheduled_time"] for event in events) == late
            assert [call.path for call in receiver.calls] == ["/alerts"] * len(late)
    finally:
        if poller.alerts is not None:
            poller.alerts.close()
        backends.close()
