"""The API's HTTP front end (``scheduler_service.front``, ``scheduler_service.connections``):
uvicorn in a thread over the real app, with a client timeout of one second, spoken to with raw
sockets on loopback."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from scheduler_service.connections import uvicorn_config
from scheduler_service.front import WsgiFront
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

KEY = "sk_acme_0123456789abcdef"
BODY = json.dumps(
    {
        "name": "front",
        "schedule": {"cron": "0 9 * * *"},
        "payload": {"method": "POST", "url": "https://hooks.example.com/front"},
    }
).encode()


@dataclass
class Served:
    api: ApiUnderTest
    port: int

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with api_under_test(
        tmp_path,
        api_auth="keys",
        api_keys=(f"acme:{KEY}",),
        api_client_timeout_seconds=1.0,
        max_body_bytes=4096,
    ) as api:
        front = WsgiFront(api.app, threads=2, max_body_bytes=api.settings.max_body_bytes)
        server = uvicorn.Server(uvicorn_config(front, api.settings))
        listener = socket.create_server(("127.0.0.1", 0))
        # Small send buffers (the accepted sockets inherit them): over loopback the kernel
        # would otherwise take in a whole answer of a few megabytes, read or not.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.01)
        try:
            yield Served(api, listener.getsockname()[1])
        finally:
            server.should_exit = True
            thread.join(10)
            front.close()
            listener.close()


def answer(client: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def one_answer(client: socket.socket) -> tuple[bytes, dict[bytes, bytes], bytes]:
    """One answer on a kept-alive connection: its status line, headers and body."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += client.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.split(b"\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in lines)
    while len(body) < int(headers.get(b"content-length", b"0")):
        body += client.recv(65536)
    return status, headers, body


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", f"X-API-Key: {KEY}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def test_a_request_whose_headers_are_late_is_answered_408_and_closed(served: Served) -> None:
    with served.connect() as client:
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        for number in range(5):  # a line every 0.3 s: each keeps it busy, none ends it
            time.sleep(0.3)
            try:
                client.sendall(b"X-Line-%d: x\r\n" % number)
            except OSError:
                break
        received = answer(client)
        assert received.startswith(b"HTTP/1.1 408 "), received
        assert 0.9 < time.monotonic() - started < 3


def test_a_body_that_is_late_runs_nothing_and_is_closed(served: Served) -> None:
    with served.connect() as client:
        client.sendall(post(f"{API}/schedule", BODY[:20], f"Content-Length: {len(BODY)}"))
        started = time.monotonic()
        assert answer(client) == b""
        assert 0.9 < time.monotonic() - started < 3
    assert served.api.queued() == 0


def test_a_body_over_the_limit_is_413_whether_announced_or_chunked(served: Served) -> None:
    with served.connect() as client:
        client.sendall(post(f"{API}/schedule", b"", "Content-Length: 100000"))
        received = answer(client)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ") and b"application/problem+json" in head
    assert json.loads(body)["detail"] == "the body is 100000 bytes; the limit is 4096"
    chunk = b"x" * 3000
    chunked = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2 + b"0\r\n\r\n"
    with served.connect() as client:
        client.sendall(post(f"{API}/schedule", chunked, "Transfer-Encoding: chunked"))
        assert answer(client).startswith(b"HTTP/1.1 413 ")
    assert served.api.queued() == 0


def test_a_chunked_body_under_the_limit_is_taken(served: Served) -> None:
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    with served.connect() as client:
        client.sendall(
            post(
                f"{API}/schedule",
                chunked,
                "Transfer-Encoding: chunked",
                "Content-Type: application/json",
                "Connection: close",
            )
        )
        assert answer(client).startswith(b"HTTP/1.1 202 ")
    assert served.api.queued() == 1


def test_a_header_name_with_an_underscore_is_not_taken_for_one_with_a_hyphen(
    served: Served,
) -> None:
    with served.connect() as client:
        request = f"GET {API}/schedules HTTP/1.1\r\nHost: 127.0.0.1\r\nX_API_Key: {KEY}\r\n"
        client.sendall(request.encode() + b"Connection: close\r\n\r\n")
        assert answer(client).startswith(b"HTTP/1.1 401 ")


def test_an_answer_left_unread_is_dropped_and_holds_no_thread(served: Served) -> None:
    client = served.connect()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    with client:
        # Swagger UI's bundle, about 1.5 MB: far more than the socket buffers hold.
        client.sendall(b"GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.3)
        # Meanwhile both threads of the pool answer others.
        for _ in range(4):
            with served.connect() as other:
                other.sendall(
                    b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                )
                assert answer(other).startswith(b"HTTP/1.1 200 ")
        time.sleep(2)  # past the client timeout, unread
        received = b""
        with contextlib.suppress(ConnectionResetError):
            received = answer(client)
    head, _, body = received.partition(b"\r\n\r\n")
    headers = dict(line.lower().split(b": ", 1) for line in head.split(b"\r\n")[1:])
    length = int(headers[b"content-length"])
    assert length > 1_000_000
    assert len(body) < length, "the server waited for the reader rather than dropping it"


def test_kept_alive_connections_serve_one_request_after_another(served: Served) -> None:
    with served.connect() as client:
        for _ in range(3):
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            status, _, body = one_answer(client)
            assert status.startswith(b"HTTP/1.1 200 ") and json.loads(body) == {"status": "ok"}
        # The next request is late: the deadline runs again from the last answer.
        client.sendall(b"GET /healthz HTTP/1.1\r\n")
        assert answer(client).startswith(b"HTTP/1.1 408 ")
