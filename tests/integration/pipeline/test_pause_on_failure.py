"""Pause on failure and the ``on_failure`` webhook: through the API, and end to end on the
embedded backends (a receiver that fails, the schedule pausing itself, the poller stopping, the
signed notifications, a resume)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY
from standardwebhooks.webhooks import Webhook

from shared.adapters.sqlite.store import SqliteStore
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from shared.settings import Settings
from tests.support.api import ApiUnderTest
from tests.support.harness import API, FAST, Pipeline, running_pipeline, sqlite_settings
from tests.support.peers import WIRE_VARIANTS, wire_backends
from tests.support.receiver import Call, running_receiver
from tests.support.waiting import eventually

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
}


def problem_fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.get_json()
    return sorted(error["field"] for error in response.get_json()["errors"])


def fail_occurrences(api: ApiUnderTest, schedule_id: str, count: int) -> None:
    """``count`` occurrences of the schedule dead-lettered, as the executor settles them."""
    store = api.backends.store
    stored = store.get_schedule("default", schedule_id)
    assert stored is not None
    now = api.clock.now()
    for number in range(count):
        at = now - timedelta(minutes=count - number)
        occurrence = Occurrence("default", schedule_id, stored.revision, at)
        execution = store.begin_attempt(occurrence, "x", now, now + timedelta(minutes=1))
        assert execution is not None
        outcome = AttemptOutcome(ExecutionStatus.FAILED, now, Answer(500), 1.0, "HTTP 500")
        assert store.settle_attempts([(execution, outcome)], "x") == [True]


def test_pause_after_failures_is_validated_shown_and_patched(api: ApiUnderTest) -> None:
    for bad in (0, -1, 1001, "3", 2.5, True):
        response = api.client.put(f"{API}/schedule/p2", json={**BODY, "pause_after_failures": bad})
        assert problem_fields(response) == ["pause_after_failures"], bad
    assert api.queued() == 0
    response = api.client.put(f"{API}/schedule/p1", json={**BODY, "pause_after_failures": 3})
    assert response.status_code == 202
    api.apply()
    shown = api.client.get(f"{API}/schedule/p1").get_json()
    assert (shown["pause_after_failures"], shown["paused_by"], shown["paused_reason"]) == (
        3,
        None,
        None,
    )
    assert api.client.patch(f"{API}/schedule/p1", json={"pause_after_failures": 2}).status_code
    api.apply()
    assert api.client.get(f"{API}/schedule/p1").get_json()["pause_after_failures"] == 2
    assert problem_fields(
        api.client.patch(f"{API}/schedule/p1", json={"pause_after_failures": 0})
    ) == ["pause_after_failures"]
    assert api.client.patch(f"{API}/schedule/p1", json={"pause_after_failures": None})
    api.apply()
    assert api.client.get(f"{API}/schedule/p1").get_json()["pause_after_failures"] is None


def test_the_schedule_and_its_history_say_who_paused_it_and_why(api: ApiUnderTest) -> None:
    response = api.client.put(f"{API}/schedule/p1", json={**BODY, "pause_after_failures": 2})
    assert response.status_code == 202
    api.apply()
    fail_occurrences(api, "p1", 2)
    shown = api.client.get(f"{API}/schedule/p1").get_json()
    assert (shown["status"], shown["paused_by"], shown["consecutive_failures"]) == (
        "paused",
        "failures",
        2,
    )
    assert shown["paused_at"].endswith("Z")
    assert "2 failed occurrences in a row" in shown["paused_reason"]
    history = api.client.get(f"{API}/schedule/p1/executions").get_json()
    assert (history["schedule_status"], history["paused_by"], history["paused_at"]) == (
        "paused",
        "failures",
        shown["paused_at"],
    )
    resumed = api.client.post(f"{API}/schedule/p1/resume").get_json()
    assert (resumed["status"], resumed["paused_by"], resumed["consecutive_failures"]) == (
        "active",
        None,
        0,
    )
    paused = api.client.post(f"{API}/schedule/p1/pause").get_json()
    assert (paused["paused_by"], paused["paused_reason"]) == ("user", "paused by its owner")


def test_the_openapi_document_has_pause_after_failures(api: ApiUnderTest) -> None:
    schemas = api.client.get("/openapi.json").get_json()["components"]["schemas"]
    for name in ("pause_after_failures", "paused_by", "paused_at", "paused_reason"):
        assert name in schemas["ScheduleView"]["properties"], name
    assert "pause_after_failures" in schemas["ScheduleBody"]["properties"]
    assert "pause_after_failures" in schemas["SchedulePatch"]["properties"]
    assert "paused_by" in schemas["ExecutionPage"]["properties"]


# -- on_failure ------------------------------------------------------------------------------


def test_on_failure_takes_a_url_or_an_object_and_masks_its_secrets(api: ApiUnderTest) -> None:
    hook = {"url": "https://alerts.example.com/hook?token=abc", "headers": {"Authorization": "x"}}
    response = api.client.put(f"{API}/schedule/h1", json={**BODY, "on_failure": hook})
    assert response.status_code == 202, response.get_json()
    api.apply()
    shown = api.client.get(f"{API}/schedule/h1").get_json()["on_failure"]
    assert shown == {
        "url": "https://alerts.example.com/hook?token=********",
        "headers": {"Authorization": "********"},
    }
    stored = api.backends.store.get_schedule("default", "h1")
    assert stored is not None and stored.definition is not None
    assert stored.definition.on_failure is not None
    assert stored.definition.on_failure.url == hook["url"]
    store = api.backends.store
    assert isinstance(store, SqliteStore)
    [row] = store.db.connection().execute("SELECT definition FROM schedules").fetchall()
    assert "alerts.example.com" not in row["definition"]  # sealed at rest, like the payload
    # A replace that sends the masked hook back keeps the stored one.
    again = {**BODY, "on_failure": shown, "name": "renamed"}
    assert api.client.put(f"{API}/schedule/h1", json=again).status_code == 202
    api.apply()
    kept = api.backends.store.get_schedule("default", "h1")
    assert kept is not None and kept.definition is not None
    assert kept.definition.on_failure == stored.definition.on_failure
    plain = {**BODY, "on_failure": "https://alerts.example.com/plain"}
    assert api.client.put(f"{API}/schedule/h2", json=plain).status_code == 202
    api.apply()
    assert api.client.get(f"{API}/schedule/h2").get_json()["on_failure"] == {
        "url": "https://alerts.example.com/plain",
        "headers": {},
    }
    assert api.client.patch(f"{API}/schedule/h2", json={"on_failure": None}).status_code == 202
    api.apply()
    assert api.client.get(f"{API}/schedule/h2").get_json()["on_failure"] is None


def test_a_bad_on_failure_is_a_400_naming_it(api: ApiUnderTest) -> None:
    cases: list[tuple[Any, str]] = [
        ("ftp://alerts.example.com/x", "on_failure.url"),
        ("http://10.1.2.3/hook", "on_failure.url"),  # the SSRF guard, as for payload.url
        ({"url": "https://alerts.example.com", "headers": {"webhook-id": "x"}}, "on_failure"),
        ({"headers": {}}, "on_failure.url"),
        ({"url": "https://alerts.example.com", "extra": 1}, "on_failure.extra"),
        (42, "on_failure"),
    ]
    for bad, field in cases:
        response = api.client.put(f"{API}/schedule/h3", json={**BODY, "on_failure": bad})
        fields = problem_fields(response)
        assert len(fields) == 1 and fields[0].startswith(field), (bad, fields)
    assert api.queued() == 0


# -- end to end --------------------------------------------------------------------------------


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture(params=["sqlite", *WIRE_VARIANTS])
def pipeline(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Pipeline]:
    """The pipeline, its workers on threads: on SQLite, and on MongoDB and SQS over the wire
    (nx-27017 and LocalStack)."""
    if request.param == "sqlite":
        with running_pipeline(sqlite_settings(tmp_path)) as embedded:
            yield embedded
        return
    with wire_backends(request, monkeypatch, tmp_path, request.param) as wire:
        settings = wire.settings(Settings.from_env({}, **FAST))
        backends = wire.open(settings)
        try:
            with running_pipeline(settings, backends) as threaded:
                yield threaded
        finally:
            backends.close()


def test_a_failing_schedule_pauses_itself_notifies_and_resumes(pipeline: Pipeline) -> None:
    healthy = {"hook": False}

    def respond(call: Call) -> tuple[int, dict[str, str]]:
        if call.path == "/hook" and not healthy["hook"]:
            return 500, {}
        return 204, {}

    paused_before = counter("scheduler_schedules_auto_paused_total")
    sent_before = counter("scheduler_failure_notifications_total", result="sent")
    with running_receiver(respond) as receiver:
        body = {
            **BODY,
            "schedule": {"interval": {"number": 1, "unit": "second"}},
            "payload": {"method": "POST", "url": f"{receiver.url}/hook"},
            "retry": {"max_attempts": 1},
            "pause_after_failures": 2,
            "on_failure": {
                "url": f"{receiver.url}/notify",
                "headers": {"Authorization": "Bearer alerts"},
            },
        }
        client = pipeline.client
        assert client.put(f"{API}/schedule/e1", json=body).status_code == 202

        def shown() -> dict[str, Any]:
            found: dict[str, Any] = client.get(f"{API}/schedule/e1").get_json()
            return found

        eventually(lambda: shown().get("status") == "paused", 15, "the schedule paused itself")
        paused = shown()
        assert paused["paused_by"] == "failures"
        assert paused["consecutive_failures"] >= 2
        assert client.get(f"{API}/schedule/e1/executions").get_json()["paused_by"] == "failures"
        # The poller stops: no call after the occurrences already in flight.
        time.sleep(1.5)
        hooks = len([call for call in receiver.calls if call.path == "/hook"])
        time.sleep(2.5)
        assert len([call for call in receiver.calls if call.path == "/hook"]) == hooks

        def notifications() -> list[Call]:
            return [call for call in receiver.calls if call.path == "/notify"]

        eventually(
            lambda: any(call.json()["type"] == "schedule.paused" for call in notifications()),
            5,
            "the pause notification",
        )
        signing = Webhook(FAST["webhook_secret"])
        kinds = []
        for call in notifications():
            signing.verify(call.body, call.headers)  # raises if the signature is wrong
            assert call.headers["authorization"] == "Bearer alerts"
            event = call.json()
            assert event["schedule_id"] == "e1"
            assert event["occurrence_id"].startswith("e1:")
            assert event["error"] and event["time"].endswith("Z")
            kinds.append(event["type"])
        assert kinds.count("schedule.paused") == 1
        assert kinds.count("occurrence.dead_lettered") >= 2
        assert counter("scheduler_schedules_auto_paused_total") == paused_before + 1
        assert counter("scheduler_failure_notifications_total", result="sent") >= sent_before + 3

        healthy["hook"] = True
        resumed = client.post(f"{API}/schedule/e1/resume").get_json()
        assert (resumed["status"], resumed["paused_by"], resumed["consecutive_failures"]) == (
            "active",
            None,
            0,
        )
        # The change history: the create, the pause the service made, the resume.
        changes = client.get(f"{API}/schedule/e1/changes").get_json()["items"]
        assert [(item["action"], item["actor"]["kind"]) for item in changes] == [
            ("resume", "api_key"),
            ("automatic_pause", "system"),
            ("create", "api_key"),
        ]
        automatic = changes[1]
        assert automatic["at"] == paused["paused_at"]
        assert automatic["actor"] == {"kind": "system", "key_id": None, "name": "system"}
        assert automatic["fields"] == [
            {"path": "state", "old": "active", "new": "paused", "secret": False}
        ]
        assert changes[0]["revision"] > automatic["revision"] > changes[2]["revision"]
        eventually(
            lambda: len([call for call in receiver.calls if call.path == "/hook"]) > hooks,
            10,
            "a call after the resume",
        )
        eventually(lambda: shown().get("last_status") == "succeeded", 10, "a success recorded")
        client.delete(f"{API}/schedule/e1")
