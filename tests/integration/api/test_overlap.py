"""The overlap policy of a schedule through the API: accepted, shown, patched, refused with the
field named; stored in the definition (the executor's decision: tests/integration/executor/
test_overlap.py)."""

from __future__ import annotations

from typing import Any

from shared.model import OverlapPolicy
from tests.integration.api.test_runs import BODY, create, problem_fields
from tests.support.api import ApiUnderTest
from tests.support.harness import API


def shown(api: ApiUnderTest, schedule_id: str) -> Any:
    return api.client.get(f"{API}/schedule/{schedule_id}").get_json()["overlap"]


def test_overlap_is_allow_unless_asked_and_is_kept_with_the_definition(api: ApiUnderTest) -> None:
    create(api, "o1")
    create(api, "o2", overlap="skip")
    create(api, "o3", overlap="buffer_one")
    assert [shown(api, name) for name in ("o1", "o2", "o3")] == ["allow", "skip", "buffer_one"]
    stored = api.backends.store.get_schedule("default", "o3")
    assert stored is not None and stored.definition is not None
    assert stored.definition.overlap is OverlapPolicy.BUFFER_ONE
    listed = api.client.get(f"{API}/schedules").get_json()["items"]
    assert {item["id"]: item["overlap"] for item in listed} == {
        "o1": "allow",
        "o2": "skip",
        "o3": "buffer_one",
    }


def test_a_bad_overlap_is_refused_naming_it_and_nothing_changes(api: ApiUnderTest) -> None:
    create(api, "o4", overlap="skip")
    for bad in ("SKIP", "forbid", "", None, 1, True, ["skip"], {"policy": "skip"}):
        response = api.client.put(f"{API}/schedule/o4", json={**BODY, "overlap": bad})
        assert problem_fields(response) == ["overlap"], bad
        response = api.client.post(f"{API}/schedule", json={**BODY, "overlap": bad})
        assert problem_fields(response) == ["overlap"], bad
    assert problem_fields(api.client.patch(f"{API}/schedule/o4", json={"overlap": "x"})) == [
        "overlap"
    ]
    assert api.queued() == 0
    assert shown(api, "o4") == "skip"


def test_a_patch_changes_the_overlap_and_null_restores_the_default(api: ApiUnderTest) -> None:
    create(api, "o5")
    assert api.client.patch(f"{API}/schedule/o5", json={"overlap": "buffer_one"}).status_code == 202
    api.apply()
    assert shown(api, "o5") == "buffer_one"
    assert api.client.patch(f"{API}/schedule/o5", json={"overlap": None}).status_code == 202
    api.apply()
    assert shown(api, "o5") == "allow"


def test_the_openapi_document_shows_the_overlap_values(api: ApiUnderTest) -> None:
    schemas = api.client.get("/openapi.json").get_json()["components"]["schemas"]
    for name in ("ScheduleView", "ScheduleBody"):
        assert schemas[name]["properties"]["overlap"]["enum"] == ["allow", "skip", "buffer_one"]
    assert "overlap" in schemas["SchedulePatch"]["properties"]
