"""Marshmallow schemas of what the API answers: one definition of each shape.

They feed the OpenAPI document (``/openapi.json``) and build the answers: each dumps the domain
object (or the view of it, ``scheduler_service.presenting.views``) that its endpoint answers
with, reading its fields by ``attribute``; a status that is always the same (``accepted``,
``queued`` …) is the field's ``dump_default``. Every answer the API gives, errors included, is
declared there.
Response schemas let unknown keys through (``additionalProperties``): a client must accept
fields added later. Every instant is one format, ``2026-05-01T07:00:00.000Z`` (``Instant``),
``format: date-time`` in the document (``document_fields``), and a local time the same with
its offset (``LocalTime``).
"""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields, validate
from marshmallow.utils import get_value

from shared.model import LISTED_STATUSES, ExecutionStatus, PausedBy, ScheduleStatus, Unit
from shared.timeutil import iso_local, iso_z, load_zone


class Open(Schema):
    class Meta:
        unknown = INCLUDE


class Instant(fields.String):
    """An instant, as ISO-8601 UTC to the millisecond (``2026-05-01T07:00:00.000Z``)."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else iso_z(value)


class Milliseconds(fields.Float):
    """A figure in milliseconds, to a tenth (``2.5``): no float noise."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> float | None:
        return None if value is None else round(float(value), 1)


