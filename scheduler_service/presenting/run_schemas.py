"""Marshmallow schemas of the API's answers about runs: a schedule's history, one occurrence
with its attempts, the dead letters and what a replay or discard did (see ``schemas``)."""

from __future__ import annotations

from marshmallow import fields

from scheduler_service.presenting.fields import (
    Again,
    Instant,
    Milliseconds,
    Open,
    nullable,
    one_of,
    pause_fields,
    shown,
)
from shared.model import ExecutionStatus, ScheduleStatus


class ExecutionSchema(Open):
    """Dumps a ``shared.model.Execution`` (its error masked: ``views.masked_execution``)."""

    occurrence_id = shown(fields.String())
    schedule_id = shown(fields.String())
    scheduled_time = shown(Instant())
    status = one_of(ExecutionStatus)
    attempts = shown(fields.Integer())
    http_status = nullable(fields.Integer())
    duration_ms = nullable(
        Milliseconds(), "how long the latest attempt took, from its request to its answer"
    )
    lateness_ms = nullable(
        Milliseconds(),
        "how late the first attempt's request was sent after scheduled_time "
        "(which includes the schedule's jitter: jitter_ms); retries keep it (retry_delay_ms); "
        "null until an attempt ended",
    )
    retry_delay_ms = nullable(
        Milliseconds(),
        "how much later than the first attempt the latest one was sent "
        "(backoffs, Retry-After, a replay); null with one attempt",
    )
    jitter_ms = nullable(
        Milliseconds(),
        "how much after the schedule's own time scheduled_time is, by the "
        "schedule's jitter_seconds",
    )
    error = nullable(fields.String())
    started_at = nullable(
        Instant(), "the latest attempt's started_at (while it runs: when it was begun)"
    )
    finished_at = nullable(Instant())
    next_attempt_at = nullable(Instant())
    manual = shown(fields.Boolean())
    superseded = shown(
        fields.Boolean(),
        "skipped before its call: the poller had sent it ahead of its time "
        "and a change, pause or delete of the schedule came after. Not a run: listed only "
        "with ?status=skipped",
    )


class AttemptSchema(Open):
    number = shown(fields.Integer(), "1 for the first attempt")
    status = one_of(
        ["succeeded", "retrying", "failed"],
        "how the attempt ended: retrying means another one followed",
    )
    started_at = nullable(
        Instant(),
        "when its request was sent, answered or not (none was, as when the connection was "
        "refused: when the attempt was begun)",
    )
    finished_at = shown(Instant())
    duration_ms = nullable(Milliseconds())
    http_status = nullable(fields.Integer(attribute="answer.status"), "null: no answer")
    error = nullable(fields.String())
    response_status_line = nullable(
        fields.String(attribute="answer.status_line"),
        "e.g. HTTP/1.1 503 Service Unavailable; null: no answer",
    )
    response_excerpt = nullable(
        fields.String(attribute="answer.excerpt"),
        "the first bytes of the answer's body as text "
        "(SCHEDULER_RESPONSE_EXCERPT_BYTES), secret-looking values masked",
    )
    response_truncated = shown(
        fields.Boolean(attribute="answer.truncated"), "whether the body was longer than the excerpt"
    )


class OccurrenceSchema(ExecutionSchema):
    attempt_log = shown(
        fields.List(fields.Nested(AttemptSchema)),
        "the attempts that ended, oldest first (the last 50); one in progress "
        "shows in status running",
    )


class ExecutionPageSchema(Open):
    """Dumps a ``views.PageView`` of executions, with the schedule's status."""

    items = shown(fields.List(fields.Nested(ExecutionSchema)))
    next_cursor = nullable(fields.String())
    schedule_status = one_of(
        ScheduleStatus,
        "the schedule's status; deleted once it is deleted (its history stays "
        "readable until retention removes it)",
    )
    paused_by, paused_at, paused_reason = pause_fields()


class DeadLetterSchema(Open):
    """Dumps a failed ``shared.model.Execution`` (its error masked: ``views.masked_execution``)."""

    id = shown(Again(source="occurrence_id"), "the occurrence id")
    schedule_id = shown(fields.String())
    occurrence_id = shown(fields.String())
    scheduled_time = shown(Instant())
    failed_at = nullable(Instant(attribute="finished_at"))
    attempts = shown(fields.Integer())
    http_status = nullable(fields.Integer())
    error = nullable(fields.String())
    manual = shown(fields.Boolean())


class DeadLetterPageSchema(Open):
    """Dumps a ``views.PageView`` of failed executions."""

    items = shown(fields.List(fields.Nested(DeadLetterSchema)))
    next_cursor = nullable(fields.String())


class ReplayedSchema(Open):
    """Dumps a ``views.Replayed``."""

    id = shown(fields.String(attribute="execution.occurrence_id"))
    schedule_id = shown(fields.String(attribute="execution.schedule_id"))
    status = shown(fields.String(dump_default="queued"), "always queued")
    attempt = shown(fields.Integer(), "the attempt it makes")


class DiscardedSchema(Open):
    """Dumps ``{"id": <occurrence id>}``."""

    id = shown(fields.String())
    status = shown(fields.String(dump_default="discarded"), "always discarded")
