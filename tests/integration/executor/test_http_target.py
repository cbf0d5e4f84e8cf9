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
from shared.targets.http import ResponseCheck
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
            return await target.deliver(occurrence, payload, attempt, SystemClock().now(), "S 1")
        finally:
            await target.close()

    return asyncio.run(once())


def test_a_call_that_succeeds_is_signed_and_its_answer_kept() -> None:
    with running_receiver(body=lambda call: b"fine, thank you very much") as receiver:
        payload = Payload("POST", f"{receiver.url}/hook", body={"hello": "world"})
        delivered = deliver(payload, attempt=2)
        [call] = receiver.calls
    assert delivered.verdict.succeeded
    assert delivered.answer.status == 200
    assert delivered.answer.status_line == "HTTP/1.1 200 OK"
    assert delivered.answer.excerpt == "fine, thank you "
    assert delivered.answer.truncated
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
    assert delivered.answer.status == 503


def test_a_refused_target_is_a_final_verdict_without_a_call() -> None:
    with running_receiver() as receiver:
        delivered = deliver(Payload("GET", f"{receiver.url}/x"), policy=TargetPolicy(()))
        assert receiver.calls == []
    assert not delivered.verdict.succeeded
    assert not delivered.verdict.retryable
    assert delivered.answer.status is None
    assert "refused target" in (delivered.verdict.reason or "")


def test_calls_are_counted_by_host_and_port() -> None:
    target = HttpTarget(HttpSender(), one_signer(None), SystemClock())
    assert target.destination(Payload("GET", "https://Hooks.Example.com/a?b=1")) == (
        "hooks.example.com"
    )
    assert target.destination(Payload("GET", "http://127.0.0.1:8080/x")) == "127.0.0.1:8080"


def test_placeholders_are_filled_in_the_query_headers_and_body_and_the_filled_body_signed() -> None:
    with running_receiver() as receiver:
        payload = Payload(
            "POST",
            f"{receiver.url}/hook?run={{{{ occurrence.id }}}}&fixed=a%20b",
            headers={"X-Run": "{{ occurrence.attempt }}/{{schedule.name}}"},
            query={"at": "{{ occurrence.scheduled_time }}", "names": ["{{ schedule.id }}", "x"]},
            body={"nested": [{"id": "{{ occurrence.id }}"}], "n": 3, "esc": "\\{{ schedule.id }}"},
        )
        delivered = deliver(payload, attempt=4)
        [call] = receiver.calls
    assert delivered.verdict.succeeded
    assert call.query == {
        "run": ["s-1:2030-01-01T00:00:00.000Z"],
        "fixed": ["a b"],
        "at": ["2030-01-01T00:00:00.000Z"],
        "names": ["s-1", "x"],
    }
    assert call.headers["x-run"] == "4/S 1"
    assert call.json() == {
        "nested": [{"id": "s-1:2030-01-01T00:00:00.000Z"}],
        "n": 3,
        "esc": "{{ schedule.id }}",
    }
    # The signature covers the body as sent: filled in.
    Webhook(SECRET).verify(call.body, call.headers)


def test_a_name_with_a_line_break_or_an_ampersand_stays_inside_its_header_and_query_value() -> None:
    target = HttpTarget(HttpSender(policy=LOOPBACK), one_signer(None), SystemClock())
    occurrence = Occurrence("default", "s-1", 7, datetime(2030, 1, 1, tzinfo=UTC))
    with running_receiver() as receiver:
        payload = Payload(
            "GET",
            f"{receiver.url}/hook?who={{{{ schedule.name }}}}&x=1",
            headers={"X-Who": "{{ schedule.name }}"},
        )

        async def once() -> Delivered:
            try:
                return await target.deliver(
                    occurrence, payload, 1, SystemClock().now(), "a&x=2\r\nX-Evil: 1"
                )
            finally:
                await target.close()

        assert asyncio.run(once()).verdict.succeeded
        [call] = receiver.calls
    assert call.query == {"who": ["a&x=2\r\nX-Evil: 1"], "x": ["1"]}
    assert call.headers["x-who"] == "a&x=2  X-Evil: 1"
    assert "x-evil" not in call.headers


def answering(status: int, body: bytes, expect: ResponseCheck) -> Delivered:
    with running_receiver(lambda call: (status, {}), lambda call: body) as receiver:
        return deliver(Payload("POST", f"{receiver.url}/hook", expect=expect))


def test_an_answer_is_a_success_only_with_an_expected_status() -> None:
    only_201 = ResponseCheck(statuses=((201, 201),))
    assert answering(201, b"", only_201).verdict.succeeded
    wrong = answering(200, b"", only_201).verdict
    assert (wrong.succeeded, wrong.retryable) == (False, True)
    assert wrong.reason == "HTTP 200: not an expected status (201)"
    # A status listed as a success is one, whatever it is; one not listed is judged as ever.
    gone_is_fine = ResponseCheck(statuses=((200, 299), (404, 404)))
    assert answering(404, b"", gone_is_fine).verdict.succeeded
    assert answering(410, b"", gone_is_fine).verdict.retryable is False
    assert answering(503, b"", gone_is_fine).verdict.retryable is True


def test_a_json_pointer_must_equal_the_expected_value() -> None:
    check = ResponseCheck(json_pointer="/result/state", json_equals="done")
    assert answering(200, b'{"result": {"state": "done"}}', check).verdict.succeeded
    pending = answering(200, b'{"result": {"state": "pending"}}', check).verdict
    assert (pending.succeeded, pending.retryable) == (False, True)
    assert pending.reason == 'HTTP 200: /result/state is "pending", expected "done"'
    assert "nothing at /result/state" in (answering(200, b"{}", check).verdict.reason or "")
    assert "not JSON" in (answering(200, b"<html>", check).verdict.reason or "")
    # JSON's equality: true is not 1.
    flag = ResponseCheck(json_pointer="/ok", json_equals=True)
    assert answering(200, b'{"ok": true}', flag).verdict.succeeded
    assert not answering(200, b'{"ok": 1}', flag).verdict.succeeded


def test_a_body_must_contain_the_text_within_what_is_read() -> None:
    check = ResponseCheck(body_contains="ACCEPTED")
    assert answering(200, b"job ACCEPTED, id 7", check).verdict.succeeded
    assert answering(200, b"job queued", check).verdict.reason == (
        'HTTP 200: the body does not contain "ACCEPTED"'
    )
    # Past the 64 KiB a check reads, the text is not looked for; a JSON check gives up.
    late = b"x" * (64 * 1024) + b"ACCEPTED"
    assert not answering(200, late, check).verdict.succeeded
    big_json = b'{"pad": "' + b"x" * (64 * 1024) + b'", "ok": true}'
    reason = answering(200, big_json, ResponseCheck(json_pointer="/ok", json_equals=True))
    assert "longer than 64 KiB" in (reason.verdict.reason or "")
