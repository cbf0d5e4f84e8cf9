"""The webhook sender over HTTP(S): pooled connections, a timeout on every call, no redirects."""

from __future__ import annotations

import time

import urllib3
from urllib3.exceptions import HTTPError

from shared.ports import WebhookError, WebhookRequest, WebhookResponse, WebhookSender


class HttpSender(WebhookSender):
    def __init__(self, max_connections_per_host: int = 32) -> None:
        self._pool = urllib3.PoolManager(
            num_pools=64,
            maxsize=max_connections_per_host,
            block=False,
            retries=False,
        )

    def send(self, request: WebhookRequest) -> WebhookResponse:
        started = time.perf_counter()
        try:
            response = self._pool.request(
                request.method,
                request.url,
                body=request.body,
                headers=dict(request.headers),
                timeout=urllib3.Timeout(total=request.timeout_seconds),
                redirect=False,
                preload_content=False,
            )
            try:
                # The body is not used; reading it lets the connection be reused.
                response.drain_conn()
            finally:
                response.release_conn()
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
