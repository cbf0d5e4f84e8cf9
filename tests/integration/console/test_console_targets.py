"""The console's form and pages for every kind of delivery target: an SQS message, an SNS
publish, an HTTP call with an OAuth token and answer checks; each created, shown, edited and
switched to another kind through the form, its secrets never on a page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from shared.targets.http import Payload
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload
from tests.integration.console.test_console import ACME_KEY, errors_beside_fields, form, log_in
from tests.support.api import ApiUnderTest, api_under_test

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo"
TOPIC = "arn:aws:sns:eu-west-1:123456789012:alerts"
ROLE = "arn:aws:iam::123456789012:role/scheduler"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=(f"acme:{ACME_KEY}",)) as api:
        log_in(api.client, ACME_KEY)
        yield api


def page(api: ApiUnderTest, path: str) -> str:
    answer = api.client.get(path)
    assert answer.status_code == 200, answer.status_code
    return unescape(answer.get_data(as_text=True))


def input_values(html: str) -> dict[str, str]:
    """Each input's value, and each select's chosen option."""
    values = dict(
        re.findall(r'<input id="f-[^"]+" name="([^"]+)" type="[^"]+" value="([^"]*)"', html)
    )
    for name, options in re.findall(
        r'<select id="f-[^"]+" name="([^"]+)"[^>]*>(.*?)</select>', html, re.S
    ):
        chosen = re.search(r'<option value="([^"]*)" selected', options)
        if chosen:
            values[name] = chosen.group(1)
    return values


def shown_errors(html: str) -> dict[str, str]:
    return {field: unescape(message) for field, message in errors_beside_fields(html).items()}


def stored_payload(api: ApiUnderTest, schedule_id: str) -> object:
    api.apply()
    stored = api.backends.store.get_schedule("acme", schedule_id)
    assert stored is not None
    return stored.live_definition.payload


def test_a_queue_message_created_shown_listed_and_edited_through_the_form(
    api: ApiUnderTest,
) -> None:
    # The form still holds the HTTP inputs (hidden by console.js): the body leaves them out.
    created = api.client.post(
        "/console/schedules/new",
        data=form(
            id="orders",
            **{
                "payload.kind": "sqs",
                "payload.queue_url": QUEUE,
                "payload.message_group_id": "billing",
                "payload.role_arn": ROLE,
                "payload.body": '{"run": "{{ occurrence.id }}"}',
            },
        ),
    )
    assert created.status_code == 303, errors_beside_fields(created.get_data(as_text=True))
    payload = stored_payload(api, "orders")
    assert isinstance(payload, QueuePayload)
    assert (payload.queue_url, payload.message_group_id, payload.role_arn) == (
        QUEUE,
        "billing",
        ROLE,
    )
    assert payload.body == {"run": "{{ occurrence.id }}"} and payload.templated

    shown = page(api, "/console/schedules/orders")
    for text in ("SQS message", QUEUE, "message group", "billing", ROLE, "{{ occurrence.id }}"):
        assert text in shown, text
    assert "SQS orders.fifo" in page(api, "/console/schedules")

    values = input_values(page(api, "/console/schedules/orders/edit"))
    assert values["payload.kind"] == "sqs"
    assert (values["payload.queue_url"], values["payload.message_group_id"]) == (QUEUE, "billing")

    saved = api.client.post(
        "/console/schedules/orders/edit",
        data=form(**{**values, "payload.message_group_id": "", "payload.body": '"plain"'}),
    )
    assert saved.status_code == 303, errors_beside_fields(saved.get_data(as_text=True))
    payload = stored_payload(api, "orders")
    assert isinstance(payload, QueuePayload)
    assert (payload.message_group_id, payload.body, payload.role_arn) == (None, "plain", ROLE)


def test_a_topic_replaces_a_call_when_the_form_changes_the_kind(api: ApiUnderTest) -> None:
    assert api.client.post("/console/schedules/new", data=form(id="alerts")).status_code == 303
    assert isinstance(stored_payload(api, "alerts"), Payload)
    values = input_values(page(api, "/console/schedules/alerts/edit"))
    assert values["payload.kind"] == "http"
    saved = api.client.post(
        "/console/schedules/alerts/edit",
        data=form(**{**values, "payload.kind": "sns", "payload.topic_arn": TOPIC}),
    )
    assert saved.status_code == 303, errors_beside_fields(saved.get_data(as_text=True))
    payload = stored_payload(api, "alerts")
    assert isinstance(payload, TopicPayload) and payload.topic_arn == TOPIC
    # The definition shows the topic; the change history (after it) names the old URL.
    shown = page(api, "/console/schedules/alerts").split('<section id="changes">')[0]
    assert "SNS publish" in shown and TOPIC in shown and "example.com/report" not in shown
    assert "SNS alerts" in page(api, "/console/schedules")


def test_an_http_call_with_a_token_and_answer_checks_its_secret_never_shown(
    api: ApiUnderTest,
) -> None:
    created = api.client.post(
        "/console/schedules/new",
        data=form(
            id="checked",
            **{
                "payload.auth.token_url": "https://auth.example.com/oauth/token",
                "payload.auth.client_id": "reports",
                "payload.auth.client_secret": "client-s3cret",
                "payload.auth.scopes": "reports:write, audit",
                "payload.expect.status": "200, 3xx",
                "payload.expect.json.pointer": "/state",
                "payload.expect.json.equals": '"done"',
                "payload.expect.body_contains": "ok",
            },
        ),
    )
    assert created.status_code == 303, errors_beside_fields(created.get_data(as_text=True))
    payload = stored_payload(api, "checked")
    assert isinstance(payload, Payload) and payload.auth is not None and payload.expect
    assert (payload.auth.client_secret, payload.auth.scopes) == (
        "client-s3cret",
        ("reports:write", "audit"),
    )
    assert payload.expect.statuses == ((200, 200), (300, 399))
    assert (payload.expect.json_pointer, payload.expect.json_equals) == ("/state", "done")

    shown = page(api, "/console/schedules/checked")
    assert "OAuth 2.0 client credentials from https://auth.example.com/oauth/token" in shown
    assert 'status 200, 3xx; /state is "done"; the body contains "ok"' in shown
    edit = page(api, "/console/schedules/checked/edit")
    assert "client-s3cret" not in shown and "client-s3cret" not in edit
    values = input_values(edit)
    assert values["payload.auth.scopes"] == "reports:write audit"
    # Saved with the secret as shown (masked): kept. The checks cleared: none.
    cleared = {name: "" for name in values if name.startswith("payload.expect.")}
    saved = api.client.post("/console/schedules/checked/edit", data=form(**{**values, **cleared}))
    assert saved.status_code == 303, errors_beside_fields(saved.get_data(as_text=True))
    payload = stored_payload(api, "checked")
    assert isinstance(payload, Payload) and payload.auth is not None
    assert payload.auth.client_secret == "client-s3cret" and payload.expect is None


def test_each_kinds_errors_are_shown_beside_their_inputs(api: ApiUnderTest) -> None:
    refused = api.client.post(
        "/console/schedules/new",
        data=form(
            **{
                "payload.kind": "sqs",
                "payload.queue_url": "https://example.com/not-a-queue",
                "payload.body": '{"run": "{{ occurence.id }}"}',
            }
        ),
    )
    assert refused.status_code == 422
    errors = shown_errors(refused.get_data(as_text=True))
    assert "not a queue URL" in errors["payload.queue_url"]
    assert "occurence.id" in errors["payload.body"]
    checks = api.client.post(
        "/console/schedules/new",
        data=form(**{"payload.expect.status": "2xx, 999", "payload.auth.client_id": "only"}),
    )
    assert checks.status_code == 422
    errors = shown_errors(checks.get_data(as_text=True))
    assert "999" in errors["payload.expect.status"]
    assert "payload.auth.token_url" in errors
    assert api.queued() == 0


def every_error(html: str) -> dict[str, list[str]]:
    """Each field's messages beside it, all of them."""
    placed: dict[str, list[str]] = {}
    for field, message in re.findall(r'<p class="error" data-field="([^"]+)">([^<]+)</p>', html):
        placed.setdefault(field, []).append(unescape(message))
    return placed


@pytest.mark.parametrize(
    ("typed", "field", "says"),
    [
        # Not JSON: said beside it, and only that (not that it is missing: it was typed).
        ({"pointer": "/state", "equals": "{not json"}, "equals", "not valid JSON"),
        ({"pointer": "/state", "equals": "done"}, "equals", "not valid JSON"),
        # A value to compare and nothing to compare it with: never dropped, the pointer asked.
        ({"equals": '"done"'}, "pointer", "Missing data"),
    ],
)
def test_an_answer_check_typed_wrong_is_named_beside_its_input_and_kept(
    api: ApiUnderTest, typed: dict[str, str], field: str, says: str
) -> None:
    inputs = {f"payload.expect.json.{name}": value for name, value in typed.items()}
    refused = api.client.post("/console/schedules/new", data=form(id="checked", **inputs))
    assert refused.status_code == 422
    html = refused.get_data(as_text=True)
    errors = every_error(html)
    assert list(errors) == [f"payload.expect.json.{field}"], errors
    [message] = errors[f"payload.expect.json.{field}"]
    assert message.startswith(says), message
    shown = input_values(html)
    for name, value in inputs.items():
        assert unescape(shown[name]) == value
    assert api.queued() == 0
