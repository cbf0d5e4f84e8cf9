"""Marshmallow schemas of what the API answers: one definition of each shape.

They feed the OpenAPI document (``/openapi.json``) and build the answers: each dumps the domain
object (or the view of it, ``scheduler_service.presenting.views``) that its endpoint answers
with, reading its fields by ``attribute``; a status that is always the same (``accepted``,
``queued`` …) is the field's ``dump_default``. Every answer the API gives, errors included, is
declared there.
Response schemas let unknown keys through (``additionalProperties``): a client must accept
fields added later; their fields are those of ``scheduler_service.presenting.fields``. The
answers about runs (histories, attempts, dead letters) are in ``run_schemas``.
"""

from __future__ import annotations

from typing import Any

from marshmallow import fields, validate

from scheduler_service.presenting.fields import (
    Instant,
    LocalTime,
    Open,
    paused_at,
    paused_by,
    paused_reason,
)
from scheduler_service.requests.targets import PAYLOAD_DOCUMENT
from shared.model import LISTED_STATUSES, OverlapPolicy, Unit
from shared.notations import TIMING_NOTATIONS, MemberKind, TimingNotation
from shared.recurrence.business import Shift


class FieldErrorSchema(Open):
    field = fields.String(
        required=True, metadata={"description": "dotted path, e.g. schedule.cron"}
    )
    message = fields.String(required=True)


class ProblemSchema(Open):
    """RFC 7807 problem details, with the bad fields of a ``400`` in ``errors`` and the role a
    ``403`` refused for in ``required_role``."""

    type = fields.String(required=True)
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String()
    errors = fields.List(fields.Nested(FieldErrorSchema))
    required_role = fields.String(
        metadata={
            "description": "A 403 for the API key's role: the role the request needs",
            "enum": ["read", "write", "admin"],
        }
    )


class ComparisonSchema(Open):
    """Dumps a ``scheduler_service.service.comparing.Comparison``."""

    id = fields.String(required=True, attribute="schedule_id")
    action = fields.String(
        required=True,
        validate=validate.OneOf(["create", "update", "unchanged"]),
        metadata={"description": "what a PUT of this body would do"},
    )
    changes = fields.List(
        fields.String(),
        required=True,
        metadata={
            "description": "for an update: the members it changes, as paths (payload.url, "
            "tags); never their values"
        },
    )


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


class AlertViewSchema(Open):
    """A schedule's ``alert`` (``shared.model.Alert``)."""

    late_after_seconds = fields.Integer(
        required=True,
        metadata={"description": "an occurrence not started this long after its time is late"},
    )


class FailureHookSchema(Open):
    """Dumps a masked ``on_failure`` hook (``shared.secrets.masked_hook``)."""

    url = fields.String(required=True)
    headers = fields.Dict(keys=fields.String(), values=fields.String(), required=True)


class CalendarViewSchema(Open):
    """Dumps a schedule's ``calendar`` (``shared.calendars.CalendarRule``)."""

    # ``exclude`` is a Schema's own attribute: the field is named apart.
    names = fields.List(
        fields.String(),
        required=True,
        data_key="exclude",
        attribute="exclude",
        metadata={"description": "the tenant's calendars"},
    )
    shift = fields.String(
        required=True,
        validate=validate.OneOf([shift.value for shift in Shift]),
        metadata={"description": "what an occurrence on a day off does"},
    )


class EverySchema(Open):
    number = fields.Integer(required=True)
    unit = fields.String(required=True, validate=validate.OneOf([unit.value for unit in Unit]))


def _notation_field(notation: TimingNotation) -> fields.Field[Any]:
    """How an answer shows a notation's value, by its ``view_kind`` (``None`` but the timing's
    own notation)."""
    metadata = {"description": notation.view_description} if notation.view_description else {}
    common: dict[str, Any] = {
        "allow_none": True,
        "required": True,
        "attribute": f"values.{notation.name}",
        "metadata": metadata,
    }
    if notation.view_kind is MemberKind.DATE_TIME:
        return Instant(**common)
    if notation.view_kind is MemberKind.INTERVAL:
        return fields.Nested(EverySchema, **common)
    return fields.String(**common)


