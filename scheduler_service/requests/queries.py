"""Marshmallow schemas of the API's query parameters: its listings' filters and cursors.

A listing's ``cursor`` is opaque to clients: the store's position, tagged with its endpoint
(``encode_cursor``); its query schema loads it back as that position, or names ``cursor`` for
one this endpoint did not give. Instants are loaded as aware UTC datetimes.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any, ClassVar

from marshmallow import ValidationError, fields, post_load, validate

from scheduler_service.requests.fields import Strict
from shared.formats import CHANGE_CURSOR, EXECUTION_CURSOR
from shared.model import LISTED_STATUSES, ExecutionStatus
from shared.schedule_listing import CURSOR, SEARCH_LENGTH, SORTS
from shared.timeutil import UTC, parse_iso, utc_ms


def encode_cursor(position: str | None, kind: str) -> str | None:
    """The cursor clients pass back for the store's ``position`` in the listing ``kind``."""
    if position is None:
        return None
    return base64.urlsafe_b64encode(f"{kind}:{position}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str, position: re.Pattern[str]) -> str:
    """The store's position a cursor of the listing ``kind`` names, or ``ValidationError``."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    prefix, _, raw = text.partition(":")
    if prefix != kind or not raw or not position.match(raw):
        raise ValidationError("not a cursor this endpoint gave", "cursor")
    return raw


def _instant(text: str, name: str) -> datetime:
    try:
        moment = parse_iso(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValidationError("an ISO-8601 instant with its offset, e.g. 2026-05-01T09:00Z", name)
    try:
        return utc_ms(moment.astimezone(UTC))
    except (OverflowError, ValueError):
        raise ValidationError("out of range", name) from None


def _limit() -> fields.Integer:
    return fields.Integer(
        strict=False,
        validate=validate.Range(min=1),
        metadata={"description": "page size; at most SCHEDULER_MAX_PAGE_SIZE (default 200)"},
    )


def _cursor() -> fields.String:
    return fields.String(
        validate=validate.Length(min=1, max=1024),
        metadata={"description": "next_cursor of the previous page"},
    )


class Query(Strict):
    """Query parameters: an unknown one (a typo) is a 400, not silently ignored."""


class Paged(Query):
    """The query of a listing: its ``cursor`` loaded as the store's position (once every other
    parameter is valid)."""

    cursor_kind: ClassVar[str]
    cursor_position: ClassVar[re.Pattern[str]]

    @post_load
    def to_position(self, query: dict[str, Any], **_: Any) -> dict[str, Any]:
        if "cursor" in query:
            query["cursor"] = decode_cursor(query["cursor"], self.cursor_kind, self.cursor_position)
        return query


class ListSchedulesQuery(Paged):
    cursor_kind = "s"
    cursor_position = CURSOR

    q = fields.String(
        validate=[
            validate.Length(min=1, max=SEARCH_LENGTH),
            validate.Regexp(r"[\s\S]*\S", error="must not be blank"),
        ],
        metadata={
            "description": "search: schedules whose name contains this text (letter case "
            "ignored), one of whose tags is this text, or whose URL's host contains the host "
            "this text names (a URL's path and query are sealed at rest, so not searched)"
        },
    )
    sort = fields.String(
        validate=validate.OneOf(list(SORTS)),
        metadata={
            "description": "the order: id (the default), name (letter case ignored), next "
            "(dispatch_cursor; schedules without one last) or created, each then by id; "
            "-name, -next and -created the other way round. A cursor is valid only in the order "
            "that gave it"
        },
    )
    status = fields.String(validate=validate.OneOf(LISTED_STATUSES))
    name = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "names that start with this text"},
    )
    tag = fields.String(validate=validate.Length(min=1, max=100))
    next_after = fields.String(
        validate=validate.Length(max=64),
        metadata={"description": "dispatch_cursor at or after this ISO-8601 instant"},
    )
    next_before = fields.String(
        validate=validate.Length(max=64),
        metadata={"description": "dispatch_cursor at or before this ISO-8601 instant"},
    )
    limit = _limit()
    cursor = _cursor()

    @post_load
    def to_position(self, query: dict[str, Any], **_: Any) -> dict[str, Any]:
        """The instants first, then the cursor."""
        for name in ("next_after", "next_before"):
            if name in query:
                query[name] = _instant(query[name], name)
        positioned: dict[str, Any] = super().to_position(query)
        return positioned


class ListExecutionsQuery(Paged):
    """A schedule's history."""

    cursor_kind = "e"
    cursor_position = EXECUTION_CURSOR

    status = fields.String(
        validate=validate.OneOf([status.value for status in ExecutionStatus]),
        metadata={
            "description": "only the records in this status; skipped lists the superseded ones "
            "too (sent ahead of their time, then skipped by a change, pause or delete), which "
            "the history leaves out otherwise"
        },
    )
    limit = _limit()
    cursor = _cursor()

    @post_load
    def to_position(self, query: dict[str, Any], **_: Any) -> dict[str, Any]:
        """The status as the domain names it, then the cursor."""
        if "status" in query:
            query["status"] = ExecutionStatus(query["status"])
        positioned: dict[str, Any] = super().to_position(query)
        return positioned


class ListDeadLettersQuery(Paged):
    """The tenant's dead letters."""

    cursor_kind = "d"
    cursor_position = EXECUTION_CURSOR

    limit = _limit()
    cursor = _cursor()


class ListChangesQuery(Paged):
    """A schedule's change history."""

    cursor_kind = "c"
    cursor_position = CHANGE_CURSOR

    limit = _limit()
    cursor = _cursor()
