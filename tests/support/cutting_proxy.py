"""A loopback TCP proxy that can cut a server off and put it back: a store outage on the wire.

``cut()`` resets every connection through it (an RST to both sides, as a dead link or a killed
server gives) and stops listening, so that new connections are refused; ``restore()`` listens on
the same port again. Bytes pass untouched, so any protocol goes through (MongoDB's, here).
Loopback only: it listens on 127.0.0.1 and forwards to a loopback target.

    with CuttingProxy(("127.0.0.1", 27017)) as proxy:
        url = proxy.url_for("mongodb://127.0.0.1:27017/")
        ...
        proxy.cut()
        proxy.restore()
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
# SO_LINGER on, zero seconds: close() sends an RST instead of a FIN.
_RESET = struct.pack("ii", 1, 0)


class CuttingProxy:
    """Forwards 127.0.0.1:``port`` to ``target`` on a thread of its own, until closed."""

    def __init__(self, target: tuple[str, int], port: int = 0) -> None:
        if target[0] not in LOOPBACK:
            raise ValueError(f"loopback targets only, not {target[0]}")
        self.target = target
        self.port = port
        self.cuts = 0
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        # Both ends of every connection open through the proxy.
        self._links: set[asyncio.WriteTransport] = set()
        self._thread = threading.Thread(target=self._loop.run_forever, name="cutting-proxy")

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        self._call(self._listen())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url_for(self, url: str) -> str:
        """``url`` (``scheme://host:port/…``) with its host and port replaced by the proxy's."""
        return urlunsplit(urlsplit(url)._replace(netloc=self.address))

    def cut(self) -> None:
        """Reset every connection and refuse new ones, until ``restore()``."""
        self._call(self._cut())
        self.cuts += 1

    def restore(self) -> None:
        """Accept connections again, on the same port."""
        self._call(self._listen())

    @property
    def connections(self) -> int:
        """Connections open through the proxy now (each counted once, client side)."""
        return len(self._links) // 2

    def _call(self, work: object) -> None:
        assert asyncio.iscoroutine(work)
        asyncio.run_coroutine_threadsafe(work, self._loop).result(10)

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._connection, "127.0.0.1", self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _cut(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()
        links, self._links = self._links, set()
        for transport in links:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            transport.abort()

    async def _close(self) -> None:
        await self._cut()
        # The connections' tasks end once their aborted transports report it.
        pending = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        if pending:
            await asyncio.wait(pending, timeout=5)

    async def _connection(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.target)
        except OSError:
            client_writer.transport.abort()
            return
        pair = {client_writer.transport, server_writer.transport}
        self._links |= pair
        try:
            await asyncio.gather(
                _pipe(client_reader, server_writer), _pipe(server_reader, client_writer)
            )
        finally:
            self._links -= pair


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
