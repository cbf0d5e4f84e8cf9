"""The transport every call of ``SchedulerClient`` goes through: one urllib3 connection pool,
the retries the ``scheduler_client.client`` docstring describes, and the API's errors raised as
``ApiError``s. The calls themselves are grouped by resource in the other modules of the package,
each a mixin of ``Transport``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Self
from urllib.parse import quote

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError
from urllib3.util import Retry, Timeout

from scheduler_client.errors import ConnectionFailed, api_error

API_PREFIX = "/scheduler-service/v1"
RETRY_STATUSES = frozenset({429, 502, 503, 504})


def api_base(url: str) -> str:
    """Where the API listens, from what a user may give: ``http://127.0.0.1:8080``, the same
    with the API's base path (as ``scheduler dev`` prints it: ``…/scheduler-service/v1``) or a
    trailing slash, or without its scheme (``127.0.0.1:8080``: http)."""
    base = url.strip()
    if "://" not in base:
        base = f"http://{base}"
    base = base.rstrip("/")
    return base.removesuffix(API_PREFIX).rstrip("/")


class _Retry(Retry):
    """urllib3's ``Retry``, which also repeats a 409 with ``Retry-After``: the API's answer to a
    request whose ``Idempotency-Key`` a first request is still working on (repeated with the
    key, it gets that one's answer). A 409 without it (a key reused with another body, a
    conflict) is not repeated."""

    RETRY_AFTER_STATUS_CODES = frozenset({*Retry.RETRY_AFTER_STATUS_CODES, 409})


class Transport:
    """The connection to one scheduler API and the requests sent over it (``SchedulerClient``
    documents the arguments)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff_seconds: float = 0.5,
        max_backoff_seconds: float = 10.0,
    ) -> None:
        self.base_url = api_base(base_url)
        self.timeout = Timeout(connect=timeout, read=timeout)
        self.retries = retries
        self.backoff_seconds = backoff_seconds
        self.max_backoff_seconds = max_backoff_seconds
        self._headers = {"Accept": "application/json", "User-Agent": "scheduler-client/0.1"}
        if api_key is not None:
            self._headers["X-API-Key"] = api_key
        self._pool = urllib3.PoolManager()

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _path(schedule_id: str, action: str | None = None) -> str:
        path = f"/schedule/{quote(schedule_id, safe='')}"
        return f"{path}/{action}" if action else path

    def _page(
        self, path: str, query: Mapping[str, Any], cursor: str | None = None
    ) -> dict[str, Any]:
        fields = {name: str(value) for name, value in query.items() if value is not None}
        if cursor is not None:
            fields["cursor"] = cursor
        page: dict[str, Any] = self._call("GET", path, fields=fields, idempotent=True)
        return page

    def _pages(self, path: str, query: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            page = self._page(path, query, cursor)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def _retry(self, idempotent: bool) -> Retry:
        again = self.retries if idempotent else 0
        return _Retry(
            total=self.retries,
            connect=self.retries,
            read=again,
            status=again,
            other=0,
            redirect=0,
            allowed_methods=None,
            status_forcelist=RETRY_STATUSES,
            backoff_factor=self.backoff_seconds,
            backoff_max=self.max_backoff_seconds,
            respect_retry_after_header=True,
            raise_on_status=False,
            raise_on_redirect=False,
        )

    def _call(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool,
        body: Mapping[str, Any] | None = None,
        fields: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        url = f"{self.base_url}{API_PREFIX}{path}"
        sent = {**self._headers, **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        try:
            response = self._pool.request(
                method,
                url,
                body=data,
                fields=dict(fields) if fields else None,
                headers=sent,
                timeout=self.timeout,
                retries=self._retry(idempotent),
            )
        except HTTPError as exc:
            raise ConnectionFailed(f"{method} {url}: {exc}", _reason(exc)) from exc
        try:
            answer = json.loads(response.data) if response.data else None
        except ValueError:
            answer = None
        if response.status >= 400:
            problem = answer if isinstance(answer, dict) else {"title": response.reason or ""}
            raise api_error(response.status, problem)
        return answer


def only_known(call: str, options: Mapping[str, object], spec: Any) -> None:
    """A keyword the ``TypedDict`` ``spec`` does not name is a ``TypeError``, as a keyword missing
    from ``call``'s signature would be (its options are typed as ``**options: Unpack[spec]``)."""
    unknown = sorted(set(options) - spec.__required_keys__ - spec.__optional_keys__)
    if unknown:
        raise TypeError(f"{call}() got an unexpected keyword argument {unknown[0]!r}")


def _reason(error: HTTPError) -> str:
    """Why a request got no answer, from the error urllib3 gave up on: the socket's own words
    (``[Errno 111] Connection refused``, ``timed out``) where it has them."""
    cause: BaseException = error
    if isinstance(error, MaxRetryError) and error.reason is not None:
        cause = error.reason
    root = cause.__cause__ or cause.__context__
    return str(root if isinstance(root, OSError) else cause)
