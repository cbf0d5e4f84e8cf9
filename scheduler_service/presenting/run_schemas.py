"""Marshmallow schemas of the API's answers about runs: a schedule's history, one occurrence
with its attempts, the dead letters and what a replay or discard did (see ``schemas``)."""

from __future__ import annotations

from marshmallow import fields, validate

from scheduler_service.presenting.fields import (
    Again,
    Instant,
    Milliseconds,
    Open,
    paused_at,
    paused_by,
    paused_reason,
)
from shared.model import ExecutionStatus, ScheduleStatus


class ExecutionSchema(Open):
    """Dumps a ``shared.model.Execution`` (its error masked: ``views.masked_execution``)."""

    occurrence_id = fields.String(required=True)
    schedule_id = fields.String(required=True)
    scheduled_time = Instant(required=True)
    status = fields.String(
        required=True, validate=validate.OneOf([s.value for s in ExecutionStatus])
    )
    attempts = fields.Integer(required=True)
    http_status = fields.Integer(allow_none=True, required=True)
    duration_ms = Milliseconds(
        allow_none=True,
        required=True,
        metadata={
            "description": "how long the latest attempt took, from its request to its answer"
        },
    )
    lateness_ms = Milliseconds(
        allow_none=True,
        required=True,
        metadata={
            "description": "how late the first attempt's request was sent after scheduled_time "
            "(which includes the schedule's jitter: jitter_ms); retries keep it (retry_delay_ms); "
            "null until an attempt ended"
        },
    )
    retry_delay_ms = Milliseconds(
        allow_none=True,
        required=True,
        metadata={
            "description": "how much later than the first attempt the latest one was sent "
            "(backoffs, Retry-After, a replay); null with one attempt"
        },
    )
    jitter_ms = Milliseconds(
        allow_none=True,
        required=True,
        metadata={
            "description": "how much after the schedule's own time scheduled_time is, by the "
            "schedule's jitter_seconds"
        },
    )
    error = fields.String(allow_none=True, required=True)
    started_at = Instant(
        allow_none=True,
        required=True,
        metadata={
            "description": "when the latest attempt's request was sent (while it runs: when it "
            "was begun)"
        },
    )
    finished_at = Instant(allow_none=True, required=True)
    next_attempt_at = Instant(allow_none=True, required=True)
    manual = fields.Boolean(required=True)
    superseded = fields.Boolean(
        required=True,
        metadata={
            "description": "skipped before its call: the poller had sent it ahead of its time "
            "and a change, pause or delete of the schedule came after. Not a run: listed only "
            "with ?status=skipped"
        },
    )


class AttemptSchema(Open):
    number = fields.Integer(required=True, metadata={"description": "1 for the first attempt"})
    status = fields.String(
        required=True,
        validate=validate.OneOf(["succeeded", "retrying", "failed"]),
        metadata={"description": "how the attempt ended: retrying means another one followed"},
    )
    started_at = Instant(
        allow_none=True, required=True, metadata={"description": "when its request was sent"}
    )
    finished_at = Instant(required=True)
    duration_ms = Milliseconds(allow_none=True, required=True)
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
    """Dumps a ``views.PageView`` of executions, with the schedule's status."""

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
    paused_by = paused_by()
    paused_at = paused_at()
    paused_reason = paused_reason()


class DeadLetterSchema(Open):
    """Dumps a failed ``shared.model.Execution`` (its error masked: ``views.masked_execution``)."""

    id = Again(required=True, source="occurrence_id", metadata={"description": "the occurrence id"})
    schedule_id = fields.String(required=True)
    occurrence_id = fields.String(required=True)
    scheduled_time = Instant(required=True)
    failed_at = Instant(allow_none=True, required=True, attribute="finished_at")
    attempts = fields.Integer(required=True)
    http_status = fields.Integer(allow_none=True, required=True)
    error = fields.String(allow_none=True, required=True)
    manual = fields.Boolean(required=True)


class DeadLetterPageSchema(Open):
    """Dumps a ``views.PageView`` of failed executions."""

    items = fields.List(fields.Nested(DeadLetterSchema), required=True)
    next_cursor = fields.String(allow_none=True, required=True)


class ReplayedSchema(Open):
    """Dumps a ``views.Replayed``."""

    id = fields.String(required=True, attribute="execution.occurrence_id")
    schedule_id = fields.String(required=True, attribute="execution.schedule_id")
    status = fields.String(
        required=True, dump_default="queued", metadata={"description": "always queued"}
    )
    attempt = fields.Integer(required=True, metadata={"description": "the attempt it makes"})


class DiscardedSchema(Open):
    """Dumps ``{"id": <occurrence id>}``."""

    id = fields.String(required=True)
    status = fields.String(
        required=True, dump_default="discarded", metadata={"description": "always discarded"}
    )
