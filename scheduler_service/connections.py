"""How the API holds connections: uvicorn (one asyncio loop a process, HTTP/1.1 by h11), with a
deadline on the client's part of each exchange and a bound on the connections served.

uvicorn closes a connection idle between requests after a few seconds, but a client that keeps
sending a byte now and then is never timed out, while it sends a request or while it (does not)
read the answer. ``ClientDeadlines`` adds both, with ``SCHEDULER_API_CLIENT_TIMEOUT_SECONDS``:

- a request (its line, headers and body) must arrive whole within that long of the connection's
  start, or of the end of the answer before it: else the connection is closed, with a ``408``
  if no request was under way;
- an answer the client stops reading (the socket's buffer full) for that long is dropped with
  its connection.

Past ``SCHEDULER_API_MAX_CONNECTIONS`` open connections a request is answered ``503`` (uvicorn's
``limit_concurrency``) and its connection closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from scheduler_service.front import WsgiFront
from shared.settings import Settings

# How long a connection may stay idle between two requests.
KEEP_ALIVE_SECONDS = 5
# Request headers larger than this are refused with 400 (h11's own default).
MAX_HEADER_BYTES = 16 * 1024
_LATE = b"the request did not arrive whole in time\n"
REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_LATE), _LATE)
)


class ClientDeadlines(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the deadlines of the module docstring; a subclass made
    by ``protocol_with`` sets ``client_timeout``."""

    client_timeout: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._request_timer: asyncio.TimerHandle | None = None
        # The exchange that ended when the request timer was armed: a request under way is a
        # newer one.
        self._armed_after: object = None
        self._write_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_request_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._disarm_if_arrived()

    def on_response_complete(self) -> None:
        finished = self.cycle
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_request_timer(finished)
            self._disarm_if_arrived()  # a pipelined request may be here whole already

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.client_timeout, self._drop)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._request_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self._request_timer = self._write_timer = None
        super().connection_lost(exc)

    def _arm_request_timer(self, finished: object = None) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
        self._armed_after = finished
        self._request_timer = self.loop.call_later(self.client_timeout, self._request_late)

    def _under_way(self) -> bool:
        """Whether a request's line and headers have arrived since the timer was armed."""
        return self.cycle is not None and self.cycle is not self._armed_after

    def _disarm_if_arrived(self) -> None:
        if self._request_timer is not None and self._under_way() and not self.cycle.more_body:
            self._request_timer.cancel()
            self._request_timer = None

    def _request_late(self) -> None:
        self._request_timer = None
        if self.transport.is_closing():
            return
        if not self._under_way():
            self.transport.write(REQUEST_TIMEOUT)
        # With a request under way (its body late), the app is told the client left.
        self.transport.close()

    def _drop(self) -> None:
        self._write_timer = None
        self.transport.abort()  # close() would wait to send what is buffered first


def protocol_with(client_timeout: float) -> type[ClientDeadlines]:
    """``ClientDeadlines`` with ``client_timeout`` (uvicorn makes a protocol per connection
    from a class)."""
    return type("ClientDeadlines", (ClientDeadlines,), {"client_timeout": client_timeout})


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """uvicorn's ``Config`` arguments for the API, beside the app: the protocol with its
    deadlines, the connection bound, no lifespan, no access log, no log set-up of its own."""
    return {
        "http": protocol_with(settings.api_client_timeout_seconds),
        "lifespan": "off",
        # uvicorn answers 503 once the open connections, this one included, reach the limit.
        "limit_concurrency": settings.api_max_connections + 1,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
        "access_log": False,
        "log_config": None,
        "server_header": False,
    }


def uvicorn_config(front: WsgiFront, settings: Settings) -> Config:
    return Config(front, **uvicorn_options(settings))
