"""``POST /schedules/bulk``: pause, resume, delete or patch every schedule a selector matches, a
page at a time, as a user checks it: through ``GET /schedule/{id}`` and the listing."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_service.service import bulk
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME_KEY = "sk_acme_0123456789abcdef"
GLOBEX_KEY = "sk_globex_0123456789abcdef"
KEYS = (f"acme:{ACME_KEY}", f"globex:sha256:{hashlib.sha256(GLOBEX_KEY.encode()).hexdigest()}")
ACME = {"X-API-Key": ACME_KEY}
GLOBEX = {"X-API-Key": GLOBEX_KEY}
BULK = f"{API}/schedules/bulk"


def body(name: str, tags: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"cron": "0 2 * * *"},
        "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
        "tags": tags,
    }


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def make(api: ApiUnderTest, headers: dict[str, str], ids: list[str], tags: list[str]) -> None:
    for schedule_id in ids:
        put = api.client.put(
            f"{API}/schedule/{schedule_id}", json=body(f"job {schedule_id}", tags), headers=headers
        )
        assert put.status_code == 202, put.get_json()
    api.apply()


def status_of(api: ApiUnderTest, headers: dict[str, str], schedule_id: str) -> str:
    answer = api.client.get(f"{API}/schedule/{schedule_id}", headers=headers)
    return str(answer.get_json()["status"]) if answer.status_code == 200 else "gone"


def test_an_empty_selector_is_refused_naming_the_selector(api: ApiUnderTest) -> None:
    make(api, ACME, ["a1"], ["billing"])
    for request, field in [
        ({"action": "pause", "selector": {}}, "selector"),
        ({"action": "pause"}, "selector"),
        ({"action": "stop", "selector": {"tag": "billing"}}, "action"),
        ({"action": "pause", "selector": {"tag": "billing", "owner": "x"}}, "selector.owner"),
        ({"action": "pause", "selector": {"ids": ["a1"] * 1001}}, "selector.ids"),
        ({"action": "pause", "selector": {"ids": ["no/slash"]}}, "selector.ids"),
        ({"action": "pause", "selector": {"status": "deleted"}}, "selector.status"),
        ({"action": "patch", "selector": {"tag": "billing"}}, "patch"),
        ({"action": "pause", "selector": {"tag": "billing"}, "patch": {"priority": 1}}, "patch"),
        (
            {"action": "patch", "selector": {"tag": "billing"}, "patch": {"colour": 1}},
            "patch.colour",
        ),
        ({"action": "pause", "selector": {"tag": "billing"}, "continue": "nonsense"}, "continue"),
    ]:
        answer = api.client.post(BULK, json=request, headers=ACME)
        assert answer.status_code == 400, (request, answer.get_json())
        fields = [error["field"] for error in answer.get_json()["errors"]]
        assert field in fields, (request, answer.get_json())
    empty = api.client.post(BULK, json={"action": "delete", "selector": {}}, headers=ACME)
    assert "every schedule" in empty.get_data(as_text=True)
    assert status_of(api, ACME, "a1") == "active"


def test_a_dry_run_counts_and_samples_and_changes_nothing(api: ApiUnderTest) -> None:
    make(api, ACME, [f"b{n:02}" for n in range(15)], ["billing"])
    make(api, ACME, ["other"], ["search"])
    answer = api.client.post(
        BULK,
        json={"action": "delete", "selector": {"tag": "billing"}, "dry_run": True},
        headers=ACME,
    )
    assert answer.status_code == 200
    found = answer.get_json()
    assert found["matched"] == 15
    assert [item["id"] for item in found["sample"]] == [f"b{n:02}" for n in range(10)]
    searched = api.client.post(
        BULK,
        json={"action": "pause", "selector": {"search": "JOB B1"}, "dry_run": True},
        headers=ACME,
    ).get_json()
    assert [item["id"] for item in searched["sample"]] == [f"b{n}" for n in range(10, 15)]
    assert all(status_of(api, ACME, f"b{n:02}") == "active" for n in range(15))


def test_pause_then_resume_by_tag_and_prefix_counts_what_changed(api: ApiUnderTest) -> None:
    make(api, ACME, ["p1", "p2", "p3"], ["billing"])
    make(api, ACME, ["q1"], ["billing"])
    make(api, ACME, ["p9"], ["search"])
    api.client.post(f"{API}/schedule/p3/pause", headers=ACME)
    selector = {"tag": "billing", "name_prefix": "job p"}
    answer = api.client.post(BULK, json={"action": "pause", "selector": selector}, headers=ACME)
    assert answer.status_code == 200, answer.get_json()
    done = answer.get_json()
    assert (done["done"], done["continue"]) == (True, None)
    assert (done["matched"], done["changed"], done["unchanged"], done["failed"]) == (3, 2, 1, 0)
    assert (done["changed_ids"], done["unchanged_ids"]) == (["p1", "p2"], ["p3"])
    assert [status_of(api, ACME, one) for one in ("p1", "p2", "p3", "q1", "p9")] == [
        "paused",
        "paused",
        "paused",
        "active",
        "active",
    ]
    again = api.client.post(BULK, json={"action": "pause", "selector": selector}, headers=ACME)
    assert (again.get_json()["changed"], again.get_json()["unchanged"]) == (0, 3)
    resumed = api.client.post(
        BULK, json={"action": "resume", "selector": {"ids": ["p1", "p3", "q1"]}}, headers=ACME
    ).get_json()
    assert (resumed["changed_ids"], resumed["unchanged_ids"]) == (["p1", "p3"], ["q1"])
    assert [status_of(api, ACME, one) for one in ("p1", "p2", "p3")] == [
        "active",
        "paused",
        "active",
    ]


def test_delete_by_status_and_ids(api: ApiUnderTest) -> None:
    make(api, ACME, ["d1", "d2", "d3"], ["old"])
    api.client.post(f"{API}/schedule/d2/pause", headers=ACME)
    selector = {"ids": ["d1", "d2", "unknown"], "status": "paused"}
    answer = api.client.post(BULK, json={"action": "delete", "selector": selector}, headers=ACME)
    assert answer.get_json()["changed_ids"] == ["d2"]
    assert [status_of(api, ACME, one) for one in ("d1", "d2", "d3")] == ["active", "gone", "active"]
    assert status_of(api, ACME, "unknown") == "gone"


def test_a_patch_changes_each_through_the_patch_path(api: ApiUnderTest) -> None:
    make(api, ACME, ["t1", "t2"], ["billing"])
    patch = {"payload": {"url": "https://hooks.example.com/fixed"}, "priority": 2}
    request = {"action": "patch", "selector": {"tag": "billing"}, "patch": patch}
    answer = api.client.post(BULK, json=request, headers=ACME).get_json()
    assert (answer["changed"], answer["unchanged"], answer["failed"]) == (2, 0, 0)
    api.apply()
    for one in ("t1", "t2"):
        shown = api.client.get(f"{API}/schedule/{one}", headers=ACME).get_json()
        assert shown["payload"]["url"] == "https://hooks.example.com/fixed"
        assert shown["priority"] == 2
        assert shown["name"] == f"job {one}"
    again = api.client.post(BULK, json=request, headers=ACME).get_json()
    assert (again["changed"], again["unchanged"]) == (0, 2)


def test_an_invalid_patch_is_a_400_naming_the_field_and_changes_nothing(
    api: ApiUnderTest,
) -> None:
    make(api, ACME, ["v1", "v2"], ["billing"])
    for patch, field in [
        ({"schedule": {"cron": "not a cron"}}, "patch.schedule.cron"),
        ({"payload": {"url": "ftp://x"}}, "patch.payload.url"),
        ({"priority": "high"}, "patch.priority"),
    ]:
        request = {"action": "patch", "selector": {"tag": "billing"}, "patch": patch}
        answer = api.client.post(BULK, json=request, headers=ACME)
        assert answer.status_code == 400, answer.get_json()
        assert field in [error["field"] for error in answer.get_json()["errors"]], answer.get_json()
    assert api.queued() == 0
    api.apply()
    shown = api.client.get(f"{API}/schedule/v1", headers=ACME).get_json()
    assert shown["schedule"]["cron"] == "0 2 * * *"


def test_a_large_match_goes_in_parts_the_client_follows(
    api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [f"m{n:02}" for n in range(7)]
    make(api, ACME, ids, ["many"])
    monkeypatch.setattr(bulk, "PAGE", 2)
    monkeypatch.setattr(bulk, "TIME_BUDGET", 0.0)
    request: dict[str, Any] = {"action": "pause", "selector": {"tag": "many"}}
    parts, changed = 0, []
    while True:
        answer = api.client.post(BULK, json=request, headers=ACME).get_json()
        parts += 1
        changed += answer["changed_ids"]
        if answer["done"]:
            break
        assert answer["matched"] == 2 and answer["continue"]
        # A part tried again finds its schedules changed already.
        repeat = api.client.post(BULK, json=request, headers=ACME).get_json()
        assert repeat["unchanged"] == 2 and repeat["continue"] == answer["continue"]
        request["continue"] = answer["continue"]
    assert parts == 4
    assert changed == ids
    assert all(status_of(api, ACME, one) == "paused" for one in ids)


def test_an_idempotency_key_answers_a_repeat_as_the_first(api: ApiUnderTest) -> None:
    make(api, ACME, ["i1", "i2"], ["billing"])
    request = {"action": "pause", "selector": {"tag": "billing"}}
    headers = {**ACME, "Idempotency-Key": "incident-42"}
    first = api.client.post(BULK, json=request, headers=headers)
    repeat = api.client.post(BULK, json=request, headers=headers)
    assert first.get_json()["changed"] == 2
    assert repeat.get_json() == first.get_json()
    assert repeat.headers["Idempotent-Replayed"] == "true"
    other = api.client.post(
        BULK, json={"action": "resume", "selector": {"tag": "billing"}}, headers=headers
    )
    assert other.status_code == 409
    assert [status_of(api, ACME, one) for one in ("i1", "i2")] == ["paused", "paused"]


def test_a_selector_never_matches_another_tenants_schedules(api: ApiUnderTest) -> None:
    make(api, ACME, ["shared", "acme-1"], ["billing"])
    make(api, GLOBEX, ["shared", "globex-1"], ["billing"])
    for request in [
        {"action": "delete", "selector": {"tag": "billing"}, "dry_run": True},
        {"action": "delete", "selector": {"ids": ["globex-1", "shared"]}, "dry_run": True},
    ]:
        found = api.client.post(BULK, json=request, headers=ACME).get_json()
        assert "globex-1" not in [item["id"] for item in found["sample"]]
    counted = api.client.post(
        BULK,
        json={"action": "pause", "selector": {"tag": "billing"}, "dry_run": True},
        headers=ACME,
    ).get_json()
    assert counted["matched"] == 2
    deleted = api.client.post(
        BULK, json={"action": "delete", "selector": {"ids": ["globex-1", "shared"]}}, headers=ACME
    ).get_json()
    assert deleted["changed_ids"] == ["shared"]
    paused = api.client.post(
        BULK, json={"action": "pause", "selector": {"tag": "billing"}}, headers=ACME
    ).get_json()
    assert paused["changed_ids"] == ["acme-1"]
    assert [status_of(api, GLOBEX, one) for one in ("shared", "globex-1")] == ["active", "active"]
    assert [status_of(api, ACME, one) for one in ("shared", "acme-1")] == ["gone", "paused"]
