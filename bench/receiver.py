"""The webhook receiver the benchmarks fire at: asyncio, raw HTTP/1.1, in its own process.

It is not what is measured, so it must be faster than any executor: no framework, keep-alive,
one ``200`` with an empty body per request, and the arrival time (``time.time()`` when the
request is complete) recorded with the ``X-Scheduler-Scheduled-Time`` and ``Idempotency-Key``
headers the caller sent. Control requests under ``/__bench/`` read and reset the record.

``python -m bench.receiver --port 0`` prints ``listening <port>`` once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from typing import Any

from bench.common import ROOT

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

Arrival = tuple[float, str, str]  # (arrival epoch seconds, scheduled time text, idempotency key)


class Record:
    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []


class ReceiverProtocol(asyncio.Protocol):
    def __init__(self, record: Record) -> None:
        self.record = record
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1")
            lines = head.split("\r\n")
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            self.buffer = self.buffer[total:]
            arrived = time.time()
            target = lines[0].split(" ")[1] if " " in lines[0] else "/"
            assert self.transport is not None
            if target.startswith("/__bench/"):
                self.transport.write(self._control(target))
                continue
            self.record.arrivals.append(
                (
                    arrived,
                    headers.get("x-scheduler-scheduled-time", ""),
                    headers.get("idempotency-key", ""),
                )
            )
            self.transport.write(OK)

    def _control(self, target: str) -> bytes:
        body: Any
        if target == "/__bench/count":
            body = {"count": len(self.record.arrivals)}
        elif target == "/__bench/dump":
            body = self.record.arrivals
        elif target == "/__bench/reset":
            self.record.arrivals = []
            body = {"count": 0}
        else:
            body = {"error": "unknown"}
        data = json.dumps(body).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        return head % len(data) + data


async def serve(port: int) -> None:
    record = Record()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ReceiverProtocol(record), "127.0.0.1", port, backlog=1024
    )
    bound = server.sockets[0].getsockname()[1]
    print(f"listening {bound}", flush=True)
    async with server:
        await server.serve_forever()


class ReceiverProcess:
    """Starts the receiver in its own process and talks to its control endpoints."""

    def __init__(self) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bench.receiver", "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.popen.stdout is not None
        line = self.popen.stdout.readline().split()
        if len(line) != 2 or line[0] != "listening":
            raise RuntimeError(f"receiver did not start: {line!r}")
        self.port = int(line[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def _get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.url}/__bench/{path}", timeout=30) as response:
            return json.loads(response.read())

    def count(self) -> int:
        count: int = self._get("count")["count"]
        return count

    def dump(self) -> list[Arrival]:
        return [(float(at), str(scheduled), str(key)) for at, scheduled, key in self._get("dump")]

    def reset(self) -> None:
        self._get("reset")

    def wait_for(self, count: int, deadline: float) -> int:
        """Poll until ``count`` calls arrived or ``time.time()`` passes ``deadline``."""
        seen = self.count()
        while seen < count and time.time() < deadline:
            time.sleep(0.2)
            seen = self.count()
        return seen

    def stop(self) -> None:
        self.popen.terminate()
        self.popen.wait(10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