# Dumps a ``views.TimingView``: the canonical form of when it fires, each
# notation of ``shared.notations`` a member, the timing's own set, the others null.
TimingViewSchema = type(
    "TimingViewSchema",
    (Open,),
    {
        "__module__": __name__,
        "__doc__": "Dumps a ``views.TimingView``: the canonical form of when "
        "it fires, exactly one notation set.",
        "timezone": fields.String(required=True),
        **{notation.name: _notation_field(notation) for notation in TIMING_NOTATIONS.values()},
        "start": Instant(allow_none=True, required=True),
        "end": Instant(
            allow_none=True, required=True, metadata={"description": "no occurrence after it"}
        ),
        "max_occurrences": fields.Integer(allow_none=True, required=True),
    },
)


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
    payload = fields.Raw(
        required=True,
        metadata={
            **PAYLOAD_DOCUMENT,
            "description": f"{PAYLOAD_DOCUMENT['description']}; secret values are masked",
        },
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
    overlap = fields.Enum(
        OverlapPolicy,
        by_value=True,
        required=True,
        attribute="definition.overlap",
        metadata={
            "description": "allow, skip or buffer_one: what an occurrence due while an earlier "
            "one is still running or waiting to retry does"
        },
    )
    alert = fields.Nested(
        AlertViewSchema,
        allow_none=True,
        required=True,
        attribute="definition.alert",
        metadata={"description": "lateness and absence told at on_failure; null: not told"},
    )
    managed_by = fields.String(
        allow_none=True,
        required=True,
        attribute="definition.managed_by",
        metadata={"description": "what keeps it (`scheduler apply`'s label); null: by hand"},
    )
    calendar = fields.Nested(
        CalendarViewSchema,
        allow_none=True,
        required=True,
        attribute="calendar_document",
        metadata={
            "description": "business days only: not weekends nor the dates of the calendars "
            "named; null: every day"
        },
    )
    runs = fields.Integer(required=True, attribute="schedule.run_count")
    failures = fields.Integer(required=True, attribute="schedule.failure_count")
    consecutive_failures = fields.Integer(
        required=True,
        attribute="schedule.consecutive_failures",
        metadata={"description": "failed occurrences since the last success"},
    )
    paused_by = paused_by()
    paused_at = paused_at()
    paused_reason = paused_reason()
    paused_until = Instant(
        allow_none=True,
        required=True,
        attribute="pause.paused_until",
        metadata={"description": "while paused: when it resumes by itself; null: when resumed"},
    )
    pause_note = fields.String(
        allow_none=True,
        required=True,
        attribute="pause.pause_note",
        metadata={"description": "while paused: the note its pause was given"},
    )
    pause_set_by = fields.String(
        allow_none=True,
        required=True,
        attribute="pause.pause_set_by",
        metadata={
            "description": "while paused: who paused it (the API key's name and id, console, "
            "system)"
        },
    )
    skips = fields.List(
        Instant(),
        required=True,
        attribute="pending_skips",
        metadata={
            "description": "the occurrences still to come that it skips (POST …/skip), "
            "earliest first"
        },
    )
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
    trace_id = fields.String(
        allow_none=True,
        required=True,
        metadata={
            "description": "the W3C trace its webhook calls continue (each call's traceparent): "
            "the one of the request that created or last replaced it (docs/tracing.md); null "
            "for a schedule stored before traces were kept"
        },
    )


class SchedulePageSchema(Open):
    """Dumps a ``views.PageView`` of ``ScheduleView``."""

    items = fields.List(fields.Nested(ScheduleViewSchema), required=True)
    next_cursor = fields.String(
        allow_none=True,
        required=True,
        metadata={"description": "pass as ?cursor= for the next page; null on the last"},
    )


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


class HealthSchema(Open):
    status = fields.String(required=True)
    checks = fields.Dict(keys=fields.String(), values=fields.String())
