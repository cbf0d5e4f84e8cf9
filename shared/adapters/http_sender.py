"""The webhook sender over HTTP(S): pooled connections, a timeout on every call, no redirects,
and the SSRF guard (``shared.ssrf``) at fire time.

The timeout bounds connecting, each read of the answer's status and headers, and the whole of
reading its body (see ``_finish_body``).

Each call resolves the URL's host once, checks every address DNS answered, and connects to the
checked address itself: no second resolution, so a name cannot rebind to a private address
between the check and the connection. The request still names the host (``Host`` header) and,
for HTTPS, sends it as SNI and verifies the certificate against it, not against the address.
Redirects are not followed: a 3xx is the webhook's answer, and a redirect could lead anywhere.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError

from shared.ports import WebhookError, WebhookRequest, WebhookResponse, WebhookSender
from shared.ssrf import Resolver, TargetPolicy, TargetRefused, system_resolver

DEFAULT_PORTS = {"http": 80, "https": 443}
# The body of an answer is not used; up to this much is read so its connection can be reused.
MAX_BODY_BYTES = 64 * 1024


def _finish_body(response: urllib3.BaseHTTPResponse, deadline: float) -> None:
    """Read the answer's body within the call's deadline, then give the connection back.

    Each read waits at most until the deadline, so a body that trickles in, or one larger than
    ``MAX_BODY_BYTES``, cannot hold the call past its timeout: it is cut off and its connection
    closed instead of reused. The status is the webhook's answer either way.
    """
    sock = getattr(response.connection, "sock", None)
    received = 0
    try:
        while sock is not None and received <= MAX_BODY_BYTES:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                break
            sock.settimeout(remaining)
            chunk = response.read1(16 * 1024)
            if not chunk:
                response.release_conn()
                return
            received += len(chunk)
    except (HTTPError, OSError):
        pass
    response.close()


class HttpSender(WebhookSender):
    def __init__(
        self,
        max_connections_per_host: int = 32,
        *,
        policy: TargetPolicy | None = None,
        resolver: Resolver | None = None,
        ca_certs: str | None = None,
    ) -> None:
        """``policy`` defaults to public addresses only; ``resolver`` to the system's DNS;
        ``ca_certs`` (a PEM file) replaces the system's trusted certificates (for tests)."""
        self.policy = policy or TargetPolicy()
        self.resolver = resolver or system_resolver
        self._pool = urllib3.PoolManager(
            num_pools=64,
            maxsize=max_connections_per_host,
            block=False,
            retries=False,
            ca_certs=ca_certs,
        )

    def send(self, request: WebhookRequest) -> WebhookResponse:
        started = time.perf_counter()
        parts = urlsplit(request.url)
        scheme = parts.scheme.lower()
        host = parts.hostname
        try:
            port = parts.port or DEFAULT_PORTS.get(scheme)
        except ValueError:
            port = None
        if scheme not in DEFAULT_PORTS or not host or port is None:
            raise WebhookError(f"not an http(s) URL with a host: {scheme}://…", retryable=False)
        try:
            host = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError:
            raise WebhookError("the URL's host is not a valid name", retryable=False) from None
        try:
            address = self.policy.resolve(host, self.resolver)
        except TargetRefused as exc:
            raise WebhookError(f"refused target: {exc}", retryable=False) from None
        except OSError as exc:
            raise WebhookError(f"cannot resolve {host}: {exc}") from None
        netloc_host = f"[{host}]" if ":" in host else host
        host_header = netloc_host if port == DEFAULT_PORTS[scheme] else f"{netloc_host}:{port}"
        tls = {"server_hostname": host, "assert_hostname": host} if scheme == "https" else None
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        try:
            pool = self._pool.connection_from_host(
                str(address), port=port, scheme=scheme, pool_kwargs=tls
            )
            response = pool.urlopen(
                request.method,
                path,
                body=request.body,
                headers={**request.headers, "Host": host_header},
                timeout=urllib3.Timeout(total=request.timeout_seconds),
                redirect=False,
                retries=False,
                assert_same_host=False,
                preload_content=False,
            )
            _finish_body(response, started + request.timeout_seconds)
        except HTTPError as exc:
            raise WebhookError(f"{type(exc).__name__}: {exc}") from exc
        duration_ms = (time.perf_counter() - started) * 1000.0
        return WebhookResponse(
            status=response.status,
            headers=dict(response.headers.items()),
            duration_ms=duration_ms,
        )

    def close(self) -> None:
        self._pool.clear()
