"""Marshmallow schemas of what the API answers.

They feed the OpenAPI document (``/openapi.json``); every answer the API gives, errors included,
is declared there. Response schemas let unknown keys through (``additionalProperties``): a
client must accept fields added later.
"""

from __future__ import annotations

from marshmallow import INCLUDE, Schema, fields, validate

from shared.model import ExecutionStatus, PausedBy, ScheduleStatus

LISTED_STATUSES = [s.value for s in ScheduleStatus if s is not ScheduleStatus.DELETED]


class Open(Schema):
    class Meta:
        unknown = INCLUDE


class FieldErrorSchema(Open):
    field = fields.String(
        required=True, metadata={"description": "dotted path, e.g. schedule.cron"}
    )
    message = fields.String(required=True)


class ProblemSchema(Open):
    """RFC 7807 problem details, with the bad fields of a ``400`` in ``errors``."""

    type = fields.String(required=True)
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String()
    errors = fields.List(fields.Nested(FieldErrorSchema))


class AcceptedSchema(Open):
    id = fields.String(required=True)
    status = fields.String(required=True, metadata={"description": "always accepted"})
    revision = fields.Integer(required=True)
    next_schedule_time = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "the first time it will fire (ISO-8601 UTC); null if never"},
    )
    next_schedule_time_local = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "the same time in the schedule's timezone, with its offset"},
    )


class TimePairSchema(Open):
    utc = fields.String(required=True, metadata={"description": "ISO-8601 UTC, e.g. …Z"})
    local = fields.String(required=True, metadata={"description": "local time with its offset"})


class PreviewAnswerSchema(Open):
    occurrences = fields.List(fields.Nested(TimePairSchema), required=True)
    description = fields.String(required=True, metadata={"description": "in plain English"})


class DeletedSchema(Open):
    id = fields.String(required=True)
    status = fields.String(required=True, metadata={"description": "always deleted"})


class TriggeredSchema(Open):
    id = fields.String(required=True, metadata={"description": "the schedule"})
    occurrence_id = fields.String(
        required=True,
        metadata={
            "description": "<schedule id>:manual:<UTC time>:<random>; never equal to a scheduled "
            "occurrence's id (<schedule id>:<UTC time>); sent as Idempotency-Key"
        },
    )
    scheduled_time = fields.String(required=True)
    status = fields.String(required=True, metadata={"description": "always queued"})


# Who paused a schedule, when and why: on the schedule and on its run history.
def _paused_by() -> fields.String:
    return fields.String(
        allow_none=True,
        required=True,
        validate=validate.OneOf([who.value for who in PausedBy]),
        metadata={
            "description": "while paused: user (the pause endpoint) or failures (it paused "
            "itself, pause_after_failures); null otherwise"
        },
    )


def _paused_at() -> fields.String:
    return fields.String(
        allow_none=True, required=True, metadata={"description": "while paused: since when"}
    )


def _paused_reason() -> fields.String:
    return fields.String(
        allow_none=True, required=True, metadata={"description": "while paused: why, in words"}
    )


class ScheduleViewSchema(Open):
    id = fields.String(required=True)
    name = fields.String(required=True)
    description = fields.String(required=True)
    schedule_description = fields.String(metadata={"description": "when it fires, in English"})
    type = fields.String(required=True)
    status = fields.String(required=True, validate=validate.OneOf(LISTED_STATUSES))
    revision = fields.Integer(required=True)
    schedule = fields.Dict(required=True, metadata={"description": "as the client sent it"})
    timing = fields.Dict(required=True, metadata={"description": "the canonical form"})
    timezone = fields.String(required=True)
    next_schedule_time = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "the next time the schedule will fire (ISO-8601 UTC), as of this "
            "answer; null when it will not fire again (paused, or no occurrence left)"
        },
    )
    next_schedule_time_local = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "next_schedule_time in the schedule's timezone, with its offset"},
    )
    dispatch_cursor = fields.String(
        allow_none=True,
        metadata={
            "description": "for operators: the first occurrence the poller has not yet sent "
            "(it sends occurrences a few minutes ahead of their time); the ?next_after= and "
            "?next_before= filters of GET /schedules compare it"
        },
    )
    payload = fields.Dict(
        required=True, metadata={"description": "the call; secret values are masked"}
    )
    metadata = fields.Dict(required=True)
    tags = fields.List(fields.String(), required=True)
    priority = fields.Integer(required=True)
    jitter_seconds = fields.Float(
        required=True, metadata={"description": "each call comes up to this long after its time"}
    )
    on_failure = fields.Dict(
        allow_none=True,
        required=True,
        metadata={
            "description": "{url, headers}: where failures are reported; secret values masked"
        },
    )
    pause_after_failures = fields.Integer(
        allow_none=True,
        required=True,
        metadata={"description": "it pauses itself after this many failed occurrences in a row"},
    )
    retry = fields.Dict(required=True)
    misfire = fields.Dict(required=True)
    runs = fields.Integer(required=True)
    failures = fields.Integer(required=True)
    consecutive_failures = fields.Integer(
        required=True, metadata={"description": "failed occurrences since the last success"}
    )
    paused_by = _paused_by()
    paused_at = _paused_at()
    paused_reason = _paused_reason()
    occurrences_dispatched = fields.Integer(required=True)
    last_run_at = fields.String(allow_none=True, required=True)
    last_status = fields.String(allow_none=True, required=True)
    created_at = fields.String(required=True)
    updated_at = fields.String(required=True)


