"""End to end on the embedded backends: POST → queue 1 → store → queue 2 → a real HTTP call."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import lateness, running_receiver
from tests.support.schedules import ON_TIME_SECONDS, every_second_body


def test_a_schedule_fires_every_second_on_time_until_deleted(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        assert created.status_code == 202
        schedule_id = created.get_json()["id"]
        first_view = pipeline.wait_until_stored(schedule_id)

        calls = receiver.wait_for(3, timeout=6)
        assert len(calls) >= 3
        for call in calls[:3]:
            assert call.method == "PATCH"
            assert call.path == "/hooks/heartbeat"
            assert call.query == {"fixed": ["yes"], "region": ["eu"], "ids": ["1", "2"]}
            assert call.headers["x-team"] == "payments"
            assert call.headers["content-type"] == "application/json"
            assert call.json() == {"task": "ping", "n": 1}
            assert call.headers["idempotency-key"].startswith(f"{schedule_id}:")
            assert 0 <= lateness(call) <= ON_TIME_SECONDS, lateness(call)
        keys = [call.headers["idempotency-key"] for call in calls]
        assert len(set(keys)) == len(keys)

        later_view = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
        assert later_view["next_schedule_time"] > first_view["next_schedule_time"]

        assert pipeline.client.delete(f"{API}/schedule/{schedule_id}").status_code == 202
        deleted_at = time.time()
        time.sleep(2.0)
        assert [call for call in receiver.calls if call.received_at > deleted_at + 0.05] == []
        # Its history stays readable.
        history = pipeline.client.get(f"{API}/schedule/{schedule_id}/executions").get_json()
        assert history["schedule_status"] == "deleted"
        assert {item["occurrence_id"] for item in history["items"]} >= set(keys)


def test_a_one_time_schedule_whose_time_passed_fires_once_right_away(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        body = {
            "schedule": {
                "at": "2026-01-01T09:00:00",
                "timezone": "Asia/Kolkata",
                "fire_if_past": True,
            },
            "payload": {"method": "POST", "url": f"{receiver.url}/late", "body": {"x": 1}},
        }
        created = pipeline.client.post(f"{API}/schedule", json=body)
        assert created.get_json()["next_schedule_time"] == "2026-01-01T03:30:00.000Z"
        calls = receiver.wait_for(1, timeout=5)
        assert [call.path for call in calls] == ["/late"]
        time.sleep(1.0)
        assert len(receiver.calls) == 1
        schedule_id = created.get_json()["id"]
        view = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
        assert view["status"] == "completed"
        assert view["runs"] == 1
        history = pipeline.client.get(f"{API}/schedule/{schedule_id}/executions").get_json()
        assert [item["status"] for item in history["items"]] == ["succeeded"]
        assert history["items"][0]["http_status"] == 200
