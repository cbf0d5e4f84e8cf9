"""The webhook sender's one deadline holds for the whole call (DNS, headers, body), and
connections are reused."""

from __future__ import annotations

import asyncio
import gzip
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from shared.adapters.http_sender import HttpSender, _Request
from shared.ports import WebhookError, WebhookRequest, WebhookResponse
from shared.ssrf import TargetPolicy
from tests.support.senders import send_all

LOOPBACK = TargetPolicy(("127.0.0.0/8",))


@contextmanager
def raw_server(
    answer: Callable[[socket.socket], None], seen: list[bytes] | None = None
) -> Iterator[tuple[str, list[int]]]:
    """A server on 127.0.0.1 that reads each request (kept in ``seen``) and lets ``answer``
    write the reply."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []
    stop = threading.Event()

    def serve(connection: socket.socket) -> None:
        with connection:
            while not stop.is_set():
                request = b""
                while b"\r\n\r\n" not in request:
                    data = connection.recv(65536)
                    if not data:
                        return
                    request += data
                if seen is not None:
                    seen.append(request)
                try:
                    answer(connection)
                except OSError:
                    return

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            threading.Thread(target=serve, args=(connection,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook", accepted
    finally:
        stop.set()
        listener.close()


def call(url: str, timeout: float = 0.5) -> WebhookRequest:
    return WebhookRequest("GET", url, {}, None, timeout)


def test_a_body_that_trickles_in_cannot_hold_the_call_past_its_timeout() -> None:
    def trickle(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(100):
            connection.sendall(b"x")
            time.sleep(0.1)

    sender = HttpSender(policy=LOOPBACK)
    with raw_server(trickle) as (url, _):
        started = time.monotonic()
        response = asyncio.run(send_all(sender, call(url, timeout=0.5)))[0]
        took = time.monotonic() - started
    assert not isinstance(response, WebhookError)
    assert response.status == 200
    assert took < 1.0


def test_a_server_trickling_its_headers_is_cut_off_at_the_deadline() -> None:
    def trickle(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\n")
        for number in range(100):
            connection.sendall(f"X-Slow-{number}: x\r\n".encode())
            time.sleep(0.05)

    sender = HttpSender(policy=LOOPBACK)
    with raw_server(trickle) as (url, _):
        started = time.monotonic()
        [outcome] = asyncio.run(send_all(sender, call(url, timeout=0.5)))
        took = time.monotonic() - started
    assert isinstance(outcome, WebhookError)
    assert outcome.retryable
    assert "no answer within 0.5s" in str(outcome)
    assert took < 1.0


def test_the_deadline_covers_resolving_the_name() -> None:
    def slow_dns(host: str) -> Sequence[str]:
        time.sleep(1.0)
        return ["127.0.0.1"]

    async def timed() -> tuple[list[WebhookResponse | WebhookError], float]:
        started = time.monotonic()
        outcomes = await send_all(sender, call("http://slow-dns.test:9/hook", timeout=0.3))
        return outcomes, time.monotonic() - started

    sender = HttpSender(policy=LOOPBACK, resolver=slow_dns)
    [outcome], took = asyncio.run(timed())
    assert isinstance(outcome, WebhookError)
    assert "no answer within 0.3s" in str(outcome)
    assert took < 0.9


def test_a_complete_small_answer_leaves_the_connection_for_the_next_call() -> None:
    def small(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    sender = HttpSender(policy=LOOPBACK)
    with raw_server(small) as (url, accepted):
        answers = asyncio.run(send_all(sender, call(url), call(url), call(url)))
    assert [getattr(answer, "status", answer) for answer in answers] == [204, 204, 204]
    assert len(accepted) == 1


def test_the_answer_gives_its_status_line_and_only_the_start_of_its_body() -> None:
    big = b"0123456789abcdef" * 2048  # 32 KiB

    def answer(connection: socket.socket) -> None:
        connection.sendall(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n" % len(big) + big
        )

    def short(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")

    sender = HttpSender(policy=LOOPBACK, excerpt_bytes=20)
    with raw_server(answer) as (url, _):
        [large] = asyncio.run(send_all(sender, call(url)))
    with raw_server(short) as (url, _):
        [small] = asyncio.run(send_all(sender, call(url)))
    assert isinstance(large, WebhookResponse) and isinstance(small, WebhookResponse)
    assert (large.status_line, large.body_excerpt, large.body_truncated) == (
        "HTTP/1.1 503 Service Unavailable",
        b"0123456789abcdef0123",
        True,
    )
    assert (small.status_line, small.body_excerpt, small.body_truncated) == (
        "HTTP/1.1 200 OK",
        b"hello",
        False,
    )


def test_answers_are_asked_for_uncompressed_unless_the_webhook_says_otherwise() -> None:
    """The answer is kept as it comes (its excerpt is shown and judged), so the sender asks
    for it uncompressed; a webhook's own Accept-Encoding is sent as it is."""
    seen: list[bytes] = []
    plain = b"the answer, readable"

    def answer(connection: socket.socket) -> None:
        headers = seen[-1].lower()
        if b"gzip" in headers.split(b"accept-encoding:", 1)[-1].split(b"\r\n", 1)[0]:
            packed = gzip.compress(plain)
            head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
            connection.sendall(head % len(packed) + packed)
        else:
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(plain) + plain
            )

    with raw_server(answer, seen) as (url, _):
        asks_gzip = WebhookRequest("GET", url, {"Accept-Encoding": "gzip"}, None, 0.5)
        first, second = asyncio.run(
            send_all(HttpSender(policy=LOOPBACK, excerpt_bytes=64), call(url), asks_gzip)
        )
    assert b"accept-encoding: identity\r\n" in seen[0].lower()
    assert not isinstance(first, WebhookError) and first.body_excerpt == plain
    assert b"accept-encoding: gzip\r\n" in seen[1].lower()
    assert not isinstance(second, WebhookError) and second.body_excerpt == gzip.compress(plain)


