"""Webhook secrets: sealed in the store and on queue 1, never in an answer, kept on a replace
that sends the mask back, delivered intact to the webhook, and files only their owner reads."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from scheduler_cli.main import dev_settings
from shared.backends import open_backends
from tests.support.api import ApiUnderTest
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver

MASK = "********"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhY21lIiwiZXhwIjoxOTk5OTk5OTk5fQ.c2lnbmF0dXJlLW9mLWp3dA"
# Each finding of the adversarial run: a secret under a name the old patterns missed.
SECRETS = {
    "header1": "Basic ZmRhc3R2aGphc2JjOnBhc3N3b3Jk",
    "X-Authorization": "Bearer xyzzy-bearer-credential-1",
    "Authentication": "plain-authentication-value-2",
    "key": "query-key-value-3",
    "Authorization": "masked-by-name-4",
}
URL = f"https://hooks.example.com/v1/{JWT}/run?key=in-url-key-5&page=2"
PAYLOAD: dict[str, Any] = {
    "method": "POST",
    "url": URL,
    "headers": {
        "header1": SECRETS["header1"],
        "X-Authorization": SECRETS["X-Authorization"],
        "Authentication": SECRETS["Authentication"],
        "Authorization": SECRETS["Authorization"],
        "X-Trace": "visible-trace",
    },
    "queryParameters": {"key": SECRETS["key"], "page": "2"},
    "body": {"report": "daily"},
}
BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": PAYLOAD,
}
SECRET_VALUES = [*SECRETS.values(), JWT, "in-url-key-5", "ZmRhc3R2aGphc2Jj"]


def put(api: ApiUnderTest, schedule_id: str, body: dict[str, Any]) -> Any:
    return api.client.put(f"{API}/schedule/{schedule_id}", json=body)


def stored_payload(api: ApiUnderTest, schedule_id: str) -> Any:
    schedule = api.backends.store.get_schedule("default", schedule_id)
    assert schedule is not None
    return schedule.live_definition.payload


def assert_stored_whole(api: ApiUnderTest, schedule_id: str) -> None:
    """What the processor and the executor read back: every secret as it was sent."""
    payload = stored_payload(api, schedule_id)
    assert payload.url == URL
    assert dict(payload.headers) == PAYLOAD["headers"]
    assert dict(payload.query) == PAYLOAD["queryParameters"]


def assert_no_secret(text: str) -> None:
    for value in SECRET_VALUES:
        assert value not in text


def test_the_queue_1_message_and_the_stored_row_hold_no_secret(api: ApiUnderTest) -> None:
    assert put(api, "s1", BODY).status_code == 202
    messages = api.backends.queues.mutations.receive(10, 0.0, 30.0)
    assert len(messages) == 1
    assert_no_secret(messages[0].body)
    api.backends.queues.mutations.change_visibility(messages[0].receipt_handle, 0.0)
    api.apply()
    database = api.backends.store.db  # type: ignore[attr-defined]
    (row,) = database.connection().execute("SELECT * FROM schedules").fetchall()
    assert_no_secret(json.dumps(dict(row)))
    assert_stored_whole(api, "s1")


def test_no_answer_shows_a_secret_by_name_or_by_shape(api: ApiUnderTest) -> None:
    put(api, "s1", BODY)
    api.apply()
    answers = [
        api.client.get(f"{API}/schedule/s1"),
        api.client.get(f"{API}/schedules"),
        api.client.post(f"{API}/schedule/s1/pause"),
        api.client.post(f"{API}/schedule/s1/resume"),
        put(api, "s1", BODY),
    ]
    for answer in answers:
        assert answer.status_code in (200, 202)
        assert_no_secret(answer.get_data(as_text=True))
    view = answers[0].get_json()["payload"]
    assert view["headers"] == {
        "header1": MASK,
        "X-Authorization": MASK,
        "Authentication": MASK,
        "Authorization": MASK,
        "X-Trace": "visible-trace",
    }
    assert view["queryParameters"] == {"key": MASK, "page": "2"}
    assert view["url"] == f"https://hooks.example.com/v1/{MASK}/run?key={MASK}&page=2"


def test_a_replace_that_sends_the_masks_back_keeps_the_stored_secrets(api: ApiUnderTest) -> None:
    put(api, "s1", BODY)
    api.apply()
    shown = api.client.get(f"{API}/schedule/s1").get_json()
    renamed = {**BODY, "name": "renamed", "payload": shown["payload"]}
    assert put(api, "s1", renamed).status_code == 202
    api.apply()
    assert api.client.get(f"{API}/schedule/s1").get_json()["name"] == "renamed"
    assert_stored_whole(api, "s1")


def test_a_replace_with_a_new_value_replaces_the_secret_unread(api: ApiUnderTest) -> None:
    put(api, "s1", BODY)
    api.apply()
    shown = api.client.get(f"{API}/schedule/s1").get_json()["payload"]
    headers = {**shown["headers"], "X-Authorization": "Bearer the-new-one-6"}
    assert put(api, "s1", {**BODY, "payload": {**shown, "headers": headers}}).status_code == 202
    api.apply()
    payload = stored_payload(api, "s1")
    assert payload.headers["X-Authorization"] == "Bearer the-new-one-6"
    assert payload.headers["header1"] == SECRETS["header1"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"headers": {"X-Other": MASK}}, "payload.headers.X-Other"),
        ({"queryParameters": {"token": MASK}}, "payload.queryParameters.token"),
        ({"url": f"https://hooks.example.com/v2/{MASK}/run"}, "payload.url"),
    ],
)
def test_a_mask_that_matches_no_stored_value_is_refused_naming_the_field(
    api: ApiUnderTest, change: dict[str, Any], field: str
) -> None:
    put(api, "s1", BODY)
    api.apply()
    answer = put(api, "s1", {**BODY, "payload": {**PAYLOAD, **change}})
    assert answer.status_code == 400
    assert field in [error["field"] for error in answer.get_json()["errors"]]
    created = api.client.post(f"{API}/schedule", json={**BODY, "payload": {**PAYLOAD, **change}})
    assert created.status_code == 400


def test_the_webhook_gets_the_secrets_the_store_sealed(tmp_path: Path) -> None:
    with running_receiver() as receiver:
        settings = sqlite_settings(tmp_path)
        payload = {
            "method": "POST",
            "url": f"{receiver.url}/hook/{JWT}?key=in-url-key-5",
            "headers": {"X-Authorization": SECRETS["X-Authorization"]},
            "queryParameters": {"token": "query-token-7"},
        }
        with running_pipeline(settings) as pipeline:
            body = {
                "schedule": {"interval": {"number": 1, "unit": "second"}, "timezone": "UTC"},
                "payload": payload,
            }
            answer = pipeline.client.post(f"{API}/schedule", json=body)
            assert answer.status_code == 202, answer.get_json()
            (call, *_) = receiver.wait_for(1, timeout=10.0)
    assert call.path == f"/hook/{JWT}"
    assert call.query == {"key": ["in-url-key-5"], "token": ["query-token-7"]}
    assert call.headers["x-authorization"] == SECRETS["X-Authorization"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_files_are_readable_by_their_owner_only(tmp_path: Path) -> None:
    settings = dev_settings("127.0.0.1", 0, tmp_path / "data")
    backends = open_backends(settings)
    try:
        backends.store.ping()
        data = tmp_path / "data"
        files = [data / "scheduler.db", data / "secret-keys", data / "webhook-secret"]
        files += [path for path in data.iterdir() if path.name.startswith("scheduler.db-")]
        assert len(files) >= 4  # the WAL's files too
        for path in files:
            assert mode(path) == 0o600, path
        assert mode(data) == 0o700
    finally:
        backends.close()


BODY_SECRETS = {
    "grant_type": "client_credentials",
    "client_secret": "body-secret-8",
    "nested": [{"password": "body-secret-9", "note": "Bearer body-secret-10"}],
}


def test_a_json_body_shows_its_secret_members_masked_and_keeps_them_on_a_replace(
    api: ApiUnderTest,
) -> None:
    put(api, "s1", {**BODY, "payload": {**PAYLOAD, "body": BODY_SECRETS}})
    api.apply()
    shown = api.client.get(f"{API}/schedule/s1")
    assert "body-secret" not in shown.get_data(as_text=True)
    assert shown.get_json()["payload"]["body"] == {
        "grant_type": "client_credentials",
        "client_secret": MASK,
        "nested": [{"password": MASK, "note": MASK}],
    }
    assert put(api, "s1", {**BODY, "payload": shown.get_json()["payload"]}).status_code == 202
    api.apply()
    assert stored_payload(api, "s1").body == BODY_SECRETS
    edited = {**shown.get_json()["payload"]["body"], "grant_type": "password"}
    answer = put(api, "s1", {**BODY, "payload": {**PAYLOAD, "body": edited}})
    assert answer.status_code == 400
    assert [error["field"] for error in answer.get_json()["errors"]] == ["payload.body"]


def test_a_form_body_shows_its_secret_fields_masked(api: ApiUnderTest) -> None:
    form = "grant_type=client_credentials&client_secret=body-secret-11"
    put(api, "s1", {**BODY, "payload": {**PAYLOAD, "body": form}})
    api.apply()
    shown = api.client.get(f"{API}/schedule/s1").get_json()["payload"]["body"]
    assert shown == f"grant_type=client_credentials&client_secret={MASK}"
