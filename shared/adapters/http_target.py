"""The HTTP delivery target: an occurrence becomes a webhook call.

The request is built and signed (``shared.webhooks.build_request``: the payload's method, URL
and query, headers, ``Idempotency-Key``, ``X-Scheduler-*``, placeholders filled in, the Standard
Webhooks signature with the tenant's secrets), sent through a ``WebhookSender``
(``shared.adapters.http_sender``: one deadline, no redirects, the SSRF guard at connection
time), and its answer judged (``shared.answer_checks.judge_answer``: 2xx succeeds unless the
payload's ``expect`` says otherwise; 5xx, 408 and 429 are worth retrying, honouring
``Retry-After``).

A payload with ``auth`` (OAuth 2.0 client credentials) gets a bearer token first
(``shared.adapters.oauth_tokens``); a 401 to a token kept from before drops it, and the call is
made once more with a new one. Token and call share the payload's one deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from shared.adapters.oauth_tokens import TokenError, TokenSource
from shared.answer_checks import judge_answer
from shared.model import Answer, Occurrence, Payload
from shared.ports import (
    CallFailed,
    Clock,
    Delivered,
    DeliveryTarget,
    WebhookError,
    WebhookRequest,
    WebhookResponse,
    WebhookSender,
)
from shared.retry import Verdict
from shared.tracing import TraceContext
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


class HttpTarget(DeliveryTarget[Payload]):
    def __init__(
        self,
        sender: WebhookSender,
        signers: SignerFor,
        clock: Clock,
        tokens: TokenSource | None = None,
    ) -> None:
        self.sender = sender
        self.signers = signers
        self.clock = clock
        self.tokens = tokens or TokenSource(sender, clock)

    def destination(self, payload: Payload) -> str:
        return destination(payload.url)

    async def deliver(
        self,
        occurrence: Occurrence,
        payload: Payload,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Delivered:
        signer = self.signers(occurrence.tenant)
        # ``now``, by the perf counter the sender stamps its request's departure with.
        begun = time.perf_counter()
        if payload.auth is None:
            request = build_request(
                occurrence, payload, attempt, signer, now, schedule_name, trace=trace
            )
            try:
                response = await self.sender.send(request)
            except WebhookError as exc:
                return self._no_answer(exc, now, _left_at(now, begun, exc.sent_at))
            return self._answered(response, payload, _left_at(now, begun, response.sent_at))
        deadline = time.monotonic() + payload.timeout_seconds
        try:
            token, kept = await self.tokens.token(
                occurrence.tenant, payload.auth, payload.timeout_seconds
            )
            request = build_request(
                occurrence, payload, attempt, signer, now, schedule_name, f"Bearer {token}", trace
            )
            response = await self.sender.send(_within(request, deadline))
            if response.status == 401 and kept:
                self.tokens.forget(occurrence.tenant, payload.auth, token)
                token, _ = await self.tokens.token(occurrence.tenant, payload.auth, _left(deadline))
                request = build_request(
                    occurrence,
                    payload,
                    attempt,
                    signer,
                    now,
                    schedule_name,
                    f"Bearer {token}",
                    trace,
                )
                response = await self.sender.send(_within(request, deadline))
        except WebhookError as exc:
            return self._no_answer(exc, now, _left_at(now, begun, exc.sent_at))
        except TokenError as exc:
            return self._no_answer(exc, now, None)
        return self._answered(response, payload, _left_at(now, begun, response.sent_at))

    def _no_answer(self, error: CallFailed, now: datetime, left: datetime | None) -> Delivered:
        """A call that got no answer; ``left``: when its request was written, if it was."""
        finished = self.clock.now()
        return Delivered(
            Verdict(succeeded=False, retryable=error.retryable, reason=str(error)),
            finished,
            (finished - now).total_seconds() * 1000.0,
            started_at=left,
        )

    def _answered(
        self, response: WebhookResponse, payload: Payload, left: datetime | None
    ) -> Delivered:
        finished = self.clock.now()
        return Delivered(
            judge_answer(
                payload.expect,
                response.status,
                response.headers,
                response.body,
                response.body_complete,
                finished,
            ),
            finished,
            response.duration_ms,
            _answer(response),
            started_at=left,
        )

    async def close(self) -> None:
        await self.sender.close()


def _left_at(now: datetime, begun: float, sent_at: float | None) -> datetime | None:
    """When a request stamped by the perf counter left, by the clock of ``now`` (stamped at
    ``begun``); None when the sender did not say."""
    return None if sent_at is None else now + timedelta(seconds=sent_at - begun)


def _left(deadline: float) -> float:
    """What is left of an attempt's deadline (``WebhookError`` when nothing is)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise WebhookError("timed out: no answer within the payload's timeout")
    return left


def _within(request: WebhookRequest, deadline: float) -> WebhookRequest:
    return replace(request, timeout_seconds=_left(deadline))


def _answer(response: WebhookResponse) -> Answer:
    """What an attempt keeps of the webhook's answer."""
    excerpt = response.body_excerpt.decode("utf-8", "replace") if response.body_excerpt else None
    return Answer(response.status, response.status_line or None, excerpt, response.body_truncated)
