"""Turning an occurrence into its HTTP request: URL, headers, JSON body, signature.

Every delivery of one occurrence carries the same ``Idempotency-Key`` and ``webhook-id`` (the
occurrence id), signed as Standard Webhooks specifies (``webhook-signature: v1,<base64 HMAC>``;
with several secrets, one signature each, separated by spaces).
"""

from __future__ import annotations

import base64
import json
import secrets
from datetime import datetime
from urllib.parse import urlencode, urlsplit, urlunsplit

from standardwebhooks.webhooks import Webhook

from shared.model import Occurrence, Payload
from shared.ports import WebhookRequest
from shared.timeutil import iso_z

USER_AGENT = "scheduler-service/0.1"
METHODS_WITHOUT_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


def new_webhook_secret() -> str:
    """A fresh signing secret in the Standard Webhooks form ``whsec_<base64>``."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookSigner:
    """Signs with every secret it is given (a tenant's current one and, while a rotation
    overlaps, the next): a receiver that knows either verifies."""

    def __init__(self, *secrets: str) -> None:
        if not secrets:
            raise ValueError("a signer needs a secret")
        self._webhooks = [Webhook(secret) for secret in secrets]

    def sign(self, message_id: str, timestamp: datetime, body: str) -> str:
        return " ".join(webhook.sign(message_id, timestamp, body) for webhook in self._webhooks)


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


def build_request(
    occurrence: Occurrence,
    payload: Payload,
    attempt: int,
    signer: WebhookSigner | None,
    now: datetime,
) -> WebhookRequest:
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
    if body_text:
        headers.setdefault("Content-Type", "application/json")
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
    )
