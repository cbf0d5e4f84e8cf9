"""The API's HTTP front end: one event loop per process reads each request whole, then a thread
of a fixed pool runs the Flask app on it.

uvicorn holds every connection on the loop (``scheduler_service.connections`` bounds how long
a client may take and how many connections are served); ``WsgiFront`` is the ASGI app it
calls. It reads the body into memory first (at most ``SCHEDULER_MAX_BODY_BYTES``), hands the
request to one of ``SCHEDULER_API_THREADS`` threads, takes the whole answer back from it and
lets the loop send it: a client that sends or reads slowly never holds a thread, and an idle
connection costs a descriptor and a few kilobytes on the loop.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol
from urllib.parse import unquote_to_bytes

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]


class WsgiApplication(Protocol):
    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]: ...


class WsgiFront:
    """An ASGI app that runs ``app`` (WSGI) on ``threads`` threads, each request read whole
    first and each answer taken whole from its thread (see the module docstring)."""

    def __init__(self, app: WsgiApplication, threads: int, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="api")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websockets here; uvicorn closes them
        body = await self._body(scope, receive, send)
        if body is None:
            return
        environ = wsgi_environ(scope, body)
        loop = asyncio.get_running_loop()
        status, headers, content = await loop.run_in_executor(self.pool, self._run, environ)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body; ``None`` when the client left, or after a 413 for one too large."""
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            detail = f"the body is {int(declared)} bytes; the limit is {self.max_body_bytes}"
            await _too_large(send, detail)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await _too_large(send, f"the body reaches the limit of {self.max_body_bytes} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _run(self, environ: dict[str, Any]) -> tuple[int, Headers, bytes]:
        """In a thread of the pool: the app's status, headers and whole body."""
        started: list[tuple[int, Headers]] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            if exc_info is not None and started:
                raise exc_info[1].with_traceback(exc_info[2])
            started[:] = [
                (
                    int(status.split(" ", 1)[0]),
                    [
                        (name.lower().encode("latin-1"), value.encode("latin-1"))
                        for name, value in headers
                    ],
                )
            ]
            return written.append

        written: list[bytes] = []
        result = self.app(environ, start_response)
        try:
            written.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = started[0]
        return status, headers, b"".join(written)


def wsgi_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP request whose body was read whole."""
    server = scope.get("server") or ("localhost", 80)
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    root_path = scope.get("root_path", "").encode("utf-8")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root_path.decode("latin-1"),
        # Percent escapes undone on the bytes, as WSGI servers do: nothing is lost to UTF-8.
        "PATH_INFO": unquote_to_bytes(raw_path[len(root_path) :]).decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = client[0], str(client[1])
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1")
        if "_" in name:
            continue  # it would pass for the header with a hyphen there (as gunicorn drops it)
        if name in ("content-length", "transfer-encoding"):
            continue  # the body is whole: its length is known
        key = "CONTENT_TYPE" if name == "content-type" else "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    if body or scope["method"] in ("POST", "PUT", "PATCH"):
        environ["CONTENT_LENGTH"] = str(len(body))
    return environ


async def _too_large(send: Send, detail: str) -> None:
    problem = {"type": "about:blank", "title": "Payload Too Large", "status": 413, "detail": detail}
    body = json.dumps(problem).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
