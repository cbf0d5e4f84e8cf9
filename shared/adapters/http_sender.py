"""The webhook sender over HTTP(S) on the event loop (aiohttp): keep-alive connections per host,
one total deadline per call, no redirects, and the SSRF guard (``shared.ssrf``) in the resolver.

The deadline (the request's ``timeout_seconds``) covers the whole call: resolving the name,
connecting, sending, and the answer's status and headers (a server that trickles its headers is
cut off at the deadline: no answer). Its body is read, up to ``MAX_BODY_BYTES``, until the same
deadline; a larger or trickling body is cut off and its connection closed, and the status is
the answer. Of the body, the first ``excerpt_bytes`` are kept (the rest is read and dropped).

A new connection resolves the URL's host once, through ``GuardedResolver``: every address DNS
answered is checked, and the connection goes to the checked addresses only, so a name cannot
rebind to a private address between the check and the connection. They are tried in the
resolver's order (families interleaved, RFC 8305): the next starts when one fails, or 250 ms
after one that has not answered yet (aiohttp's Happy Eyeballs), all within the call's one
deadline; ``localhost`` answering ``::1`` first, where nothing listens, reaches 127.0.0.1. The
request still names the host (``Host`` header) and, for HTTPS, sends it as SNI and verifies the
certificate against it. A connection kept alive stays with the address it was checked for. A
host written as an address is checked before the call (aiohttp connects to a literal without
asking the resolver). No error names an address the host resolved to (``shared.ssrf``).
Redirects are not followed: a 3xx is the webhook's answer, and a redirect could lead anywhere.

Each answer says when its request was written to its connection (``sent_at``), after the name
resolved and the connection opened: the moment its receiver sees it; so does the error of a
call whose request was written but got no answer (a timeout, a connection reset). aiohttp writes
a request without a body in ``ClientRequest.send``; with a body, the headers wait for its first
chunk, written by ``ClientRequest.write_bytes`` in a task of its own (a later turn of the loop).
Each is stamped as it starts (``_Request``), on the note of the call (``_Sent``) that
``HttpSender.send`` sets in its context (the body's task is made in it, with a copy of it). Not
with tracing (``TraceConfig``): its
``on_request_headers_sent`` fires before the headers are even serialized, and its events cost
each call about 85,000 instructions (12 %) where the stamps cost nothing to speak of.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
import time
from contextvars import ContextVar
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, AbstractStreamWriter, ResolveResult
from aiohttp.connector import Connection

from shared.ports import WebhookError, WebhookRequest, WebhookResponse, WebhookSender
from shared.ssrf import (
    Resolver,
    TargetPolicy,
    TargetRefused,
    literal_address,
    refused,
    system_resolver,
)

DEFAULT_PORTS = {"http": 80, "https": 443}
# Up to this much of an answer's body is read, so its connection can be reused; only its start
# is kept (``excerpt_bytes``).
MAX_BODY_BYTES = 64 * 1024
# How many URLs' checks (scheme, host, a host written as an address) are remembered.
REMEMBERED_URLS = 4096


class _Sent:
    """When the request of a call was written to its connection (``time.perf_counter``); None
    until it is."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None


# The note of the call the current task makes (``HttpSender.send``).
_SENT: ContextVar[_Sent | None] = ContextVar("sent", default=None)


class _Request(aiohttp.ClientRequest):
    """A request that stamps the note of its call (``_SENT``) as ``send`` writes it without a
    body, or as ``write_bytes`` writes its headers with the body's first chunk."""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        sent = _SENT.get()
        if sent is not None:
            sent.at = time.perf_counter()
        return await super().send(conn)

    async def write_bytes(
        self, writer: AbstractStreamWriter, conn: Connection, content_length: int | None = None
    ) -> None:
        sent = _SENT.get()
        if sent is not None:
            sent.at = time.perf_counter()
        await super().write_bytes(writer, conn, content_length)


