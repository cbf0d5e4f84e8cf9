"""The kinds of delivery target as the domain holds them (``shared.targets``): their documents,
their checks, and their secrets (sealed at rest, masked in answers, kept when sent back masked).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.definition_codec import DefinitionCodec
from shared.errors import InvalidInput
from shared.model import ScheduleDefinition, Timing
from shared.redaction import MASK
from shared.secrets import (
    SecretBox,
    carries_mask,
    keep_masked_secrets,
    masked_payload,
    new_secret_key,
)
from shared.ssrf import TargetPolicy
from shared.targets import DeliveryPayload, payload_from_document
from shared.targets.aws import deduplication_id, parse_queue_url, parse_topic_arn
from shared.targets.http import OAuthClientCredentials, Payload, ResponseCheck, parse_status
from shared.targets.rules import TargetRules
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
TOPIC = "arn:aws:sns:eu-west-1:123456789012:orders"
AUTH = OAuthClientCredentials(
    "https://auth.example.com/token", "client-1", "very-secret-value", ("a", "b")
)
KINDS: list[DeliveryPayload] = [
    Payload(
        "POST",
        "https://hooks.example.com/x?id={{ occurrence.id }}",
        headers={"X-A": "1"},
        body={"a": ["{{ schedule.name }}"]},
        auth=AUTH,
        expect=ResponseCheck(((200, 299), (404, 404)), "/ok", True, "done"),
        calls_per_host=3,
    ),
    Payload("GET", "https://hooks.example.com/plain"),
    QueuePayload(
        queue_url=QUEUE + ".fifo",
        body="{{ occurrence.id }}",
        message_group_id="g",
        message_deduplication_id="d",
        role_arn="arn:aws:iam::123456789012:role/sender",
        timeout_seconds=3.0,
    ),
    QueuePayload(queue_url=QUEUE),
    TopicPayload(topic_arn=TOPIC, body={"n": 1}, calls_per_host=2),
]


@pytest.mark.parametrize("payload", KINDS, ids=lambda p: p.kind)
def test_each_kind_comes_back_from_its_document_and_through_sealing(
    payload: DeliveryPayload,
) -> None:
    document = payload.to_document()
    assert document["kind"] == payload.kind
    assert payload_from_document(document) == payload
    codec = DefinitionCodec(SecretBox([new_secret_key()]))
    definition = ScheduleDefinition(Timing("UTC", at=datetime(2030, 1, 1, tzinfo=UTC)), payload)
    sealed = codec.to_document(definition)
    # What is secret of each kind is not readable at rest.
    for name in payload.sealed_fields:
        assert name not in sealed["payload"]
    assert codec.from_document(sealed) == definition


def test_a_payload_stored_before_kinds_existed_is_an_http_call() -> None:
    legacy = {"method": "GET", "url": "https://example.com/", "headers": {}, "body": None}
    assert payload_from_document(legacy) == Payload("GET", "https://example.com/")


@pytest.mark.parametrize(
    ("url", "own_endpoint", "found"),
    [
        (QUEUE, False, ("eu-west-1", "123456789012", "orders")),
        (
            "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/q.fifo",
            False,
            ("cn-north-1", "123456789012", "q.fifo"),
        ),
        (
            "https://us-west-2.queue.amazonaws.com/123456789012/q",
            False,
            ("us-west-2", "123456789012", "q"),
        ),
        ("https://queue.amazonaws.com/123456789012/q", False, ("us-east-1", "123456789012", "q")),
        (
            "http://sqs.us-east-1.127.0.0.1:4566/000000000000/q",
            True,
            ("us-east-1", "000000000000", "q"),
        ),
        ("http://localhost:4566/000000000000/q", True, (None, "000000000000", "q")),
    ],
)
def test_a_queue_url_names_its_region_account_and_queue(
    url: str, own_endpoint: bool, found: tuple[str | None, str, str]
) -> None:
    queue = parse_queue_url(url, own_endpoint)
    assert (queue.region, queue.account, queue.name) == found


@pytest.mark.parametrize(
    "url",
    [
        "http://sqs.eu-west-1.amazonaws.com/123456789012/orders",  # not https
        "https://sqs.eu-west-1.evil.example/123456789012/orders",  # not AWS
        "https://127.0.0.1/123456789012/orders",
        "https://sqs.eu-west-1.amazonaws.com/123456789012",
        "https://sqs.eu-west-1.amazonaws.com/1234/orders",
        "https://sqs.eu-west-1.amazonaws.com/123456789012/or ders",
        "https://sqs.eu-west-1.amazonaws.com/123456789012/orders?x=1",
        "https://amazonaws.com/123456789012/orders",
    ],
)
def test_without_an_endpoint_of_its_own_a_queue_url_must_be_an_aws_one(url: str) -> None:
    with pytest.raises(ValueError):
        parse_queue_url(url, own_endpoint=False)


def test_topic_arns_and_the_problems_of_aws_fields() -> None:
    assert parse_topic_arn(TOPIC).region == "eu-west-1"
    assert parse_topic_arn("arn:aws-cn:sns:cn-north-1:123456789012:t.fifo").fifo
    rules = TargetRules()
    bad = TopicPayload(
        topic_arn="arn:aws:sqs:eu-west-1:123456789012:orders",
        role_arn="arn:aws:iam::123456789012:user/me",
        message_group_id="has space",
        body={"x": "{{ nope }}"},
    )
    assert set(bad.problems(rules)) == {
        "payload.topic_arn",
        "payload.role_arn",
        "payload.message_group_id",
        "payload.body.x",
    }
    assert TopicPayload(topic_arn=TOPIC).problems(rules) == {}


def test_the_schedulers_own_queues_cannot_be_targeted() -> None:
    rules = TargetRules(own_queue_names=frozenset({"scheduler-occurrences"}))
    own = QueuePayload(
        queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/scheduler-occurrences"
    )
    assert own.problems(rules) == {
        "payload.queue_url": "refused target: a queue of the scheduler's own"
    }
    local = QueuePayload(queue_url="http://127.0.0.1:4566/000000000000/q")
    assert "payload.queue_url" in local.problems(rules)
    assert local.problems(TargetRules(own_aws_endpoint=True)) == {}


def test_an_http_payloads_urls_pass_the_ssrf_guard_as_written() -> None:
    rules = TargetRules(policy=TargetPolicy(()))
    payload = Payload(
        "GET",
        "http://10.0.0.1/hook",
        auth=OAuthClientCredentials("http://169.254.169.254/token", "c", "s"),
        expect=ResponseCheck(json_pointer="no-slash"),
    )
    problems = payload.problems(rules)
    assert problems["payload.url"].startswith("refused target")
    assert problems["payload.auth.token_url"].startswith("refused target")
    assert "JSON pointer" in problems["payload.expect.json.pointer"]


def test_statuses_read_as_codes_or_classes() -> None:
    assert parse_status(204) == (204, 204)
    assert parse_status("4xx") == (400, 499)
    for bad in (99, 600, "2XX", "6xx", True, "200"):
        with pytest.raises(ValueError):
            parse_status(bad)
    check = ResponseCheck.from_document({"status": ["2xx", 304]})
    assert check.accepts_status(304) and not check.accepts_status(301)
    assert check.to_document() == {"status": ["2xx", 304]}


def test_a_long_occurrence_id_is_hashed_into_a_deduplication_id() -> None:
    assert deduplication_id("s:2030") == "s:2030"
    assert len(deduplication_id("s" * 200)) == 64


def test_masked_answers_hide_the_client_secret_and_a_replace_keeps_it() -> None:
    stored = KINDS[0]
    assert isinstance(stored, Payload)
    shown = masked_payload(stored, ["authorization"])
    assert shown["auth"]["client_secret"] == MASK
    assert "very-secret-value" not in repr(shown)
    sent_back = payload_from_document(shown)
    assert carries_mask(sent_back)
    assert keep_masked_secrets(sent_back, stored, ["authorization"]) == stored
    with pytest.raises(InvalidInput) as refused:
        keep_masked_secrets(sent_back, None, ["authorization"])
    assert "payload.auth.client_secret" in refused.value.fields


def test_a_message_body_sent_back_masked_is_kept_and_another_kind_keeps_nothing() -> None:
    stored = QueuePayload(queue_url=QUEUE, body={"password": "hunter2", "n": 1})
    shown = masked_payload(stored, ["password"])
    assert shown["body"] == {"password": MASK, "n": 1}
    assert keep_masked_secrets(payload_from_document(shown), stored, ["password"]) == stored
    topic = TopicPayload(topic_arn=TOPIC, body={"password": MASK, "n": 1})
    with pytest.raises(InvalidInput):
        keep_masked_secrets(topic, stored, ["password"])
