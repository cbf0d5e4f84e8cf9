"""The HTTP delivery target: an occurrence becomes a webhook call.

The request is built and signed (``shared.webhooks.build_request``: the payload's method, URL
and query, headers, ``Idempotency-Key``, ``X-Scheduler-*``, the Standard Webhooks signature with
the tenant's secrets),
sent through a ``WebhookSender`` (``shared.adapters.http_sender``: one deadline, no redirects,
the SSRF guard at connection time), and its answer judged (``shared.retry.judge_response``:
2xx succeeds; 5xx, 408 and 429 are worth retrying, honouring ``Retry-After``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from urllib.parse import urlsplit

from shared.model import Occurrence, Payload
from shared.ports import (
    Clock,
    Delivered,
    DeliveryTarget,
    WebhookError,
    WebhookResponse,
    WebhookSender,
)
from shared.retry import Verdict, judge_response
from shared.webhooks import WebhookSigner, build_request

# The signer of a tenant's calls (its signing secrets), or None to send them unsigned.
SignerFor = Callable[[str], WebhookSigner | None]


def destination(url: str) -> str:
    """The host (and port, when the URL names one) calls are counted by."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return host if port is None else f"{host}:{port}"


def one_signer(signer: WebhookSigner | None) -> SignerFor:
    """Every tenant's calls signed by ``signer``."""
    return lambda tenant: signer


class HttpTarget(DeliveryTarget):
    def __init__(self, sender: WebhookSender, signers: SignerFor, clock: Clock) -> None:
        self.sender = sender
        self.signers = signers
        self.clock = clock

    def destination(self, payload: Payload) -> str:
        return destination(payload.url)

    async def deliver(
        self, occurrence: Occurrence, payload: Payload, attempt: int, now: datetime
    ) -> Delivered:
        signer = self.signers(occurrence.tenant)
        request = build_request(occurrence, payload, attempt, signer, now)
        try:
            response = await self.sender.send(request)
        except WebhookError as exc:
            finished = self.clock.now()
            return Delivered(
                Verdict(succeeded=False, retryable=exc.retryable, reason=str(exc)),
                finished,
                (finished - now).total_seconds() * 1000.0,
            )
        finished = self.clock.now()
        return Delivered(
            judge_response(response.status, response.headers, finished),
            finished,
            response.duration_ms,
            response.status,
            *_answer(response),
        )

    async def close(self) -> None:
        await self.sender.close()


def _answer(response: WebhookResponse) -> tuple[str | None, str | None, bool]:
    """What an attempt keeps of the webhook's answer: its status line, the start of its body
    as text, and whether the body was longer."""
    excerpt = response.body_excerpt.decode("utf-8", "replace") if response.body_excerpt else None
    return response.status_line or None, excerpt, response.body_truncated