class GuardedResolver(AbstractResolver):
    """Resolves a name once (``resolver``, off the loop) and answers only checked addresses."""

    def __init__(self, policy: TargetPolicy, resolver: Resolver) -> None:
        self.policy = policy
        self.resolver = resolver

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        loop = asyncio.get_running_loop()
        addresses = await loop.run_in_executor(None, self.policy.resolve, host, self.resolver)
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]

    async def close(self) -> None:
        return None


class HttpSender(WebhookSender):
    def __init__(
        self,
        max_connections: int = 0,
        *,
        policy: TargetPolicy | None = None,
        resolver: Resolver | None = None,
        ca_certs: str | None = None,
        excerpt_bytes: int = 0,
    ) -> None:
        """``max_connections`` bounds open connections (0: no bound; the executor bounds calls
        in flight itself); ``policy`` defaults to public addresses only; ``resolver`` to the
        system's DNS; ``ca_certs`` (a PEM file) replaces the system's trusted certificates;
        ``excerpt_bytes``: how much of each answer's body to give back (at most
        ``MAX_BODY_BYTES``)."""
        self.excerpt_bytes = min(excerpt_bytes, MAX_BODY_BYTES)
        self.policy = policy or TargetPolicy()
        self.resolver = resolver or system_resolver
        self.max_connections = max_connections
        # Made here, not at the first call: loading the trusted certificates takes tens of
        # milliseconds, which would make the first webhook after a start that much late.
        self._tls = ssl.create_default_context(cafile=ca_certs)
        # Made on the loop of the first call (aiohttp's session belongs to one loop).
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Each URL's host once checked, and why it cannot be called (None: it can).
        self._urls: dict[str, tuple[str, str | None]] = {}

    def _session_on(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        if self._session is not None and self._loop is loop and not self._session.closed:
            return self._session
        connector = aiohttp.TCPConnector(
            limit=self.max_connections,
            limit_per_host=0,
            resolver=GuardedResolver(self.policy, self.resolver),
            # Every new connection is checked: no answer of DNS outlives its check.
            use_dns_cache=False,
            ssl=self._tls,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            # Answers are kept as they come (not decompressed: a small compressed body could
            # grow past every bound), so they are asked for uncompressed; a webhook that sets
            # its own Accept-Encoding keeps it (aiohttp would send "gzip, deflate").
            headers={"Accept-Encoding": "identity"},
            # The webhook's own headers only: no cookies kept between calls.
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("Content-Type",),
            # The call's one deadline is kept by ``send`` itself, around every step.
            timeout=aiohttp.ClientTimeout(total=None),
            request_class=_Request,
        )
        self._loop = loop
        return self._session

    async def send(self, request: WebhookRequest) -> WebhookResponse:
        started = time.perf_counter()
        host = self._checked_host(request.url)
        loop = asyncio.get_running_loop()
        session = self._session_on(loop)
        response: aiohttp.ClientResponse | None = None
        body = _Body(self.excerpt_bytes, min(request.body_bytes, MAX_BODY_BYTES))
        sent = _Sent()
        noted = _SENT.set(sent)
        try:
            # One deadline for the whole call: the answer's status and headers, then its body.
            async with asyncio.timeout_at(loop.time() + request.timeout_seconds):
                response = await session.request(
                    request.method,
                    request.url,
                    data=request.body,
                    headers=request.headers,
                    allow_redirects=False,
                )
                await body.finish(response)
        except (TimeoutError, aiohttp.ClientError, TargetRefused) as exc:
            if response is None:
                raise _no_answer(exc, host, request.timeout_seconds, sent.at) from None
            # The status is the webhook's answer; the rest of its body is not waited for.
            body.complete = False
            response.close()
        finally:
            _SENT.reset(noted)
            if response is not None:
                response.release()
        duration_ms = (time.perf_counter() - started) * 1000.0
        version = response.version
        status_line = f"HTTP/{version.major}.{version.minor} {response.status}" if version else ""
        return WebhookResponse(
            status=response.status,
            headers=dict(response.headers.items()),
            duration_ms=duration_ms,
            status_line=f"{status_line} {response.reason}" if response.reason else status_line,
            body_excerpt=bytes(body.excerpt),
            body_truncated=body.truncated,
            body=bytes(body.whole),
            body_complete=body.complete,
            sent_at=sent.at,
        )

    def _checked_host(self, url: str) -> str:
        """The URL's host (IDNA-encoded), or ``WebhookError`` when the URL is not http(s) with a
        host or names a refused address; remembered for the URLs seen last."""
        try:
            host, refusal = self._urls[url]
        except KeyError:
            if len(self._urls) >= REMEMBERED_URLS:
                self._urls.clear()
            host, refusal = self._urls[url] = self._check(url)
        if refusal is not None:
            raise WebhookError(refusal, retryable=False)
        return host

    def _check(self, url: str) -> tuple[str, str | None]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        host = parts.hostname
        try:
            port = parts.port or DEFAULT_PORTS.get(scheme)
        except ValueError:
            port = None
        if scheme not in DEFAULT_PORTS or not host or port is None:
            return "", f"not an http(s) URL with a host: {scheme}://…"
        try:
            host = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError:
            return "", "the URL's host is not a valid name"
        refusal = self._literal_refusal(host)
        return host, None if refusal is None else f"refused target: {refusal}"

    def _literal_refusal(self, host: str) -> str | None:
        """Why a host written as an address is refused (None: allowed, or a name)."""
        literal = literal_address(host)
        rule = None if literal is None else self.policy.refusal(literal)
        return None if rule is None else refused(host, rule, literal)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _no_answer(
    error: Exception, host: str, timeout_seconds: float, sent_at: float | None
) -> WebhookError:
    """The error of a call that got no answer, naming no address the host resolved to; with
    when its request was written, if it was."""
    if isinstance(error, TargetRefused | aiohttp.InvalidURL):
        return WebhookError(f"refused target: {error}", retryable=False)
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return WebhookError(f"cannot resolve {host}: {error.os_error}")
    if isinstance(error, aiohttp.ClientSSLError):
        return WebhookError(f"TLS failed (certificate or hostname): {error}")
    if isinstance(error, aiohttp.ClientConnectorError):
        return WebhookError(f"cannot connect to {error.host}:{error.port}: {_why(error.os_error)}")
    if isinstance(error, TimeoutError):
        reason = f"timed out: no answer within {timeout_seconds:g}s"
    else:
        reason = f"{type(error).__name__}: {error}"
    return WebhookError(reason, sent_at=sent_at)


def _why(error: OSError) -> str:
    """Why connecting failed, without the addresses tried: the system's words for each error
    number (every address failing alike gives one; aiohappyeyeballs' "Multiple exceptions"
    lists each address with its own)."""
    numbers = [error.errno] if error.errno else re.findall(r"\[Errno (\d+)\]", str(error))
    reasons = dict.fromkeys(os.strerror(int(number)) for number in numbers)
    return "; ".join(reasons) or "connection failed"


class _Body:
    """An answer's body as it is read: its first ``keep`` bytes, and whether there was more;
    and its first ``read`` bytes, and whether that was all of it (``complete``)."""

    def __init__(self, keep: int, read: int = 0) -> None:
        self.keep = keep
        self.read = read
        self.excerpt = bytearray()
        self.truncated = False
        self.whole = bytearray()
        self.complete = True

    async def finish(self, response: aiohttp.ClientResponse) -> None:
        """Read the body (up to ``MAX_BODY_BYTES``) within the call's deadline, keeping its
        start; a longer one is cut off and its connection closed rather than given back for
        reuse."""
        received = 0
        while received <= MAX_BODY_BYTES:
            chunk = await response.content.readany()
            if not chunk:
                return
            if received < self.keep:
                self.excerpt += chunk[: self.keep - received]
            if received < self.read:
                self.whole += chunk[: self.read - received]
            received += len(chunk)
            self.truncated = received > self.keep
            self.complete = received <= self.read
        self.complete = False
        response.close()
