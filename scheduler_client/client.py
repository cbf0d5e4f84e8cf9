"""``SchedulerClient``: every call of the API, over one urllib3 connection pool.

Retries: a request that never reached the server (connection refused or reset before it was
sent) is retried whatever the call. A call whose repeat cannot do anything twice is also retried
after a timeout, a reset mid-answer, a 429, 502, 503 or 504, with exponential backoff that
honours ``Retry-After``: reads, ``replace`` (a PUT), ``update`` (a PATCH), ``pause``,
``resume``, ``preview``, ``backfill``, and ``create``, which sends an ``Idempotency-Key`` so
that a repeat answers the same schedule.
``bulk`` sends one ``Idempotency-Key`` with each of its parts, so a retried part answers as it
first did.
``trigger`` (each call is one more run), ``delete``, ``replay`` and ``discard`` (a repeat of
one that was applied answers 404), ``rotate_signing_secret`` (each call makes one more
secret), ``create_calendar`` and ``delete_calendar`` are never repeated once sent;
``replace_calendar`` (a PUT) is.
"""

from __future__ import annotations

import builtins
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack, cast
from urllib.parse import quote

import urllib3
from urllib3.exceptions import HTTPError, MaxRetryError
from urllib3.util import Retry, Timeout

from scheduler_client.errors import ConnectionFailed, api_error
from scheduler_client.types import (
    Accepted,
    Backfilled,
    BulkDone,
    BulkDryRun,
    BulkSelector,
    Calendar,
    CalendarList,
    CalendarSummary,
    Change,
    ChangePage,
    Comparison,
    DeadLetter,
    DeadLetterPage,
    Deleted,
    Discarded,
    Execution,
    ExecutionPage,
    Occurrence,
    Preview,
    Replayed,
    Rotation,
    Schedule,
    ScheduleFilters,
    SchedulePage,
    SigningSecret,
    SigningSecretList,
    Triggered,
)

API_PREFIX = "/scheduler-service/v1"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# The ids of each outcome ``bulk`` keeps of all its parts.
BULK_IDS = 1000
_BULK_COUNTS = ("matched", "changed", "unchanged", "failed")
_BULK_LISTS = ("changed_ids", "unchanged_ids", "failures")


def api_base(url: str) -> str:
    """Where the API listens, from what a user may give: ``http://127.0.0.1:8080``, the same
    with the API's base path (as ``scheduler dev`` prints it: ``…/scheduler-service/v1``) or a
    trailing slash, or without its scheme (``127.0.0.1:8080``: http)."""
    base = url.strip()
    if "://" not in base:
        base = f"http://{base}"
    base = base.rstrip("/")
    return base.removesuffix(API_PREFIX).rstrip("/")