class Choice(fields.String):
    """One of the values of the enum schema ``component`` of the document, or ``null`` where
    ``allow_none``: documented as a reference to it, so that a generated client has one type
    for it wherever it appears (not an enum per field, nor one per field and null)."""

    def __init__(self, *, component: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.component = component


# The enums ``Choice`` fields name, as the document's components.
ENUMS: dict[str, list[str]] = {"PausedBy": [who.value for who in PausedBy]}


def document_fields(api: Any) -> None:
    """Teach the API's OpenAPI document the fields of this module: instants are
    ``format: date-time``, a ``Choice`` refers to its enum component, and a nullable reference
    is ``{allOf: [$ref], nullable: true}`` (apispec's ``anyOf`` with a nullable object makes a
    generated client invent a class for the null)."""
    for field in (Instant, LocalTime):
        api.register_field(field, "string", "date-time")
    for name, values in ENUMS.items():
        api.spec.components.schema(name, {"type": "string", "enum": values})

    def reference(converter: Any, field: Any, ret: dict[str, Any], **_: Any) -> dict[str, Any]:
        if isinstance(field, Choice):
            ret.pop("type", None)
            return {"allOf": [{"$ref": f"#/components/schemas/{field.component}"}]}
        match ret.get("anyOf"):
            case [{"type": "object", "nullable": True}, {"$ref": str()} as target] | [
                {"$ref": str()} as target,
                {"type": "object", "nullable": True},
            ]:
                del ret["anyOf"]
                return {"allOf": [target], "nullable": True}
        return {}

    api.ma_plugin.converter.add_attribute_function(reference)


class Again(fields.String):
    """What the dumped object holds in ``source``, shown again under this field's name (as
    ``attribute`` would, but marshmallow lets no two fields share an ``attribute``)."""

    def __init__(self, *, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return get_value(obj, self.source)


class LocalTime(Again):
    """The instant the dumped object holds in ``source``, as the wall time with its offset in
    the zone it names in ``zone`` (``2026-05-01T09:00:00+02:00``)."""

    def __init__(self, *, source: str, zone: str, **kwargs: Any) -> None:
        super().__init__(source=source, **kwargs)
        self.zone = zone

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else iso_local(value, load_zone(get_value(obj, self.zone)))


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
    """Dumps a ``scheduler_service.service.Accepted``."""

    id = fields.String(required=True, attribute="schedule_id")
    status = fields.String(
        required=True, dump_default="accepted", metadata={"description": "always accepted"}
    )
    revision = fields.Integer(required=True)
    next_schedule_time = Instant(
        allow_none=True,
        required=True,
        metadata={"description": "the first time it will fire (ISO-8601 UTC); null if never"},
    )
    next_schedule_time_local = LocalTime(
        source="next_schedule_time",
        zone="timezone",
        allow_none=True,
        required=True,
        metadata={"description": "the same time in the schedule's timezone, with its offset"},
    )


class TimePairSchema(Open):
    """Dumps a ``views.TimePair``."""

    utc = Instant(
        attribute="moment", required=True, metadata={"description": "ISO-8601 UTC, e.g. …Z"}
    )
    local = LocalTime(
        source="moment",
        zone="timezone",
        required=True,
        metadata={"description": "local time with its offset"},
    )


class PreviewAnswerSchema(Open):
    """Dumps a ``views.PreviewView``."""

    occurrences = fields.List(fields.Nested(TimePairSchema), required=True)
    description = fields.String(required=True, metadata={"description": "in plain English"})


class DeletedSchema(Open):
    """Dumps ``{"id": <schedule id>}``."""

    id = fields.String(required=True)
    status = fields.String(
        required=True, dump_default="deleted", metadata={"description": "always deleted"}
    )


class TriggeredSchema(Open):
    """Dumps the ``shared.model.Occurrence`` of the run."""

    id = fields.String(
        required=True, attribute="schedule_id", metadata={"description": "the schedule"}
    )
    occurrence_id = fields.String(
        required=True,
        metadata={
            "description": "<schedule id>:manual:<UTC time>:<random>; never equal to a scheduled "
            "occurrence's id (<schedule id>:<UTC time>); sent as Idempotency-Key"
        },
    )
    scheduled_time = Instant(required=True)
    status = fields.String(
        required=True, dump_default="queued", metadata={"description": "always queued"}
    )


# Who paused a schedule, when and why: on the schedule and on its run history, each read from
# the ``pause`` (``views.PauseView``) of what is dumped.
def _paused_by() -> Choice:
    return Choice(
        component="PausedBy",
        allow_none=True,
        required=True,
        attribute="pause.paused_by",
        metadata={
            "description": "while paused: user (the pause endpoint) or failures (it paused "
            "itself, pause_after_failures); null otherwise"
        },
    )


def _paused_at() -> Instant:
    return Instant(
        allow_none=True,
        required=True,
        attribute="pause.paused_at",
        metadata={"description": "while paused: since when"},
    )


def _paused_reason() -> fields.String:
    return fields.String(
        allow_none=True,
        required=True,
        attribute="pause.paused_reason",
        metadata={"description": "while paused: why, in words"},
    )


class FailureHookSchema(Open):
    """Dumps a masked ``on_failure`` hook (``shared.secrets.masked_hook``)."""

    url = fields.String(required=True)
    headers = fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class EverySchema(Open):
    number = fields.Integer(required=True)
    unit = fields.String(required=True, validate=validate.OneOf([unit.value for unit in Unit]))


class TimingViewSchema(Open):
    """Dumps a ``views.TimingView``: the canonical form of when it fires, exactly one of
    ``at``, ``interval``, ``cron`` and ``rrule`` set."""

    timezone = fields.String(required=True)
    at = Instant(allow_none=True, required=True, metadata={"description": "a one-time schedule"})
    interval = fields.Nested(EverySchema, allow_none=True, required=True)
    cron = fields.String(allow_none=True, required=True)
    rrule = fields.String(allow_none=True, required=True)
    start = Instant(allow_none=True, required=True)
    end = Instant(
        allow_none=True, required=True, metadata={"description": "no occurrence after it"}
    )
    max_occurrences = fields.Integer(allow_none=True, required=True)


class ScheduleViewSchema(Open):
    """Dumps a ``views.ScheduleView``."""

    id = fields.String(required=True, attribute="schedule.schedule_id")
    name = fields.String(required=True, attribute="definition.name")
    description = fields.String(required=True, attribute="definition.description")
    schedule_description = fields.String(metadata={"description": "when it fires, in English"})
    type = fields.String(required=True, attribute="definition.type")
    status = fields.String(
        required=True, validate=validate.OneOf(LISTED_STATUSES), attribute="schedule.status"
    )
    revision = fields.Integer(required=True, attribute="schedule.revision")
    schedule = fields.Dict(
        required=True,
        attribute="schedule_as_sent",
        metadata={"description": "as the client sent it"},
    )
    timing = fields.Nested(
        TimingViewSchema,
        required=True,
        attribute="timing_view",
        metadata={
            "description": "the canonical form, its times as instants: a local wall time of "
            "schedule is the instant it names in timezone"
        },
    )
    timezone = fields.String(required=True)
    next_schedule_time = Instant(
        attribute="next_time",
        allow_none=True,
        required=True,
        metadata={
            "description": "the next time the schedule will fire (ISO-8601 UTC), as of this "
            "answer; null when it will not fire again (paused, or no occurrence left)"
        },
    )
    next_schedule_time_local = LocalTime(
        source="next_time",
        zone="timezone",
        allow_none=True,
        required=True,
        metadata={"description": "next_schedule_time in the schedule's timezone, with its offset"},
    )
    dispatch_cursor = Instant(
        attribute="schedule.next_schedule_time",
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
    metadata = fields.Dict(required=True, attribute="definition.metadata")
    tags = fields.List(fields.String(), required=True, attribute="definition.tags")
    priority = fields.Integer(required=True, attribute="definition.priority")
    retry = fields.Dict(required=True, attribute="retry_document")
    misfire = fields.Dict(required=True, attribute="misfire_document")
    jitter_seconds = fields.Float(
        required=True,
        attribute="definition.jitter_seconds",
        metadata={"description": "each call comes up to this long after its time"},
    )
    pause_after_failures = fields.Integer(
        allow_none=True,
        required=True,
        attribute="definition.pause_after_failures",
        metadata={"description": "it pauses itself after this many failed occurrences in a row"},
    )
    on_failure = fields.Nested(
        FailureHookSchema,
        allow_none=True,
        required=True,
        metadata={"description": "where failures are reported; secret values masked"},
    )
    runs = fields.Integer(required=True, attribute="schedule.run_count")
    failures = fields.Integer(required=True, attribute="schedule.failure_count")
    consecutive_failures = fields.Integer(
        required=True,
        attribute="schedule.consecutive_failures",
        metadata={"description": "failed occurrences since the last success"},
    )
    paused_by = _paused_by()
    paused_at = _paused_at()
    paused_reason = _paused_reason()
    superseded = fields.Integer(
        required=True,
        attribute="schedule.superseded_count",
        metadata={
            "description": "occurrences the poller had sent ahead of their time that a later "
            "change, pause or delete superseded (skipped, never called); listed by "
            "GET …/executions?status=skipped"
        },
    )
    occurrences_sent = fields.Integer(
        required=True,
        attribute="schedule.occurrence_count",
        metadata={
            "description": "occurrences of this version of the schedule (since its last create, "
            "replace or PATCH) the poller has sent to the executors, those it sent ahead of "
            "their time included (up to the look-ahead, 5 minutes): not runs (runs counts "
            "those); what max_occurrences counts"
        },
    )
    last_run_at = Instant(allow_none=True, required=True, attribute="schedule.last_run_at")
    last_status = fields.String(allow_none=True, required=True, attribute="schedule.last_status")
    created_at = Instant(required=True, attribute="schedule.created_at")
    updated_at = Instant(required=True, attribute="schedule.updated_at")


class SchedulePageSchema(Open):
    """Dumps a ``views.PageView`` of ``ScheduleView``."""

    items = fields.List(fields.Nested(ScheduleViewSchema), required=True)
    next_cursor = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "pass as ?cursor= for the next page; null on the last"},
    )


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
    paused_by = _paused_by()
    paused_at = _paused_at()
    paused_reason = _paused_reason()


class LeftOutSchema(Open):
    """Dumps a ``scheduler_service.service.LeftOut``."""

    occurrence_id = fields.String(required=True)
    reason = fields.String(required=True)


class BackfillAnswerSchema(Open):
    """Dumps a ``scheduler_service.service.Backfill``."""

    id = fields.String(required=True, attribute="schedule_id")
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


class HealthSchema(Open):
    status = fields.String(required=True)
    checks = fields.Dict(keys=fields.String(), values=fields.String())