class SchedulePageSchema(Open):
    items = fields.List(fields.Nested(ScheduleViewSchema), required=True)
    next_cursor = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "pass as ?cursor= for the next page; null on the last"},
    )


class ExecutionSchema(Open):
    occurrence_id = fields.String(required=True)
    schedule_id = fields.String(required=True)
    scheduled_time = fields.String(required=True)
    status = fields.String(
        required=True, validate=validate.OneOf([s.value for s in ExecutionStatus])
    )
    attempts = fields.Integer(required=True)
    http_status = fields.Integer(allow_none=True, required=True)
    duration_ms = fields.Float(allow_none=True, required=True)
    lateness_ms = fields.Float(allow_none=True, required=True)
    error = fields.String(allow_none=True, required=True)
    started_at = fields.String(allow_none=True, required=True)
    finished_at = fields.String(allow_none=True, required=True)
    next_attempt_at = fields.String(allow_none=True, required=True)
    manual = fields.Boolean(required=True)


class AttemptSchema(Open):
    number = fields.Integer(required=True, metadata={"description": "1 for the first attempt"})
    status = fields.String(
        required=True,
        validate=validate.OneOf(["succeeded", "retrying", "failed"]),
        metadata={"description": "how the attempt ended: retrying means another one followed"},
    )
    started_at = fields.String(allow_none=True, required=True)
    finished_at = fields.String(required=True)
    duration_ms = fields.Float(allow_none=True, required=True)
    http_status = fields.Integer(
        allow_none=True, required=True, metadata={"description": "null: no answer"}
    )
    error = fields.String(allow_none=True, required=True)
    response_status_line = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "e.g. HTTP/1.1 503 Service Unavailable; null: no answer"},
    )
    response_excerpt = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "the first bytes of the answer's body as text "
            "(SCHEDULER_RESPONSE_EXCERPT_BYTES), secret-looking values masked"
        },
    )
    response_truncated = fields.Boolean(
        required=True, metadata={"description": "whether the body was longer than the excerpt"}
    )


class OccurrenceSchema(ExecutionSchema):
    attempt_log = fields.List(
        fields.Nested(AttemptSchema),
        required=True,
        metadata={
            "description": "the attempts that ended, oldest first (the last 50); one in progress "
            "shows in status running"
        },
    )


class ExecutionPageSchema(Open):
    items = fields.List(fields.Nested(ExecutionSchema), required=True)
    next_cursor = fields.String(allow_none=True, required=True)
    schedule_status = fields.String(
        required=True,
        validate=validate.OneOf([s.value for s in ScheduleStatus]),
        metadata={
            "description": "the schedule's status; deleted once it is deleted (its history stays "
            "readable until retention removes it)"
        },
    )
    paused_by = _paused_by()
    paused_at = _paused_at()
    paused_reason = _paused_reason()


class LeftOutSchema(Open):
    occurrence_id = fields.String(required=True)
    reason = fields.String(required=True)


class BackfillAnswerSchema(Open):
    id = fields.String(required=True)
    policy = fields.String(required=True)
    queued = fields.List(
        fields.String(),
        required=True,
        metadata={"description": "the occurrence ids sent to run, oldest first"},
    )
    left_out = fields.List(
        fields.Nested(LeftOutSchema),
        required=True,
        metadata={"description": "occurrences of the range not run, and why"},
    )


class DeadLetterSchema(Open):
    id = fields.String(required=True, metadata={"description": "the occurrence id"})
    schedule_id = fields.String(required=True)
    occurrence_id = fields.String(required=True)
    scheduled_time = fields.String(required=True)
    failed_at = fields.String(allow_none=True, required=True)
    attempts = fields.Integer(required=True)
    http_status = fields.Integer(allow_none=True, required=True)
    error = fields.String(allow_none=True, required=True)
    manual = fields.Boolean(required=True)


class DeadLetterPageSchema(Open):
    items = fields.List(fields.Nested(DeadLetterSchema), required=True)
    next_cursor = fields.String(allow_none=True, required=True)


class ReplayedSchema(Open):
    id = fields.String(required=True)
    schedule_id = fields.String(required=True)
    status = fields.String(required=True, metadata={"description": "always queued"})
    attempt = fields.Integer(required=True, metadata={"description": "the attempt it makes"})


class DiscardedSchema(Open):
    id = fields.String(required=True)
    status = fields.String(required=True, metadata={"description": "always discarded"})


class HealthSchema(Open):
    status = fields.String(required=True)
    checks = fields.Dict(keys=fields.String(), values=fields.String())
