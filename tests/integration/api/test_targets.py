"""The API takes every kind of delivery target: an HTTP call (the default, with OAuth client
credentials and answer checks), a message on an SQS queue, a publish to an SNS topic; each bad
field is a 400 naming it, a placeholder it does not know included; answers mask the client
secret; a PATCH that names another kind replaces the payload whole."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.redaction import MASK
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
TOPIC = "arn:aws:sns:eu-west-1:123456789012:orders"
TIMING = {"cron": "0 9 * * *", "timezone": "Europe/Paris"}
AUTH = {
    "type": "oauth2_client_credentials",
    "token_url": "https://auth.example.com/oauth/token",
    "client_id": "scheduler",
    "client_secret": "a-client-secret-nobody-sees",
    "scopes": ["reports.write"],
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path) as under_test:
        yield under_test


def created(api: ApiUnderTest, payload: dict[str, Any]) -> dict[str, Any]:
    answer = api.client.post(
        f"{API}/schedule", json={"name": "Nightly", "schedule": TIMING, "payload": payload}
    )
    assert answer.status_code == 202, answer.get_json()
    api.apply()
    shown: dict[str, Any] = api.client.get(f"{API}/schedule/{answer.get_json()['id']}").get_json()
    return shown


def errors(api: ApiUnderTest, payload: Any) -> dict[str, str]:
    answer = api.client.post(f"{API}/schedule", json={"schedule": TIMING, "payload": payload})
    assert answer.status_code == 400, answer.get_json()
    assert api.queued() == 0
    return {error["field"]: error["message"] for error in answer.get_json()["errors"]}


def test_each_kind_is_taken_and_shown_back(api: ApiUnderTest) -> None:
    http = created(
        api,
        {
            "method": "POST",
            "url": "https://hooks.example.com/run?at={{ occurrence.scheduled_time }}",
            "body": {"run": "{{ occurrence.id }}"},
            "auth": AUTH,
            "expect": {"status": ["2xx", 304], "json": {"pointer": "/ok", "equals": True}},
        },
    )["payload"]
    assert http["kind"] == "http"
    assert http["auth"] == {**AUTH, "client_secret": MASK, "client_auth": "basic"}
    assert http["expect"] == {"status": ["2xx", 304], "json": {"pointer": "/ok", "equals": True}}
    assert http["body"] == {"run": "{{ occurrence.id }}"}
    assert "templated" not in http
    queue = created(
        api, {"kind": "sqs", "queue_url": QUEUE + ".fifo", "message_group_id": "g", "body": "x"}
    )["payload"]
    assert queue == {
        "kind": "sqs",
        "queue_url": QUEUE + ".fifo",
        "body": "x",
        "message_group_id": "g",
        "timeout_seconds": 10.0,
    }
    topic = created(
        api, {"kind": "sns", "topic_arn": TOPIC, "role_arn": "arn:aws:iam::123456789012:role/r"}
    )
    assert topic["payload"]["topic_arn"] == TOPIC
    assert topic["payload"]["role_arn"] == "arn:aws:iam::123456789012:role/r"


def test_a_body_without_a_kind_is_an_http_call_as_before(api: ApiUnderTest) -> None:
    shown = created(api, {"method": "GET", "url": "https://hooks.example.com/x"})
    assert shown["payload"]["kind"] == "http"
    assert shown["payload"]["method"] == "GET"


@pytest.mark.parametrize(
    ("payload", "named"),
    [
        ({"kind": "lambda"}, {"payload.kind"}),
        ({"kind": "sqs"}, {"payload.queue_url"}),
        ({"kind": "sqs", "queue_url": QUEUE, "method": "GET"}, {"payload.method"}),
        (
            {"kind": "sqs", "queue_url": "https://sqs.eu-west-1.evil.example/123456789012/q"},
            {"payload.queue_url"},
        ),
        (
            {"kind": "sqs", "queue_url": QUEUE.replace("orders", "scheduler-occurrences")},
            {"payload.queue_url"},
        ),
        (
            {"kind": "sqs", "queue_url": QUEUE, "role_arn": "arn:aws:iam::1:user/x"},
            {"payload.role_arn"},
        ),
        (
            {"kind": "sns", "topic_arn": QUEUE, "message_group_id": "a b"},
            {"payload.topic_arn", "payload.message_group_id"},
        ),
        (
            {"kind": "sns", "topic_arn": TOPIC, "body": {"a": ["{{ schedule.nam }}"]}},
            {"payload.body.a[0]"},
        ),
        ({"method": "GET", "url": "https://x.example.com/{{ schedule.id }}"}, {"payload.url"}),
        (
            {"method": "GET", "url": "https://x.example.com/", "headers": {"X-Run": "{{ run }}"}},
            {"payload.headers.X-Run"},
        ),
        (
            {"method": "GET", "url": "https://x.example.com/", "queryParameters": {"q": "{{ x"}},
            {"payload.queryParameters.q"},
        ),
        (
            {
                "method": "GET",
                "url": "https://x.example.com/",
                "auth": {**AUTH, "token_url": "http://169.254.169.254/t"},
            },
            {"payload.auth.token_url"},
        ),
        (
            {
                "method": "GET",
                "url": "https://x.example.com/",
                "auth": {**AUTH, "type": "password"},
            },
            {"payload.auth.type"},
        ),
        (
            {"method": "GET", "url": "https://x.example.com/", "auth": {**AUTH, "scopes": ["a b"]}},
            {"payload.auth.scopes.0"},
        ),
        (
            {"method": "GET", "url": "https://x.example.com/", "expect": {"status": [700]}},
            {"payload.expect.status.0"},
        ),
        (
            {
                "method": "GET",
                "url": "https://x.example.com/",
                "expect": {"json": {"pointer": "ok", "equals": 1}},
            },
            {"payload.expect.json.pointer"},
        ),
        ("https://x.example.com/", {"payload"}),
    ],
)
def test_each_bad_field_of_a_kind_is_named(
    api: ApiUnderTest, payload: Any, named: set[str]
) -> None:
    assert set(errors(api, payload)) == named


def test_an_unknown_placeholder_is_named_with_the_known_ones_and_the_escape(
    api: ApiUnderTest,
) -> None:
    found = errors(
        api,
        {"method": "POST", "url": "https://x.example.com/", "body": {"n": "{{ occurence.id }}"}},
    )
    message = found["payload.body.n"]
    assert "unknown placeholder {{ occurence.id }}" in message
    assert "{{ occurrence.id }}" in message and "\\{{" in message


def test_a_replace_keeps_a_client_secret_sent_back_masked(api: ApiUnderTest) -> None:
    shown = created(api, {"method": "GET", "url": "https://hooks.example.com/x", "auth": AUTH})
    body = {"name": "Nightly", "schedule": TIMING, "payload": shown["payload"]}
    assert api.client.put(f"{API}/schedule/{shown['id']}", json=body).status_code == 202
    api.apply()
    stored = api.backends.store.get_schedule("default", shown["id"])
    assert stored is not None
    assert stored.live_definition.payload.auth.client_secret == AUTH["client_secret"]


def test_a_patch_naming_another_kind_replaces_the_payload_whole(api: ApiUnderTest) -> None:
    shown = created(api, {"method": "POST", "url": "https://hooks.example.com/x", "body": {"a": 1}})
    patched = api.client.patch(
        f"{API}/schedule/{shown['id']}",
        json={"payload": {"kind": "sns", "topic_arn": TOPIC}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 202, patched.get_json()
    api.apply()
    payload = api.client.get(f"{API}/schedule/{shown['id']}").get_json()["payload"]
    assert payload == {"kind": "sns", "topic_arn": TOPIC, "body": None, "timeout_seconds": 10.0}
    # A patch of the same kind merges, as ever.
    merged = api.client.patch(
        f"{API}/schedule/{shown['id']}",
        json={"payload": {"body": "hello {{ schedule.name }}"}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert merged.status_code == 202
    api.apply()
    payload = api.client.get(f"{API}/schedule/{shown['id']}").get_json()["payload"]
    assert payload["topic_arn"] == TOPIC and payload["body"] == "hello {{ schedule.name }}"