class SchedulerClient:
    """A client of one scheduler API.

    ``base_url`` is where the API listens (``http://127.0.0.1:8080``; the API's base path, as
    ``scheduler dev`` prints it, and a missing ``http://`` are fine too); ``api_key`` is sent as
    ``X-API-Key`` (``None`` for ``scheduler dev``, which needs none). ``timeout`` bounds
    connecting and then each read, in seconds; ``retries`` is how many times a call may be
    repeated (see the module's docstring for which), ``backoff_seconds`` the first pause.
    """

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

    def __enter__(self) -> SchedulerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schedules ----------------------------------------------------------------------------

    def create(
        self,
        body: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Accepted:
        """Create a schedule (asynchronously: ``get`` may raise ``NotFound`` for a few ms).

        Without ``idempotency_key`` a fresh one is sent, so a retry never creates a second.
        With ``traceparent`` (W3C Trace Context, and ``tracestate``), its webhook calls
        continue that trace; without, the service starts one (docs/tracing.md).
        """
        key = idempotency_key or str(uuid.uuid4())
        headers = {"Idempotency-Key": key, **_trace(traceparent, tracestate)}
        answer = self._call("POST", "/schedule", body=body, headers=headers, idempotent=True)
        return cast(Accepted, answer)

    def replace(
        self,
        schedule_id: str,
        body: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Accepted:
        """Create or replace the schedule with this id (its calls then continue
        ``traceparent``'s trace, or a new one)."""
        return self._write(
            "PUT", schedule_id, body, idempotency_key, _trace(traceparent, tracestate)
        )

    def update(
        self,
        schedule_id: str,
        changes: Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Accepted:
        """Change some fields of the schedule (a PATCH: a JSON merge patch onto the stored
        body; ``None`` removes a member). Applying the same changes twice gives the same
        schedule, so it is retried like ``replace``. Its calls then continue
        ``traceparent``'s trace, or a new one."""
        return self._write(
            "PATCH", schedule_id, changes, idempotency_key, _trace(traceparent, tracestate)
        )

    def _write(
        self,
        method: str,
        schedule_id: str,
        body: Mapping[str, Any],
        idempotency_key: str | None,
        trace: dict[str, str],
    ) -> Accepted:
        """A PUT or PATCH of the schedule: the same request gives the same schedule, so it is
        retried; with ``idempotency_key``, under that key."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        headers.update(trace)
        answer = self._call(
            method, self._path(schedule_id), body=body, headers=headers, idempotent=True
        )
        return cast(Accepted, answer)

    def diff(self, schedule_id: str, body: Mapping[str, Any]) -> Comparison:
        """What ``replace(schedule_id, body)`` would do, storing nothing: ``create``,
        ``update`` with the paths of the members it changes, or ``unchanged``; a bad body is
        refused as ``replace`` would refuse it."""
        path = self._path(schedule_id, "diff")
        return cast(Comparison, self._call("POST", path, body=body, idempotent=True))

    def get(self, schedule_id: str) -> Schedule:
        return cast(Schedule, self._call("GET", self._path(schedule_id), idempotent=True))

    def delete(self, schedule_id: str) -> Deleted:
        """Stop the schedule for good."""
        return cast(Deleted, self._call("DELETE", self._path(schedule_id), idempotent=False))

    def pause(
        self, schedule_id: str, *, until: str | None = None, note: str | None = None
    ) -> Schedule:
        """Pause; with ``until`` (an ISO instant to come) it resumes by itself then, the
        misfire policy applied to what the pause missed; ``note`` says why."""
        body = {
            name: value for name, value in (("until", until), ("note", note)) if value is not None
        }
        path = self._path(schedule_id, "pause")
        answer = self._call("POST", path, body=body or None, idempotent=True)
        return cast(Schedule, answer)

    def skip(
        self, schedule_id: str, *, count: int | None = None, at: str | None = None
    ) -> Schedule:
        """Skip the next ``count`` occurrences, or the one at ``at`` (an ISO instant it has);
        the schedule's ``skips`` shows those still to come."""
        body = {"count": count} if count is not None else {"at": at}
        answer = self._call("POST", self._path(schedule_id, "skip"), body=body, idempotent=False)
        return cast(Schedule, answer)

    def undo_skips(self, schedule_id: str, *, at: str | None = None) -> Schedule:
        """Undo the skips still to come: all, or the one at ``at``."""
        fields = {"at": at} if at is not None else None
        path = self._path(schedule_id, "skip")
        answer = self._call("DELETE", path, fields=fields, idempotent=True)
        return cast(Schedule, answer)

    def resume(self, schedule_id: str) -> Schedule:
        answer = self._call("POST", self._path(schedule_id, "resume"), idempotent=True)
        return cast(Schedule, answer)

    def trigger(self, schedule_id: str) -> Triggered:
        """Run the schedule once now, beside its own times."""
        answer = self._call("POST", self._path(schedule_id, "trigger"), idempotent=False)
        return cast(Triggered, answer)

    def backfill(
        self, schedule_id: str, start: str, end: str, *, policy: str = "fire_all"
    ) -> Backfilled:
        """Run the occurrences of ``[start, end)`` (ISO instants, in the past) that did not
        run: ``fire_all`` each, ``fire_once`` the latest. Each keeps its occurrence id, so a
        repeat runs nothing twice: it is retried like a read."""
        body = {"from": start, "to": end, "policy": policy}
        answer = self._call("POST", self._path(schedule_id, "backfill"), body=body, idempotent=True)
        return cast(Backfilled, answer)

    def bulk(
        self,
        action: str,
        selector: BulkSelector,
        *,
        patch: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> BulkDone:
        """Pause, resume, delete or patch (``action``) every schedule ``selector`` matches,
        following the API's parts to the end (``bulk_part``); the counts of every part summed
        and the first ids of each outcome. One ``Idempotency-Key`` (a fresh one unless given)
        goes with every part, so a part tried again answers as it first did."""
        key = idempotency_key or str(uuid.uuid4())
        total: dict[str, Any] = {name: 0 for name in _BULK_COUNTS}
        total |= {name: [] for name in _BULK_LISTS}
        token: str | None = None
        while True:
            part: dict[str, Any] = dict(
                self.bulk_part(action, selector, patch=patch, token=token, idempotency_key=key)
            )
            for name in _BULK_COUNTS:
                total[name] += part[name]
            for name in _BULK_LISTS:
                total[name] = (total[name] + part[name])[:BULK_IDS]
            total["parts"] = total.get("parts", 0) + 1
            token = part.get("continue")
            if part["done"] or not token:
                return cast(BulkDone, {**total, "done": True, "continue": None})

    def bulk_part(
        self,
        action: str,
        selector: BulkSelector,
        *,
        patch: Mapping[str, Any] | None = None,
        token: str | None = None,
        idempotency_key: str | None = None,
    ) -> BulkDone:
        """One part of ``bulk``, from ``token`` (the ``continue`` of the part before): its
        answer, ``done`` false with a ``continue`` when more remain."""
        body: dict[str, Any] = {"action": action, "selector": dict(selector)}
        if patch is not None:
            body["patch"] = dict(patch)
        if token is not None:
            body["continue"] = token
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        answer = self._call(
            "POST", "/schedules/bulk", body=body, headers=headers, idempotent=bool(headers)
        )
        return cast(BulkDone, answer)

    def bulk_dry_run(
        self, action: str, selector: BulkSelector, *, patch: Mapping[str, Any] | None = None
    ) -> BulkDryRun:
        """How many schedules a bulk ``action`` on ``selector`` would go over, and the first
        few; changes nothing (a ``patch`` action needs its ``patch``)."""
        body: dict[str, Any] = {"action": action, "selector": dict(selector), "dry_run": True}
        if patch is not None:
            body["patch"] = dict(patch)
        return cast(BulkDryRun, self._call("POST", "/schedules/bulk", body=body, idempotent=True))

    def preview(
        self,
        schedule: Mapping[str, Any],
        count: int = 10,
        after: str | None = None,
        calendar: Mapping[str, Any] | None = None,
    ) -> Preview:
        """The next ``count`` fire times of ``schedule`` (as in a create body) and its
        description, storing nothing; on the business days of ``calendar`` if given (as a
        create body's ``calendar``)."""
        body: dict[str, Any] = {"schedule": dict(schedule), "count": count}
        if after is not None:
            body["after"] = after
        if calendar is not None:
            body["calendar"] = dict(calendar)
        return cast(Preview, self._call("POST", "/schedule/preview", body=body, idempotent=True))

    def list(self, **filters: Unpack[ScheduleFilters]) -> Iterator[Schedule]:
        """Every schedule that matches ``filters``, by id (or in the order ``sort`` names:
        ``name``, ``next``, ``created``, ``-`` before one for the other way round), fetching a
        page (of ``limit``) at a time as it is consumed; ``search`` looks for a text in names,
        tags and URL hosts. ``list_page`` gives one page and its cursor."""
        for item in self._pages("/schedules", _schedule_query(filters)):
            yield cast(Schedule, item)

    def list_page(
        self, *, cursor: str | None = None, **filters: Unpack[ScheduleFilters]
    ) -> SchedulePage:
        """One page of ``list``: its ``items`` and the ``next_cursor`` to pass for the next
        (``None`` on the last), with the same ``sort``."""
        return cast(SchedulePage, self._page("/schedules", _schedule_query(filters), cursor))

    def executions(
        self, schedule_id: str, *, status: str | None = None, limit: int | None = None
    ) -> Iterator[Execution]:
        """The schedule's runs, newest first (with ``status``, its records in that status:
        ``skipped`` lists the superseded ones too), a page at a time as it is consumed."""
        query = {"status": status, "limit": limit}
        for item in self._pages(self._path(schedule_id, "executions"), query):
            yield cast(Execution, item)

    def executions_page(
        self,
        schedule_id: str,
        *,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ExecutionPage:
        """One page of ``executions``, with the schedule's status and its ``next_cursor``."""
        path = self._path(schedule_id, "executions")
        return cast(ExecutionPage, self._page(path, {"status": status, "limit": limit}, cursor))

    def execution(self, schedule_id: str, occurrence_id: str) -> Occurrence:
        """One occurrence of the schedule with every attempt it keeps (``attempt_log``): each
        one's start, duration, HTTP status, error, and the answer's status line and first
        bytes of its body."""
        path = self._path(schedule_id, f"executions/{quote(occurrence_id, safe='')}")
        return cast(Occurrence, self._call("GET", path, idempotent=True))

    def changes(self, schedule_id: str, *, limit: int | None = None) -> Iterator[Change]:
        """The schedule's change history, newest first, a page at a time as it is consumed:
        each change's time, action, revision, actor and fields (secrets masked)."""
        for item in self._pages(self._path(schedule_id, "changes"), {"limit": limit}):
            yield cast(Change, item)

    def changes_page(
        self, schedule_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ChangePage:
        """One page of ``changes``, with the schedule's status and its ``next_cursor``."""
        path = self._path(schedule_id, "changes")
        return cast(ChangePage, self._page(path, {"limit": limit}, cursor))

    # -- dead letters -------------------------------------------------------------------------

    def dead_letters(self, *, limit: int | None = None) -> Iterator[DeadLetter]:
        """The occurrences that failed for good, the latest failure first, a page at a time."""
        for item in self._pages("/dead-letters", {"limit": limit}):
            yield cast(DeadLetter, item)

    def dead_letters_page(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> DeadLetterPage:
        """One page of ``dead_letters`` and its ``next_cursor``."""
        return cast(DeadLetterPage, self._page("/dead-letters", {"limit": limit}, cursor))

    def replay(self, occurrence_id: str) -> Replayed:
        """Fire a dead letter again (same occurrence id and ``Idempotency-Key``), recorded as
        one more attempt. Not repeated once sent: a repeat of one that was applied is a 404."""
        path = f"/dead-letters/{quote(occurrence_id, safe='')}/replay"
        return cast(Replayed, self._call("POST", path, idempotent=False))

    def discard(self, occurrence_id: str) -> Discarded:
        """Take a dead letter off the list for good (its record stays in the history)."""
        path = f"/dead-letters/{quote(occurrence_id, safe='')}"
        return cast(Discarded, self._call("DELETE", path, idempotent=False))

    # -- signing secrets ----------------------------------------------------------------------

    def signing_secrets(self) -> builtins.list[SigningSecret]:
        """The secrets that sign the tenant's calls now (ids, creation times, states), oldest
        first; never a secret."""
        listing = cast(SigningSecretList, self._call("GET", "/signing-secrets", idempotent=True))
        return listing["items"]

    def rotate_signing_secret(self, *, overlap_seconds: int | None = None) -> Rotation:
        """Add a new signing secret; its ``secret`` is shown in this answer only. The secrets
        that signed before keep signing for ``overlap_seconds`` (the server's default when
        ``None``). Not repeated once sent: a repeat would make another secret."""
        body = {} if overlap_seconds is None else {"overlap_seconds": overlap_seconds}
        return cast(
            Rotation, self._call("POST", "/signing-secrets/rotate", body=body, idempotent=False)
        )

    # -- business calendars (admin keys) -------------------------------------------------------

    def calendars(self) -> builtins.list[CalendarSummary]:
        """The tenant's calendars, by name, without their dates."""
        listing = cast(CalendarList, self._call("GET", "/calendars", idempotent=True))
        return listing["items"]

    def calendar(self, name: str) -> Calendar:
        """One calendar with its dates."""
        return cast(Calendar, self._call("GET", _calendar_path(name), idempotent=True))

    def create_calendar(
        self,
        name: str,
        *,
        dates: Sequence[str] | None = None,
        ics: str | None = None,
        description: str = "",
    ) -> Calendar:
        """Make a calendar from its ``dates`` (``YYYY-MM-DD``) or from an iCalendar file's
        text (``ics``): one of the two. A name the tenant has already is a ``Conflict``."""
        body = _calendar_body(dates, ics, description) | {"name": name}
        return cast(Calendar, self._call("POST", "/calendars", body=body, idempotent=False))

    def replace_calendar(
        self,
        name: str,
        *,
        dates: Sequence[str] | None = None,
        ics: str | None = None,
        description: str = "",
    ) -> Calendar:
        """Replace a calendar's dates; every schedule naming it follows them from its next
        time on."""
        body = _calendar_body(dates, ics, description)
        return cast(Calendar, self._call("PUT", _calendar_path(name), body=body, idempotent=True))

    def delete_calendar(self, name: str) -> None:
        """Delete a calendar; a ``Conflict`` naming them while schedules name it."""
        self._call("DELETE", _calendar_path(name), idempotent=False)

    # -- transport ----------------------------------------------------------------------------

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
        return Retry(
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


def _reason(error: HTTPError) -> str:
    """Why a request got no answer, from the error urllib3 gave up on: the socket's own words
    (``[Errno 111] Connection refused``, ``timed out``) where it has them."""
    cause: BaseException = error
    if isinstance(error, MaxRetryError) and error.reason is not None:
        cause = error.reason
    root = cause.__cause__ or cause.__context__
    return str(root if isinstance(root, OSError) else cause)


def _schedule_query(filters: ScheduleFilters) -> dict[str, Any]:
    """The query of ``GET /schedules``: ``search`` is its ``q``."""
    return {"q" if name == "search" else name: value for name, value in filters.items()}


def _calendar_path(name: str) -> str:
    return f"/calendars/{quote(name, safe='')}"


def _calendar_body(
    dates: Sequence[str] | None, ics: str | None, description: str
) -> dict[str, Any]:
    body: dict[str, Any] = {"description": description}
    if dates is not None:
        body["dates"] = list(dates)
    if ics is not None:
        body["ics"] = ics
    return body


def _trace(traceparent: str | None, tracestate: str | None) -> dict[str, str]:
    """The W3C trace context headers of a create, replace or change."""
    headers = {"traceparent": traceparent} if traceparent else {}
    if traceparent and tracestate:
        headers["tracestate"] = tracestate
    return headers
