"""A webhook receiver on 127.0.0.1 that records every call and answers as told."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scheduler_cli.receiver import ReceiverServer
from shared.timeutil import parse_iso

# Linux's SO_TIMESTAMPNS (Python's socket module does not name it): the kernel stamps each
# packet as it arrives, and recvmsg gives the stamp (a struct timespec) of the data it reads.
SO_TIMESTAMPNS = 35
TIMESPEC = struct.Struct("qq")


@dataclass(frozen=True)
class Call:
    # When the request's first byte reached the receiver's socket, by the kernel's clock
    # (``time.time()``'s): not delayed by this process waiting for a core or its GIL.
    received_at: float
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder = Callable[[Call], tuple[int, dict[str, str]]]
# The body of each answer (none by default).
BodyOf = Callable[[Call], bytes]


def answers(*statuses: int | tuple[int, dict[str, str]]) -> Responder:
    """Answer each delivery of an occurrence (by its ``Idempotency-Key``) with the next status,
    with its headers if given; the last one repeats."""
    plan = [status if isinstance(status, tuple) else (status, {}) for status in statuses]
    count = Counter[str]()

    def respond(call: Call) -> tuple[int, dict[str, str]]:
        key = call.headers.get("idempotency-key", "")
        index = min(count[key], len(plan) - 1)
        count[key] += 1
        return plan[index]

    return respond


def lateness(call: Call) -> float:
    """How late the call came after its scheduled time, in seconds, by the receiver's clock."""
    scheduled = parse_iso(call.headers["x-scheduler-scheduled-time"]).timestamp()
    return call.received_at - scheduled


def arrival(connection: socket.socket) -> float:
    """When the next request's first byte arrived (waiting for it; the clients here never
    pipeline, so nothing of it is read yet), by the kernel's stamp; now if it gave none."""
    _, ancillary, _, _ = connection.recvmsg(1, socket.CMSG_SPACE(TIMESPEC.size), socket.MSG_PEEK)
    for level, kind, data in ancillary:
        if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
            seconds, nanoseconds = TIMESPEC.unpack(data)
            return seconds + nanoseconds / 1e9
    return time.time()


class Receiver:
    def __init__(self, respond: Responder | None = None, body: BodyOf | None = None) -> None:
        self.calls: list[Call] = []
        self.respond: Responder = respond or (lambda call: (200, {}))
        self.body_of: BodyOf = body or (lambda call: b"")
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one_request(self) -> None:
                self.arrived = arrival(self.connection)
                super().handle_one_request()

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                call = Call(
                    self.arrived,
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {name.lower(): value for name, value in self.headers.items()},
                    body,
                )
                status, headers = receiver.respond(call)
                answer = receiver.body_of(call)
                with receiver._arrived:
                    receiver.calls.append(call)
                    receiver._arrived.notify_all()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                return None

        # Its listen queue holds the executors' burst of new connections: none waits a second
        # for TCP to send its SYN again, which would put its arrival behind later calls.
        self.server = ReceiverServer(("127.0.0.1", 0), Handler)
        # Set on the listening socket, the connections it accepts have it from their first byte.
        self.server.socket.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Receiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float) -> list[Call]:
        """Wait until at least ``count`` calls arrived (or ``timeout``); return all calls."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.calls) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._arrived.wait(remaining)
            return list(self.calls)


@contextmanager
def running_receiver(
    respond: Responder | None = None, body: BodyOf | None = None
) -> Iterator[Receiver]:
    receiver = Receiver(respond, body).start()
    try:
        yield receiver
    finally:
        receiver.stop()
