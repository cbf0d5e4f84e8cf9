"""The webhook sender's timeout holds for the whole answer, and connections are reused."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from shared.adapters.http_sender import HttpSender
from shared.ports import WebhookRequest
from shared.ssrf import TargetPolicy

LOOPBACK = TargetPolicy(("127.0.0.0/8",))


@contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[int]]]:
    """A server on 127.0.0.1 that reads each request and lets ``answer`` write the reply."""
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
        response = sender.send(call(url, timeout=0.5))
        took = time.monotonic() - started
    sender.close()
    assert response.status == 200
    assert took < 1.0


def test_a_complete_small_answer_leaves_the_connection_for_the_next_call() -> None:
    def small(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    sender = HttpSender(policy=LOOPBACK)
    with raw_server(small) as (url, accepted):
        assert [sender.send(call(url)).status for _ in range(3)] == [204, 204, 204]
    sender.close()
    assert len(accepted) == 1
