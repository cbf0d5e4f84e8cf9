"""``POST /schedule/{id}/diff``: what a PUT of the body would change, nothing stored; refused as
the PUT would refuse it; within the caller's tenant only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME = {"X-API-Key": "sk_diff_acme_0123456789"}
GLOBEX = {"X-API-Key": "sk_diff_globex_0123456789"}
BODY: dict[str, Any] = {
    "name": "invoices",
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/invoices",
        "headers": {"Authorization": "Bearer s3cret-token"},
    },
    "tags": ["billing"],
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme:{ACME['X-API-Key']}", f"globex:{GLOBEX['X-API-Key']}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        yield api


def diff(api: ApiUnderTest, body: dict[str, Any], key: dict[str, str] = ACME) -> Any:
    answer = api.client.post(f"{API}/schedule/inv/diff", json=body, headers=key)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def test_create_update_and_unchanged_as_a_put_would_store_it(api: ApiUnderTest) -> None:
    assert diff(api, BODY) == {"id": "inv", "action": "create", "changes": []}
    api.apply()
    assert api.client.get(f"{API}/schedule/inv", headers=ACME).status_code == 404  # nothing

    assert api.client.put(f"{API}/schedule/inv", json=BODY, headers=ACME).status_code == 202
    api.apply()
    assert diff(api, BODY)["action"] == "unchanged"
    # Defaults written out, the same schedule.
    explicit = {**BODY, "priority": 5, "retry": {"max_attempts": 5}, "jitter_seconds": 0}
    assert diff(api, explicit)["action"] == "unchanged"
    # Sent back as a GET shows it (secret masked), nothing changes either.
    shown = api.client.get(f"{API}/schedule/inv", headers=ACME).get_json()
    assert shown["payload"]["headers"]["Authorization"] != "Bearer s3cret-token"
    assert diff(api, {**BODY, "payload": shown["payload"]})["action"] == "unchanged"

    changed = {
        **BODY,
        "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
        "payload": {**BODY["payload"], "headers": {"Authorization": "Bearer other"}},
        "tags": [],
        "managed_by": "repo",
    }
    answer = diff(api, changed)
    assert answer["action"] == "update"
    assert answer["changes"] == [
        "managed_by",
        "payload.headers.Authorization",
        "schedule.cron",
        "tags",
    ]
    assert "Bearer other" not in str(answer)
    stored = api.backends.store.get_schedule("acme", "inv")
    assert stored is not None and stored.live_definition.body()["schedule"] == BODY["schedule"]


def test_a_body_a_put_would_refuse_is_refused_with_its_fields_named(api: ApiUnderTest) -> None:
    bad = {**BODY, "schedule": {"cron": "0 2 31 2 *", "timezone": "Europe/Paris"}, "priority": 12}
    answer = api.client.post(f"{API}/schedule/inv/diff", json=bad, headers=ACME)
    assert answer.status_code == 400
    assert {error["field"] for error in answer.get_json()["errors"]} == {
        "schedule.cron",
        "priority",
    }
    # A masked secret with nothing stored to keep: a PUT would send ******** to the target.
    masked = {**BODY, "payload": {**BODY["payload"], "headers": {"Authorization": "********"}}}
    answer = api.client.post(f"{API}/schedule/inv/diff", json=masked, headers=ACME)
    assert answer.status_code == 400
    assert [error["field"] for error in answer.get_json()["errors"]] == [
        "payload.headers.Authorization"
    ]
    other = api.client.post(f"{API}/schedule/inv/diff", json={**BODY, "id": "x"}, headers=ACME)
    assert other.status_code == 400 and other.get_json()["errors"][0]["field"] == "id"


def test_another_tenants_schedule_of_the_same_id_is_neither_seen_nor_touched(
    api: ApiUnderTest,
) -> None:
    assert api.client.put(f"{API}/schedule/inv", json=BODY, headers=ACME).status_code == 202
    api.apply()
    # globex sees no schedule inv: its PUT would create its own.
    assert diff(api, {**BODY, "tags": []}, GLOBEX)["action"] == "create"
    # Its masked secret cannot reach acme's stored one.
    shown = api.client.get(f"{API}/schedule/inv", headers=ACME).get_json()
    answer = api.client.post(
        f"{API}/schedule/inv/diff", json={**BODY, "payload": shown["payload"]}, headers=GLOBEX
    )
    assert answer.status_code == 400
    assert answer.get_json()["errors"][0]["field"] == "payload.headers.Authorization"
    stored = api.backends.store.get_schedule("acme", "inv")
    assert stored is not None and stored.live_definition.tags == ("billing",)
