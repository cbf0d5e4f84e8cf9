"""A schedule's ``payload``: one request schema per kind of delivery target
(``shared.targets``), chosen by its ``kind`` (``http`` when absent: every body written before
there were kinds), registered once in ``SCHEMAS``.

- ``http`` (``HttpPayloadSchema``): the webhook call, with optional ``auth`` (OAuth 2.0 client
  credentials) and ``expect`` (what answer is a success);
- ``sqs`` (``QueuePayloadSchema``): a message on the user's queue;
- ``sns`` (``TopicPayloadSchema``): a publish to the user's topic.

What the domain checks beyond the shape (the SSRF guard, placeholders, ARNs, queue URLs) is in
each kind's ``problems`` (``scheduler_service.service.checks``).
"""

from __future__ import annotations

import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from scheduler_service.requests.call import headers_rule, http_url
from scheduler_service.requests.fields import JsonNumber, Strict, WholeNumber, domain
from shared.definition_rules import (
    MAX_URL_LENGTH,
    check_method,
    check_query,
    check_single_line,
)
from shared.targets import DeliveryPayload
from shared.targets.http import (
    CLIENT_AUTH_METHODS,
    HTTP,
    OAUTH_CLIENT_CREDENTIALS,
    OAuthClientCredentials,
    Payload,
    ResponseCheck,
    parse_status,
)
from shared.targets.sns import SNS, TopicPayload
from shared.targets.sqs import SQS, QueuePayload

# RFC 6749 §3.3: a scope is one or more of these characters.
SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,256}$")


def timeout_field() -> JsonNumber:
    """``timeout_seconds``: one deadline for the whole delivery."""
    return JsonNumber(load_default=10.0, validate=validate.Range(min=0.001, max=300))


_text = domain(check_single_line)


class OAuthSchema(Strict):
    """OAuth 2.0 client credentials: the executor fetches a bearer token for the call."""

    type = fields.String(required=True, validate=validate.OneOf([OAUTH_CLIENT_CREDENTIALS]))
    token_url = fields.String(
        required=True, validate=[validate.Length(min=1, max=MAX_URL_LENGTH), http_url]
    )
    client_id = fields.String(required=True, validate=[validate.Length(1, 512), _text])
    client_secret = fields.String(
        required=True,
        validate=[validate.Length(1, 4096), _text],
        metadata={"description": "sealed at rest, masked in every answer"},
    )
    scopes = fields.List(
        fields.String(validate=validate.Regexp(SCOPE, error="not an OAuth scope")),
        load_default=list,
        validate=validate.Length(max=50),
    )
    client_auth = fields.String(
        load_default="basic",
        validate=validate.OneOf(CLIENT_AUTH_METHODS),
        metadata={"description": "basic: HTTP Basic (the default); body: in the form"},
    )

    @post_load
    def to_credentials(self, data: dict[str, Any], **_: Any) -> OAuthClientCredentials:
        return OAuthClientCredentials(
            data["token_url"],
            data["client_id"],
            data["client_secret"],
            tuple(data["scopes"]),
            data["client_auth"],
        )


