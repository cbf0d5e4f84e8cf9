"""Turning an occurrence into its HTTP request: URL, headers, JSON body, signature.

Every delivery of one occurrence carries the same ``Idempotency-Key`` and ``webhook-id`` (the
occurrence id), signed as Standard Webhooks specifies (``webhook-signature: v1,<base64 HMAC>``;
with several secrets, one signature each, separated by spaces), and its attempt's W3C
``traceparent`` (``shared.tracing``: a span id of its own per attempt). A payload with
placeholders is filled in first (``shared.templating``: the URL's query values, header values, query
parameters and the body's strings), so what is signed and sent is the filled-in request.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from math import floor
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from standardwebhooks.webhooks import Webhook

from shared.model import Occurrence, Payload
from shared.ports import WebhookRequest
from shared.targets.http import CHECKED_BODY_BYTES
from shared.templating import TemplateValues, header_value, render_json, render_text
from shared.timeutil import iso_z
from shared.tracing import TRACEPARENT, TRACESTATE, TraceContext

USER_AGENT = "scheduler-service/0.1"
METHODS_WITHOUT_BODY = frozenset({"GET", "HEAD", "OPTIONS"})
TRACE_HEADERS = frozenset({TRACEPARENT, TRACESTATE})


def new_webhook_secret() -> str:
    """A fresh signing secret in the Standard Webhooks form ``whsec_<base64>``."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookSigner:
    """Signs with every secret it is given (a tenant's current one and, while a rotation
    overlaps, the next): a receiver that knows either verifies.

    The signature is Standard Webhooks' (``standardwebhooks.Webhook.sign``, which reads each
    secret here and verifies in the tests): ``v1,`` and the base64 HMAC-SHA256 of
    ``<id>.<timestamp>.<body>``. Each secret's HMAC is keyed once and copied per message (the
    library keys a new one per call), and the message is encoded once for every secret."""

    def __init__(self, *secrets: str) -> None:
        if not secrets:
            raise ValueError("a signer needs a secret")
        self._keyed = [
            hmac.new(Webhook(secret)._whsecret, digestmod="sha256") for secret in secrets
        ]

    def sign(self, message_id: str, timestamp: datetime, body: str) -> str:
        signed = f"{message_id}.{floor(timestamp.timestamp())}.{body}".encode()
        return " ".join(_signature(keyed, signed) for keyed in self._keyed)


def _signature(keyed: hmac.HMAC, signed: bytes) -> str:
    mac = keyed.copy()
    mac.update(signed)
    return "v1," + base64.b64encode(mac.digest()).decode()


def url_with_query(url: str, query: dict[str, str | list[str]]) -> str:
    if not query:
        return url
    parts = urlsplit(url)
    extra = urlencode(
        [
            (name, item)
            for name, value in query.items()
            for item in (value if isinstance(value, list) else [value])
        ]
    )
    combined = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit(parts._replace(query=combined))


def filled_in(payload: Payload, values: Mapping[str, str]) -> Payload:
    """The payload with its placeholders filled in: the URL's query values (percent-encoded),
    header values (control characters made spaces), query parameters and the body's strings."""
    url, mark, rest = payload.url.partition("?")
    if mark:
        query, hash_mark, fragment = rest.partition("#")
        url = url + mark + render_text(query, values, _query_value) + hash_mark + fragment
    return replace(
        payload,
        url=url,
        headers={
            name: render_text(value, values, header_value)
            for name, value in payload.headers.items()
        },
        query={
            name: [render_text(item, values, None) for item in value]
            if isinstance(value, list)
            else render_text(value, values, None)
            for name, value in payload.query.items()
        },
        body=render_json(payload.body, values),
        templated=False,
    )


def _query_value(value: str) -> str:
    return quote(value, safe="")


def build_request(
    occurrence: Occurrence,
    payload: Payload,
    attempt: int,
    signer: WebhookSigner | None,
    now: datetime,
    schedule_name: str = "",
    authorization: str | None = None,
    trace: TraceContext | None = None,
) -> WebhookRequest:
    """The signed request of attempt ``attempt``; ``authorization`` (a bearer token's
    header value) replaces any ``Authorization`` header of the payload's, ``trace`` (the
    attempt's context: ``traceparent``, ``tracestate``) any trace header of the payload's."""
    if payload.templated:
        values = TemplateValues.of(occurrence, attempt, schedule_name).by_name()
        payload = filled_in(payload, values)
    method = payload.method.upper()
    body_text = ""
    if payload.body is not None and method not in METHODS_WITHOUT_BODY:
        body_text = json.dumps(payload.body, separators=(",", ":"))
    headers = {name: value for name, value in payload.headers.items()}
    headers.update(
        {
            "User-Agent": USER_AGENT,
            "Idempotency-Key": occurrence.occurrence_id,
            "X-Scheduler-Schedule-Id": occurrence.schedule_id,
            "X-Scheduler-Scheduled-Time": iso_z(occurrence.scheduled_time),
            "X-Scheduler-Attempt": str(attempt),
        }
    )
    if trace is not None:
        for name in [name for name in headers if name.lower() in TRACE_HEADERS]:
            del headers[name]
        headers.update(trace.headers())
    if body_text:
        headers.setdefault("Content-Type", "application/json")
    if authorization is not None:
        for name in [name for name in headers if name.lower() == "authorization"]:
            del headers[name]
        headers["Authorization"] = authorization
    if signer is not None:
        headers["webhook-id"] = occurrence.occurrence_id
        headers["webhook-timestamp"] = str(int(now.timestamp()))
        headers["webhook-signature"] = signer.sign(occurrence.occurrence_id, now, body_text)
    return WebhookRequest(
        method=method,
        url=url_with_query(payload.url, dict(payload.query)),
        headers=headers,
        body=body_text.encode() if body_text else None,
        timeout_seconds=payload.timeout_seconds,
        body_bytes=CHECKED_BODY_BYTES if payload.expect and payload.expect.reads_body else 0,
    )