def test_the_send_time_is_stamped_by_both_hooks_on_aiohttp_internals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run's start (and its lateness) is when its request was written: ``_Request`` overrides
    aiohttp's ``ClientRequest.send`` (a request without a body) and ``write_bytes`` (with one,
    its headers wait for the first chunk). These are aiohttp's internals (``write_bytes`` took
    a third argument from 3.12.0, pyproject bounds aiohttp below 3.15): should a release stop
    calling either, or call it otherwise, this fails, not the figures silently."""
    hooks: list[str] = []
    for name in ("send", "write_bytes"):
        hooked = getattr(_Request, name)

        async def spy(self: _Request, *args: Any, _name: str = name, _hooked: Any = hooked) -> Any:
            hooks.append(_name)
            return await _hooked(self, *args)

        monkeypatch.setattr(_Request, name, spy)

    def ok(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    seen: list[bytes] = []
    with raw_server(ok, seen) as (url, _):
        for request, called in (
            (call(url), ["send"]),
            (WebhookRequest("POST", url, {}, b'{"k": "v"}', 0.5), ["send", "write_bytes"]),
        ):
            hooks.clear()
            before = time.perf_counter()
            [answer] = asyncio.run(send_all(HttpSender(policy=LOOPBACK), request))
            assert isinstance(answer, WebhookResponse), answer
            assert hooks == called
            assert answer.sent_at is not None and before < answer.sent_at < time.perf_counter()
    assert [request.split(b" ", 1)[0] for request in seen] == [b"GET", b"POST"]


def test_a_call_without_an_answer_says_whether_its_request_was_written() -> None:
    def silent(connection: socket.socket) -> None:
        time.sleep(1.0)

    with raw_server(silent) as (url, _):
        before = time.perf_counter()
        [timed_out] = asyncio.run(send_all(HttpSender(policy=LOOPBACK), call(url, timeout=0.3)))
    assert isinstance(timed_out, WebhookError) and "no answer within 0.3s" in str(timed_out)
    assert timed_out.sent_at is not None and before < timed_out.sent_at < before + 0.3
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    [refused] = asyncio.run(
        send_all(HttpSender(policy=LOOPBACK), call(f"http://127.0.0.1:{port}/hook"))
    )
    assert isinstance(refused, WebhookError) and "cannot connect" in str(refused)
    assert refused.sent_at is None
