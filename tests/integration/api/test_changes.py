"""A schedule's change history (``GET /schedule/{id}/changes``), as a user reads it: every change
made through the API, newest first, with who made it and what changed, secrets masked."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from polling_worker.worker import Poller
from scheduler_service import auth
from scheduler_service.requests.queries import encode_cursor
from shared.formats import execution_cursor
from shared.ports import ApiKey, Role
from shared.redaction import MASK
from shared.timeutil import UTC, iso_z, parse_iso
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

WRITER_KEY = "sk_writer_0123456789abcdef"
READER_KEY = "sk_reader_0123456789abcdef"
GLOBEX_KEY = "sk_globex_0123456789abcdef"
FIRST_SECRET = "first-s3cret-value-7Qx"
SECOND_SECRET = "second-s3cret-value-9Zy"

BODY: dict[str, Any] = {
    "name": "nightly",
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/n",
        "headers": {"Authorization": f"Bearer {FIRST_SECRET}", "X-Team": "billing"},
    },
    "tags": ["t"],
}


def key(api: ApiUnderTest, secret: str, tenant: str, name: str, role: Role) -> dict[str, str]:
    api.backends.store.add_api_key(
        ApiKey(auth.hash_key(secret), tenant, name, datetime.now(UTC), role)
    )
    return {"X-API-Key": secret}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys") as under_test:
        yield under_test


def changes_of(api: ApiUnderTest, schedule_id: str, headers: dict[str, str]) -> Any:
    answer = api.client.get(f"{API}/schedule/{schedule_id}/changes", headers=headers)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def fields_of(change: dict[str, Any]) -> dict[str, tuple[Any, Any, bool]]:
    return {item["path"]: (item["old"], item["new"], item["secret"]) for item in change["fields"]}


def test_every_change_is_listed_newest_first_with_its_actor_revision_and_fields(
    api: ApiUnderTest,
) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    path = f"{API}/schedule/nightly"
    before = datetime.now(UTC)
    revisions = [api.client.put(path, json=BODY, headers=writer).get_json()["revision"]]
    api.apply()
    patch = {
        "payload": {"url": "https://hooks.example.com/v2"},
        "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
    }
    revisions.append(api.client.patch(path, json=patch, headers=writer).get_json()["revision"])
    api.apply()
    revisions.append(api.client.post(f"{path}/pause", headers=writer).get_json()["revision"])
    api.client.post(f"{path}/resume", headers=writer)
    replaced = {**BODY, "tags": ["t", "u"]}
    revisions.append(api.client.put(path, json=replaced, headers=writer).get_json()["revision"])
    api.apply()
    assert api.client.delete(path, headers=writer).status_code == 202
    after = datetime.now(UTC)

    page = changes_of(api, "nightly", writer)
    assert page["schedule_status"] == "deleted"
    assert page["next_cursor"] is None
    items = page["items"]
    assert [item["action"] for item in items] == [
        "delete",
        "replace",
        "resume",
        "pause",
        "patch",
        "create",
    ]
    digest = auth.hash_key(WRITER_KEY)[:12]
    assert {
        (item["actor"]["kind"], item["actor"]["key_id"], item["actor"]["name"]) for item in items
    } == {("api_key", digest, "deploy-bot")}
    # The revisions each answer gave, in the history; newest first, each time in the run.
    assert items[1]["revision"] == revisions[3]
    assert items[4]["revision"] == revisions[1]
    assert items[5]["revision"] == revisions[0]
    assert [item["revision"] for item in items] == sorted(
        (item["revision"] for item in items), reverse=True
    )
    for item in items:
        assert before <= parse_iso(item["at"]) <= after

    created = fields_of(items[5])
    assert created["name"] == (None, "nightly", False)
    assert created["schedule.cron"] == (None, "0 2 * * *", False)
    assert created["timezone"] == (None, "Europe/Paris", False)
    assert created["payload.headers.X-Team"] == (None, "billing", False)
    assert created["payload.headers.Authorization"] == (None, MASK, True)
    assert fields_of(items[4]) == {
        "payload.url": ("https://hooks.example.com/n", "https://hooks.example.com/v2", False),
        "schedule.cron": ("0 2 * * *", "0 3 * * *", False),
    }
    assert fields_of(items[3]) == {"state": ("active", "paused", False)}
    assert fields_of(items[2]) == {"state": ("paused", "active", False)}
    # The replace sent the first URL and cron again, and one more tag.
    assert fields_of(items[1]) == {
        "payload.url": ("https://hooks.example.com/v2", "https://hooks.example.com/n", False),
        "schedule.cron": ("0 3 * * *", "0 2 * * *", False),
        "tags": (["t"], ["t", "u"], False),
    }
    assert fields_of(items[0]) == {"state": ("active", "deleted", False)}


def test_a_secrets_change_shows_that_it_changed_never_its_value(api: ApiUnderTest) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    path = f"{API}/schedule/signed"
    api.client.put(path, json=BODY, headers=writer)
    api.apply()
    rotated = {"payload": {"headers": {"Authorization": f"Bearer {SECOND_SECRET}"}}}
    assert api.client.patch(path, json=rotated, headers=writer).status_code == 202
    api.apply()

    answer = api.client.get(f"{API}/schedule/signed/changes", headers=writer)
    latest = answer.get_json()["items"][0]
    assert latest["action"] == "patch"
    assert fields_of(latest) == {"payload.headers.Authorization": (MASK, MASK, True)}
    for secret in (FIRST_SECRET, SECOND_SECRET):
        assert secret not in answer.get_data(as_text=True)
    # Nor in the changes the store keeps, nor anywhere in its file (or its queues').
    database = Path(api.settings.store_url.removeprefix("sqlite:///"))
    with sqlite3.connect(database) as connection:
        stored = repr(connection.execute("SELECT * FROM schedule_changes").fetchall())
    assert "payload.headers.Authorization" in stored
    files = b"".join(path.read_bytes() for path in database.parent.glob(f"{database.name}*"))
    for secret in (FIRST_SECRET, SECOND_SECRET):
        assert secret not in stored
        assert secret.encode() not in files


def test_the_history_comes_a_page_at_a_time(api: ApiUnderTest) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    path = f"{API}/schedule/paged"
    api.client.put(path, json=BODY, headers=writer)
    api.apply()
    for _ in range(3):
        api.client.post(f"{path}/pause", headers=writer)
        api.client.post(f"{path}/resume", headers=writer)
    whole = changes_of(api, "paged", writer)["items"]
    assert len(whole) == 7
    seen: list[Any] = []
    url = f"{path}/changes?limit=3"
    while True:
        page = api.client.get(url, headers=writer).get_json()
        assert len(page["items"]) <= 3
        seen.extend(page["items"])
        if page["next_cursor"] is None:
            break
        url = f"{path}/changes?limit=3&cursor={page['next_cursor']}"
    assert seen == whole

    # A cursor of the runs' history is not one of the changes'.
    runs_cursor = encode_cursor(execution_cursor(datetime.now(UTC), "paged:x"), "e")
    for bad in ("nonsense", runs_cursor, encode_cursor("12x", "c")):
        refused = api.client.get(f"{path}/changes?cursor={bad}", headers=writer)
        assert refused.status_code == 400
        assert [error["field"] for error in refused.get_json()["errors"]] == ["cursor"]
    refused = api.client.get(f"{path}/changes?limit=0", headers=writer)
    assert refused.status_code == 400
    assert [error["field"] for error in refused.get_json()["errors"]] == ["limit"]


def test_another_tenant_cannot_read_the_changes_and_a_read_key_can(api: ApiUnderTest) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    reader = key(api, READER_KEY, "acme", "dashboard", Role.READ)
    globex = key(api, GLOBEX_KEY, "globex", "globex-admin", Role.ADMIN)
    api.client.put(f"{API}/schedule/mine", json=BODY, headers=writer)
    api.apply()
    assert [item["action"] for item in changes_of(api, "mine", reader)["items"]] == ["create"]
    refused = api.client.get(f"{API}/schedule/mine/changes", headers=globex)
    assert refused.status_code == 404
    assert refused.mimetype == "application/problem+json"
    # Nor once deleted, nor by a schedule of its own with the same id.
    api.client.put(f"{API}/schedule/mine", json={**BODY, "name": "globex's"}, headers=globex)
    api.apply()
    api.client.delete(f"{API}/schedule/mine", headers=writer)
    theirs = changes_of(api, "mine", globex)["items"]
    assert [(item["action"], item["actor"]["name"]) for item in theirs] == [
        ("create", "globex-admin")
    ]
    ours = changes_of(api, "mine", reader)
    assert ours["schedule_status"] == "deleted"
    assert [item["action"] for item in ours["items"]] == ["delete", "create"]


def test_an_unknown_schedule_has_no_history(api: ApiUnderTest) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    assert api.client.get(f"{API}/schedule/nobody/changes", headers=writer).status_code == 404
    # A delete of an unknown id leaves a tombstone, and no change.
    assert api.client.delete(f"{API}/schedule/nobody", headers=writer).status_code == 404
    assert api.client.get(f"{API}/schedule/nobody/changes", headers=writer).status_code == 404
    assert api.client.get(f"{API}/schedule/no:pe/changes", headers=writer).status_code == 400


def test_the_openapi_document_describes_the_history(api: ApiUnderTest) -> None:
    document = api.client.get("/openapi.json").get_json()
    operation = document["paths"]["/scheduler-service/v1/schedule/{schedule_id}/changes"]["get"]
    assert operation["operationId"] == "listChanges"
    assert operation["x-required-role"] == "read"
    assert {"200", "400", "404"} <= set(operation["responses"])
    assert {parameter["name"] for parameter in operation["parameters"]} >= {"limit", "cursor"}
    schemas = document["components"]["schemas"]
    page = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert schemas[page.rsplit("/", 1)[1]]["properties"]["items"]["description"]
    for name, fields in (
        ("Change", {"at", "action", "revision", "actor", "fields"}),
        ("Actor", {"kind", "key_id", "name"}),
        ("FieldChange", {"path", "old", "new", "secret"}),
    ):
        properties = schemas[name]["properties"]
        assert set(properties) == fields
        assert all(properties[field].get("description") for field in fields), name


def test_a_bulk_pause_and_patch_land_in_each_schedules_history(api: ApiUnderTest) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    for schedule_id in ("b1", "b2"):
        api.client.put(f"{API}/schedule/{schedule_id}", json=BODY, headers=writer)
    api.apply()
    selector = {"ids": ["b1", "b2"]}
    paused = api.client.post(
        f"{API}/schedules/bulk",
        json={"action": "pause", "selector": selector, "dry_run": False},
        headers=writer,
    )
    assert paused.status_code == 200, paused.get_json()
    patched = api.client.post(
        f"{API}/schedules/bulk",
        json={
            "action": "patch",
            "selector": selector,
            "patch": {"payload": {"url": "https://hooks.example.com/bulk"}},
            "dry_run": False,
        },
        headers=writer,
    )
    assert patched.status_code == 200, patched.get_json()
    api.apply()
    for schedule_id in ("b1", "b2"):
        items = changes_of(api, schedule_id, writer)["items"]
        assert [(item["action"], item["actor"]["name"]) for item in items] == [
            ("patch", "deploy-bot"),
            ("pause", "deploy-bot"),
            ("create", "deploy-bot"),
        ]
        assert fields_of(items[0]) == {
            "payload.url": ("https://hooks.example.com/n", "https://hooks.example.com/bulk", False)
        }
        assert fields_of(items[1]) == {"state": ("active", "paused", False)}


def test_skips_a_pause_until_and_its_end_by_the_poller_are_in_the_history(
    api: ApiUnderTest,
) -> None:
    writer = key(api, WRITER_KEY, "acme", "deploy-bot", Role.WRITE)
    path = f"{API}/schedule/nightly"
    api.client.put(path, json=BODY, headers=writer)
    api.apply()
    skipped = api.client.post(f"{path}/skip", json={"count": 2}, headers=writer).get_json()
    first, second = skipped["skips"]
    assert api.client.delete(f"{path}/skip?at={first}", headers=writer).status_code == 202
    until = api.clock.now() + timedelta(days=2)
    pause = {"until": iso_z(until), "note": "db migration"}
    assert api.client.post(f"{path}/pause", json=pause, headers=writer).status_code == 202
    # The pause ends by itself: a poller resumes the schedule at its until, as the system.
    # The stepped clock is the real time plus an offset: read once, the time the poller acts at
    # is a little after until, and the record says when the poller acted.
    api.clock.advance((until - api.clock.now()).total_seconds())
    resumed_at = api.clock.now()
    assert resumed_at >= until
    poller = Poller(api.backends.store, api.backends.queues.occurrences, api.settings, api.clock)
    assert poller.resume_ended_pauses(resumed_at) == 1

    items = changes_of(api, "nightly", writer)["items"]
    assert [item["action"] for item in items] == ["resume", "pause", "skip", "skip", "create"]
    assert items[0]["actor"] == {"kind": "system", "key_id": None, "name": "system"}
    assert fields_of(items[0]) == {"state": ("paused", "active", False)}
    assert parse_iso(items[0]["at"]) == resumed_at
    assert items[1]["actor"]["name"] == "deploy-bot"
    assert fields_of(items[1]) == {
        "state": ("active", "paused", False),
        "paused_until": (None, iso_z(until), False),
        "pause_note": (None, "db migration", False),
    }
    assert fields_of(items[2]) == {"skips": ([first, second], [second], False)}
    assert fields_of(items[3]) == {"skips": ([], [first, second], False)}
    stored = api.backends.store.get_schedule("acme", "nightly")
    assert stored is not None and items[0]["revision"] == stored.state_revision
