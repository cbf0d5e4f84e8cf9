"""Pause on failure: ``pause_after_failures`` through the API, and end to end on the embedded
backends (a receiver that fails, the schedule pausing itself, the poller stopping, a resume)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.model import AttemptOutcome, ExecutionStatus, Occurrence
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path) as under_test:
        yield under_test


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
        outcome = AttemptOutcome(ExecutionStatus.FAILED, now, 500, 1.0, "HTTP 500")
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
