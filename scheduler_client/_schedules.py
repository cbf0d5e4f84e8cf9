"""The calls of ``SchedulerClient`` on schedules: write, read, act on one, preview, list, and
each one's executions and change history."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Unpack, cast
from urllib.parse import quote

from scheduler_client._transport import Transport, only_known
from scheduler_client.types import (
    Accepted,
    Backfilled,
    Change,
    ChangePage,
    Comparison,
    Deleted,
    Execution,
    ExecutionFilters,
    ExecutionPage,
    Occurrence,
    Preview,
    Schedule,
    ScheduleFilters,
    SchedulePage,
    Triggered,
    WriteOptions,
)


class Schedules(Transport):
    def create(self, body: Mapping[str, Any], **options: Unpack[WriteOptions]) -> Accepted:
        """Create a schedule (asynchronously: ``get`` may raise ``NotFound`` for a few ms).

        Without ``idempotency_key`` a fresh one is sent, so a retry never creates a second.
        With ``traceparent`` (W3C Trace Context, and ``tracestate``), its webhook calls
        continue that trace; without, the service starts one (docs/tracing.md).
        """
        only_known("create", options, WriteOptions)
        key = options.get("idempotency_key") or str(uuid.uuid4())
        headers = {"Idempotency-Key": key, **_trace(options)}
        answer = self._call("POST", "/schedule", body=body, headers=headers, idempotent=True)
        return cast(Accepted, answer)

    def replace(
        self, schedule_id: str, body: Mapping[str, Any], **options: Unpack[WriteOptions]
    ) -> Accepted:
        """Create or replace the schedule with this id (its calls then continue
        ``traceparent``'s trace, or a new one)."""
        only_known("replace", options, WriteOptions)
        return self._write("PUT", schedule_id, body, options)

    def update(
        self, schedule_id: str, changes: Mapping[str, Any], **options: Unpack[WriteOptions]
    ) -> Accepted:
        """Change some fields of the schedule (a PATCH: a JSON merge patch onto the stored
        body; ``None`` removes a member). Applying the same changes twice gives the same
        schedule, so it is retried like ``replace``. Its calls then continue
        ``traceparent``'s trace, or a new one."""
        only_known("update", options, WriteOptions)
        return self._write("PATCH", schedule_id, changes, options)

    def _write(
        self, method: str, schedule_id: str, body: Mapping[str, Any], options: WriteOptions
    ) -> Accepted:
        """A PUT or PATCH of the schedule: the same request gives the same schedule, so it is
        retried; with ``idempotency_key``, under that key."""
        key = options.get("idempotency_key")
        headers = {"Idempotency-Key": key} if key else {}
        headers.update(_trace(options))
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
        tags and URL hosts. ``list_page`` gives one page and its cursor. A keyword that is not
        one of these is a ``TypeError`` (raised by the call, before any request)."""
        only_known("list", filters, ScheduleFilters)
        return cast(Iterator[Schedule], self._pages("/schedules", _schedule_query(filters)))

    def list_page(
        self, *, cursor: str | None = None, **filters: Unpack[ScheduleFilters]
    ) -> SchedulePage:
        """One page of ``list``: its ``items`` and the ``next_cursor`` to pass for the next
        (``None`` on the last), with the same ``sort``."""
        only_known("list_page", filters, ScheduleFilters)
        return cast(SchedulePage, self._page("/schedules", _schedule_query(filters), cursor))

    def executions(
        self, schedule_id: str, **filters: Unpack[ExecutionFilters]
    ) -> Iterator[Execution]:
        """The schedule's runs, newest first (with ``status``, its records in that status:
        ``skipped`` lists the superseded ones too), a page at a time as it is consumed."""
        only_known("executions", filters, ExecutionFilters)
        return cast(
            Iterator[Execution], self._pages(self._path(schedule_id, "executions"), filters)
        )

    def executions_page(
        self,
        schedule_id: str,
        *,
        cursor: str | None = None,
        **filters: Unpack[ExecutionFilters],
    ) -> ExecutionPage:
        """One page of ``executions``, with the schedule's status and its ``next_cursor``."""
        only_known("executions_page", filters, ExecutionFilters)
        path = self._path(schedule_id, "executions")
        return cast(ExecutionPage, self._page(path, filters, cursor))

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


def _schedule_query(filters: ScheduleFilters) -> dict[str, Any]:
    """The query of ``GET /schedules``: ``search`` is its ``q``."""
    return {"q" if name == "search" else name: value for name, value in filters.items()}


def _trace(options: WriteOptions) -> dict[str, str]:
    """The W3C trace context headers of a create, replace or change."""
    traceparent, tracestate = options.get("traceparent"), options.get("tracestate")
    headers = {"traceparent": traceparent} if traceparent else {}
    if traceparent and tracestate:
        headers["tracestate"] = tracestate
    return headers