class StatusItem(fields.Field[tuple[int, int]]):
    """A status (``204``) or a class of them (``"2xx"``)."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Any:
        try:
            return parse_status(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


class JsonCheckSchema(Strict):
    pointer = fields.String(
        required=True,
        validate=validate.Length(max=1024),
        metadata={"description": "an RFC 6901 pointer into the answer's JSON, e.g. /status"},
    )
    equals = fields.Raw(
        required=True, allow_none=True, metadata={"description": "the JSON value it must be"}
    )


class ExpectSchema(Strict):
    """What answer is a success; one that is not is a failure, retried like one."""

    status = fields.List(
        StatusItem(metadata={"oneOf": [{"type": "integer"}, {"type": "string"}]}),
        load_default=lambda: [(200, 299)],
        validate=validate.Length(1, 20),
        metadata={"description": 'statuses and classes that succeed, e.g. [200, "3xx"]'},
    )
    json = fields.Nested(JsonCheckSchema, load_default=None, allow_none=True)
    body_contains = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(1, 1024)
    )

    @post_load
    def to_check(self, data: dict[str, Any], **_: Any) -> ResponseCheck:
        json_check = data["json"]
        return ResponseCheck(
            tuple(data["status"]),
            json_check["pointer"] if json_check else None,
            json_check["equals"] if json_check else None,
            data["body_contains"],
        )


class HttpPayloadSchema(Strict):
    kind = fields.String(load_default=HTTP, validate=validate.OneOf([HTTP]))
    method = fields.String(required=True, validate=domain(check_method))
    url = fields.String(
        required=True, validate=[validate.Length(min=1, max=MAX_URL_LENGTH), http_url]
    )
    headers = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=headers_rule
    )
    queryParameters = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=domain(check_query)
    )
    body = fields.Raw(allow_none=True, load_default=None)
    timeout_seconds = timeout_field()
    calls_per_host = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=validate.Range(1, 1000),
        metadata={
            "description": "At most this many calls in flight to the URL's host "
            "(default: the executor's SCHEDULER_EXECUTOR_CALLS_PER_HOST)."
        },
    )
    auth = fields.Nested(OAuthSchema, load_default=None, allow_none=True)
    expect = fields.Nested(ExpectSchema, load_default=None, allow_none=True)

    @post_load
    def to_payload(self, data: dict[str, Any], **_: Any) -> Payload:
        query = {
            name: [str(v) for v in value] if isinstance(value, list) else str(value)
            for name, value in data["queryParameters"].items()
        }
        return Payload(
            method=data["method"].upper(),
            url=data["url"],
            headers=dict(data["headers"]),
            query=query,
            body=data["body"],
            timeout_seconds=data["timeout_seconds"],
            calls_per_host=data["calls_per_host"],
            auth=data["auth"],
            expect=data["expect"],
        )


class AwsMessageSchema(Strict):
    """What a message to a queue or a topic has beside where it goes."""

    body = fields.Raw(
        allow_none=True,
        load_default=None,
        metadata={
            "description": "the message: a string as it is, other JSON as compact JSON; "
            "absent, the occurrence in JSON"
        },
    )
    message_group_id = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "FIFO only; default: the schedule id"},
    )
    message_deduplication_id = fields.String(
        load_default=None,
        allow_none=True,
        metadata={"description": "FIFO only; default: the occurrence id"},
    )
    role_arn = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Length(max=2048),
        metadata={
            "description": "a role to assume for the send (external id scheduler:<tenant>); "
            "default: the executor's own credentials"
        },
    )
    timeout_seconds = timeout_field()
    calls_per_host = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=validate.Range(1, 1000),
        metadata={"description": "At most this many sends in flight to the queue or topic."},
    )


class QueuePayloadSchema(AwsMessageSchema):
    kind = fields.String(required=True, validate=validate.OneOf([SQS]))
    queue_url = fields.String(required=True, validate=validate.Length(1, MAX_URL_LENGTH))

    @post_load
    def to_payload(self, data: dict[str, Any], **_: Any) -> QueuePayload:
        data.pop("kind")
        return QueuePayload(**data)


class TopicPayloadSchema(AwsMessageSchema):
    kind = fields.String(required=True, validate=validate.OneOf([SNS]))
    topic_arn = fields.String(required=True, validate=validate.Length(1, 2048))

    @post_load
    def to_payload(self, data: dict[str, Any], **_: Any) -> TopicPayload:
        data.pop("kind")
        return TopicPayload(**data)


# The request schema of each kind, and the name the OpenAPI document gives it.
SCHEMAS: dict[str, tuple[type[Schema], str]] = {
    HTTP: (HttpPayloadSchema, "HttpPayload"),
    SQS: (QueuePayloadSchema, "QueuePayload"),
    SNS: (TopicPayloadSchema, "TopicPayload"),
}


# How the OpenAPI document shows a payload, in a request and in an answer (secrets masked).
PAYLOAD_DOCUMENT: dict[str, Any] = {
    "oneOf": [{"$ref": f"#/components/schemas/{name}"} for _, name in SCHEMAS.values()],
    "description": "the delivery target: an HTTP call (kind http, the default), a message on "
    "an SQS queue (kind sqs) or a publish to an SNS topic (kind sns)",
}


class PayloadField(fields.Field[DeliveryPayload]):
    """``payload``: loaded by the schema of its ``kind``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(metadata=PAYLOAD_DOCUMENT, **kwargs)

    def _deserialize(
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> DeliveryPayload:
        if not isinstance(value, dict):
            raise ValidationError("an object: the call, or the message")
        kind = value.get("kind", HTTP)
        if not isinstance(kind, str) or kind not in SCHEMAS:
            raise ValidationError({"kind": [f"one of {', '.join(SCHEMAS)}"]})
        payload: DeliveryPayload = SCHEMAS[kind][0]().load(value)
        return payload


def document_targets(api: Any) -> None:
    """The OpenAPI document's schema of each kind, which ``PayloadField`` refers to."""
    for schema, name in SCHEMAS.values():
        api.spec.components.schema(name, schema=schema)
