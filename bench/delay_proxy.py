"""A loopback TCP proxy for the MongoDB wire protocol that adds a set delay to every command.

Each message a client sends (a MongoDB request: 16-byte header, ``messageLength`` first) is held
for ``--delay-ms`` before it goes on to the server; answers come back at once. A driver waits
for the answer of each command it sends on a connection, so every round trip costs the delay:
what a network between the workers and a cluster adds. Loopback only.

The proxy also counts the commands that pass, by name (the first key of an ``OP_MSG`` body, or
``OP_QUERY``/other opcodes by number): every command of every process that uses it, heartbeats
included (``hello``/``isMaster``), so that several processes can be counted together.

    python -m bench.delay_proxy --listen 27100 --target 127.0.0.1:27017 --delay-ms 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import struct
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.common import free_port

HEADER = struct.Struct("<i")
OP_MSG = 2013
# An OP_MSG's body: header (16), flagBits (4), section kind 0 (1), the document's length (4),
# then its first element: a type byte and the command's name as a C string.
NAME_AT = 16 + 4 + 1 + 4 + 1
# Handshakes and heartbeats: a driver's own, whatever the workload.
HANDSHAKES = frozenset({"hello", "isMaster", "ismaster"})


def command_name(message: bytes) -> str:
    """The command a MongoDB request carries, from its wire bytes (``op:<code>`` if not OP_MSG)."""
    opcode = struct.unpack_from("<i", message, 12)[0]
    if opcode != OP_MSG or len(message) <= NAME_AT or message[20] != 0:
        return f"op:{opcode}"
    end = message.find(b"\0", NAME_AT)
    return message[NAME_AT:end].decode("utf-8", "replace")


async def _requests(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    delay: float,
    counts: Counter[str],
) -> None:
    try:
        while True:
            header = await reader.readexactly(4)
            (length,) = HEADER.unpack(header)
            rest = await reader.readexactly(length - 4)
            counts[command_name(header + rest)] += 1
            if delay > 0:
                await asyncio.sleep(delay)
            writer.write(header + rest)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def _serve(
    port: int,
    target: tuple[str, int],
    delay: float,
    ready: threading.Event,
    stop: asyncio.Event,
    counts: Counter[str],
) -> None:
    async def connection(
        client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            _requests(client_reader, server_writer, delay, counts),
            _answers(server_reader, client_writer),
        )

    server = await asyncio.start_server(connection, "127.0.0.1", port)
    ready.set()
    async with server:
        await stop.wait()
    # The connections still open end with the proxy, not after its loop is gone.
    pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)


@contextlib.contextmanager
def delaying_proxy(
    port: int, target: tuple[str, int], delay_ms: float, counts: Counter[str] | None = None
) -> Iterator[str]:
    """Run the proxy on a thread of this process while the block runs; yields its host:port.

    ``counts``, if given, gets every command that passes, by name (``command_name``).
    """
    counts = Counter() if counts is None else counts
    ready = threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(_serve(port, target, delay_ms / 1000.0, ready, stop, counts))

    thread = threading.Thread(target=run, name="delay-proxy", daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the delaying proxy did not start")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


@contextlib.contextmanager
def proxied(url: str, delay_ms: float, counts: Counter[str]) -> Iterator[str]:
    """``url`` (``mongodb://host:port/…``) through a proxy that holds each command and counts it."""
    parts = urlsplit(url)
    target = (parts.hostname or "127.0.0.1", parts.port or 27017)
    with delaying_proxy(free_port(), target, delay_ms, counts) as host_port:
        yield urlunsplit(parts._replace(netloc=host_port))


def command_figures(counted: Counter[str], per: int) -> dict[str, Any]:
    """Commands counted, by name, and per item of work (``per``), handshakes apart."""
    workload = sum(n for name, n in counted.items() if name not in HANDSHAKES)
    return {
        "by_command": dict(counted.most_common()),
        "total": workload,
        "handshakes": sum(counted.values()) - workload,
        "per_item": workload / per if per else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--target", required=True, help="host:port of the MongoDB server")
    parser.add_argument("--delay-ms", type=float, default=1.0, help="added to every command")
    args = parser.parse_args()
    host, _, port = args.target.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1", "[::1]"):
        parser.error("--target: loopback only")
    ready = threading.Event()
    print(f"delaying every command by {args.delay_ms} ms: 127.0.0.1:{args.listen} -> {args.target}")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            _serve(
                args.listen,
                (host, int(port)),
                args.delay_ms / 1000.0,
                ready,
                asyncio.Event(),
                Counter(),
            )
        )


if __name__ == "__main__":
    main()
