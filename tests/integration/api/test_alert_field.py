"""A schedule's ``alert`` through the API: accepted, shown, patched and removed; a bad one is a
400 naming the field, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from shared.definition_rules import MAX_LATE_AFTER_SECONDS
from tests.support.api import ApiUnderTest
from tests.support.harness import API

HOOK = {"url": "https://alerts.example.com/in"}
BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
    "on_failure": HOOK,
}


def problem_fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.get_json()
    assert response.mimetype == "application/problem+json"
    return sorted(error["field"] for error in response.get_json()["errors"])


def shown(api: ApiUnderTest, schedule_id: str) -> Any:
    return api.client.get(f"{API}/schedule/{schedule_id}").get_json()["alert"]


def test_an_alert_is_accepted_shown_patched_and_removed(api: ApiUnderTest) -> None:
    created = {**BODY, "alert": {"late_after_seconds": 120}}
    assert api.client.put(f"{API}/schedule/a1", json=created).status_code == 202
    api.apply()
    assert shown(api, "a1") == {"late_after_seconds": 120}
    patch = {"alert": {"late_after_seconds": MAX_LATE_AFTER_SECONDS}}
    assert api.client.patch(f"{API}/schedule/a1", json=patch).status_code == 202
    api.apply()
    assert shown(api, "a1") == {"late_after_seconds": MAX_LATE_AFTER_SECONDS}
    assert api.client.patch(f"{API}/schedule/a1", json={"alert": None}).status_code == 202
    api.apply()
    assert shown(api, "a1") is None
    assert api.client.put(f"{API}/schedule/a2", json=BODY).status_code == 202
    api.apply()
    assert shown(api, "a2") is None
    spec = api.client.get("/openapi.json").get_json()["components"]["schemas"]
    assert "alert" in spec["ScheduleView"]["properties"]
    assert "alert" in spec["SchedulePatch"]["properties"]


@pytest.mark.parametrize(
    ("alert", "field"),
    [
        ({"late_after_seconds": 0}, "alert.late_after_seconds"),
        ({"late_after_seconds": -5}, "alert.late_after_seconds"),
        ({"late_after_seconds": MAX_LATE_AFTER_SECONDS + 1}, "alert.late_after_seconds"),
        ({"late_after_seconds": "60"}, "alert.late_after_seconds"),
        ({"late_after_seconds": 1.5}, "alert.late_after_seconds"),
        ({"late_after_seconds": True}, "alert.late_after_seconds"),
        ({}, "alert.late_after_seconds"),
        ({"late_after_seconds": 60, "late": 1}, "alert.late"),
        (60, "alert"),
    ],
)
def test_a_bad_alert_is_400_naming_the_field(api: ApiUnderTest, alert: Any, field: str) -> None:
    assert problem_fields(api.client.put(f"{API}/schedule/b1", json={**BODY, "alert": alert})) == [
        field
    ]
    assert api.queued() == 0


def test_an_alert_needs_on_failure_where_it_is_sent(api: ApiUnderTest) -> None:
    alone = {**BODY, "on_failure": None, "alert": {"late_after_seconds": 60}}
    assert problem_fields(api.client.put(f"{API}/schedule/c1", json=alone)) == ["alert"]
    assert api.client.put(f"{API}/schedule/c2", json={**BODY, "alert": {"late_after_seconds": 60}})
    api.apply()
    before = api.client.get(f"{API}/schedule/c2").get_json()
    # Removing the hook and keeping the alert is refused; the schedule stays as it was.
    assert problem_fields(api.client.patch(f"{API}/schedule/c2", json={"on_failure": None})) == [
        "alert"
    ]
    assert api.client.get(f"{API}/schedule/c2").get_json() == before
