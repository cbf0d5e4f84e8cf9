"""The HTTP delivery target: an occurrence becomes one signed webhook call, and how it ended is
a verdict, never an exception (the ``DeliveryTarget`` contract)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

from shared.adapters.http_sender import HttpSender
from shared.adapters.http_target import HttpTarget, one_signer
from shared.model import Occurrence, Payload
from shared.ports import Delivered, SystemClock
from shared.ssrf import TargetPolicy
from shared.webhooks import WebhookSigner
from tests.support.receiver import Call, running_receiver

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
LOOPBACK = TargetPolicy(("127.0.0.0/8",))


def deliver(payload: Payload, attempt: int = 1, policy: TargetPolicy = LOOPBACK) -> Delivered:
    target = HttpTarget(
        HttpSender(policy=policy, excerpt_bytes=16),
        one_signer(WebhookSigner(SECRET)),
        SystemClock(),
    )
    occurrence = Occurrence("default", "s-1", 7, datetime(2030, 1, 1, tzinfo=UTC))

    async def once() -> Delivered:
        try:
            return await target.deliver(occurrence, payload, attempt, SystemClock().now())
        finally:
            await target.close()

    return asyncio.run(once())


def test_a_call_that_succeeds_is_signed_and_its_answer_kept() -> None:
    with running_receiver(body=lambda call: b"fine, thank you very much") as receiver:
        payload = Payload("POST", f"{receiver.url}/hook", body={"hello": "world"})
        delivered = deliver(payload, attempt=2)
        [call] = receiver.calls
    assert delivered.verdict.succeeded
    assert delivered.status == 200
    assert delivered.status_line == "HTTP/1.1 200 OK"
    assert delivered.excerpt == "fine, thank you "
    assert delivered.truncated
    assert delivered.duration_ms > 0
    assert json.loads(call.body) == {"hello": "world"}
    assert call.headers["idempotency-key"] == "s-1:2030-01-01T00:00:00.000Z"
    assert call.headers["x-scheduler-attempt"] == "2"
    Webhook(SECRET).verify(call.body, call.headers)


def test_a_5xx_with_retry_after_is_worth_retrying_after_it() -> None:
    def busy(call: Call) -> tuple[int, dict[str, str]]:
        return 503, {"Retry-After": "7"}

    with running_receiver(busy) as receiver:
        delivered = deliver(Payload("GET", f"{receiver.url}/busy"))
    assert not delivered.verdict.succeeded
    assert delivered.verdict.retryable
    assert delivered.verdict.retry_after_seconds == 7.0
    assert delivered.verdict.reason == "HTTP 503"
    assert delivered.status == 503


def test_a_refused_target_is_a_final_verdict_without_a_call() -> None:
    with running_receiver() as receiver:
        delivered = deliver(Payload("GET", f"{receiver.url}/x"), policy=TargetPolicy(()))
        assert receiver.calls == []
    assert not delivered.verdict.succeeded
    assert not delivered.verdict.retryable
    assert delivered.status is None
    assert "refused target" in (delivered.verdict.reason or "")


def test_calls_are_counted_by_host_and_port() -> None:
    target = HttpTarget(HttpSender(), one_signer(None), SystemClock())
    assert target.destination(Payload("GET", "https://Hooks.Example.com/a?b=1")) == (
        "hooks.example.com"
    )
    assert target.destination(Payload("GET", "http://127.0.0.1:8080/x")) == "127.0.0.1:8080"
