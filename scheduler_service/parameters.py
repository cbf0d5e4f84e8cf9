"""Marshmallow schemas of the API's query and header parameters."""

from __future__ import annotations

from marshmallow import EXCLUDE, RAISE, Schema, fields, validate

from scheduler_service.responses import LISTED_STATUSES


class Parameters(Schema):
    class Meta:
        unknown = EXCLUDE


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


class Query(Schema):
    """Query parameters: an unknown one (a typo) is a 400, not silently ignored."""

    class Meta:
        unknown = RAISE


class ListSchedulesQuery(Query):
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


class ListExecutionsQuery(Query):
    limit = _limit()
    cursor = _cursor()


IDEMPOTENCY_KEY = r"^[\x21-\x7e]{1,255}$"


class IdempotencyHeader(Parameters):
    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        validate=validate.Regexp(
            IDEMPOTENCY_KEY, error="1 to 255 visible ASCII characters, e.g. a UUID"
        ),
        metadata={
            "description": "a repeat of the request with the same key and body answers the same "
            "schedule and creates nothing; with another body it is a 409. Kept 24 h by default."
        },
    )
