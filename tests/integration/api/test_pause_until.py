"""Pause until a time, with a note (issue 27 item 2): accepted, shown on the schedule with who
set it, refused naming the field, kept to its tenant; the poller's resume at ``until``
(tests/acceptance/test_pause_until_processes.py runs it with the processes)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_service import auth
from shared.ports import ApiKey
from shared.timeutil import iso_z
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME_KEY = "sk_acme_0123456789abcdef"
GLOBEX_KEY = "sk_globex_0123456789abcdef"
STORED_KEY = "sk_stored_0123456789abcdef"
KEYS = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
ACME = {"X-API-Key": ACME_KEY}
GLOBEX = {"X-API-Key": GLOBEX_KEY}
BODY: dict[str, Any] = {
    "name": "nightly",
    "schedule": {"cron": "0 2 * * *"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def create(api: ApiUnderTest, schedule_id: str, body: dict[str, Any] = BODY) -> None:
    response = api.client.put(f"{API}/schedule/{schedule_id}", json=body, headers=ACME)
    assert response.status_code == 202, response.get_json()
    api.apply()


def get(api: ApiUnderTest, schedule_id: str) -> Any:
    return api.client.get(f"{API}/schedule/{schedule_id}", headers=ACME).get_json()


def in_days(api: ApiUnderTest, days: float) -> str:
    return iso_z(api.clock.now() + timedelta(days=days))


def test_a_pause_until_with_a_note_is_shown_with_who_set_it(api: ApiUnderTest) -> None:
    create(api, "n1")
    until = in_days(api, 3)
    answer = api.client.post(
        f"{API}/schedule/n1/pause", json={"until": until, "note": "db migration"}, headers=ACME
    )
    assert answer.status_code == 202, answer.get_json()
    for shown in (answer.get_json(), get(api, "n1")):
        assert shown["status"] == "paused"
        assert (shown["paused_until"], shown["pause_note"]) == (until, "db migration")
        digest = hashlib.sha256(ACME_KEY.encode()).hexdigest()
        assert shown["pause_set_by"] == f"key {digest[:12]}"
        assert shown["paused_reason"] == f"paused by its owner until {until}"
    # A resume clears the pause and what it said.
    resumed = api.client.post(f"{API}/schedule/n1/resume", headers=ACME).get_json()
    assert resumed["status"] == "active"
    assert (resumed["paused_until"], resumed["pause_note"], resumed["pause_set_by"]) == (
        None,
        None,
        None,
    )


def test_a_bulk_pause_says_who_set_it_as_a_pause_one_by_one_does(api: ApiUnderTest) -> None:
    create(api, "b1")
    create(api, "b2")
    answer = api.client.post(
        f"{API}/schedules/bulk",
        json={"action": "pause", "selector": {"ids": ["b1", "b2"]}},
        headers=ACME,
    )
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["changed"] == 2
    digest = hashlib.sha256(ACME_KEY.encode()).hexdigest()
    for schedule_id in ("b1", "b2"):
        shown = get(api, schedule_id)
        assert shown["status"] == "paused"
        assert (shown["paused_until"], shown["pause_note"]) == (None, None)
        assert shown["pause_set_by"] == f"key {digest[:12]}"
    resumed = api.client.post(
        f"{API}/schedules/bulk",
        json={"action": "resume", "selector": {"ids": ["b1"]}},
        headers=ACME,
    )
    assert resumed.status_code == 200 and get(api, "b1")["pause_set_by"] is None


def test_a_stored_key_is_named_and_a_pause_without_a_body_has_no_end(api: ApiUnderTest) -> None:
    digest = auth.hash_key(STORED_KEY)
    api.backends.store.add_api_key(ApiKey(digest, "acme", "deploy-bot", api.clock.now()))
    create(api, "n2")
    answer = api.client.post(f"{API}/schedule/n2/pause", headers={"X-API-Key": STORED_KEY})
    assert answer.status_code == 202
    shown = answer.get_json()
    assert shown["pause_set_by"] == f"deploy-bot ({digest[:12]})"
    assert (shown["paused_until"], shown["pause_note"]) == (None, None)


def test_a_bad_until_or_note_is_refused_naming_it_and_nothing_changes(api: ApiUnderTest) -> None:
    create(api, "n3")
    one_time = {**BODY, "schedule": {"at": in_days(api, 1)}}
    create(api, "once", one_time)
    ending = {
        **BODY,
        "schedule": {
            "interval": {"number": 1, "unit": "hour"},
            "end": in_days(api, 2),
        },
    }
    create(api, "ending", ending)
    cases = [
        ("n3", {"until": in_days(api, -1)}, "until"),  # passed
        ("n3", {"until": "tomorrow"}, "until"),
        ("n3", {"until": "2030-01-01T00:00:00"}, "until"),  # no offset
        ("n3", {"until": 1}, "until"),
        ("n3", {"note": "x" * 501}, "note"),
        ("n3", {"note": 5}, "note"),
        ("n3", {"reason": "x"}, "reason"),
        ("once", {"until": in_days(api, 2)}, "until"),  # after its one time
        ("ending", {"until": in_days(api, 3)}, "until"),  # after its end
    ]
    for schedule_id, body, field in cases:
        answer = api.client.post(f"{API}/schedule/{schedule_id}/pause", json=body, headers=ACME)
        assert answer.status_code == 400, (body, answer.get_json())
        assert [error["field"] for error in answer.get_json()["errors"]] == [field], body
        assert get(api, schedule_id)["status"] == "active"
    # Within the end it is fine.
    answer = api.client.post(
        f"{API}/schedule/ending/pause", json={"until": in_days(api, 1)}, headers=ACME
    )
    assert answer.status_code == 202, answer.get_json()


def test_another_tenant_can_neither_pause_nor_see_the_pause(api: ApiUnderTest) -> None:
    create(api, "n4")
    body = {"until": in_days(api, 1), "note": "not yours"}
    answer = api.client.post(f"{API}/schedule/n4/pause", json=body, headers=GLOBEX)
    assert answer.status_code == 404
    assert get(api, "n4")["status"] == "active"
    api.client.post(f"{API}/schedule/n4/pause", json={"note": "mine"}, headers=ACME)
    assert api.client.get(f"{API}/schedule/n4", headers=GLOBEX).status_code == 404
    listed = api.client.get(f"{API}/schedules", headers=GLOBEX).get_json()["items"]
    assert listed == []


def test_the_poller_resumes_an_ended_pause_once(api: ApiUnderTest) -> None:
    create(api, "n5")
    until = api.clock.now() + timedelta(hours=1)
    api.client.post(f"{API}/schedule/n5/pause", json={"until": iso_z(until)}, headers=ACME)
    store = api.backends.store
    paused = store.get_schedule("acme", "n5")
    assert paused is not None and paused.next_schedule_time is not None
    assert store.resume_ended_pauses(until - timedelta(seconds=1), 10) == []
    # Two pollers at once: one resumes it.
    first = store.resume_ended_pauses(until, 10)
    second = store.resume_ended_pauses(until, 10)
    assert [schedule.schedule_id for schedule in first + second] == ["n5"]
    resumed = store.get_schedule("acme", "n5")
    assert resumed is not None
    assert resumed.status.value == "active"
    assert resumed.next_schedule_time == paused.next_schedule_time
    assert resumed.state_revision > paused.state_revision
    assert (resumed.paused_until, resumed.pause_note, resumed.pause_set_by) == (None, None, None)
