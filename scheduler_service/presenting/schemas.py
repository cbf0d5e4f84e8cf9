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

from marshmallow import fields

from scheduler_service.presenting.fields import (
    Instant,
    LocalTime,
    Open,
    nullable,
    one_of,
    pause_fields,
    shown,
)
from scheduler_service.requests.targets import PAYLOAD_DOCUMENT
from shared.model import LISTED_STATUSES, OverlapPolicy, Unit
from shared.notations import TIMING_NOTATIONS, MemberKind, TimingNotation
from shared.recurrence.business import Shift


class FieldErrorSchema(Open):
    field = shown(fields.String(), "dotted path, e.g. schedule.cron")
    message = shown(fields.String())


class ProblemSchema(Open):
    """RFC 7807 problem details, with the bad fields of a ``400`` in ``errors`` and the role a
    ``403`` refused for in ``required_role``."""

    type = shown(fields.String())
    title = shown(fields.String())
    status = shown(fields.Integer())
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

    id = shown(fields.String(attribute="schedule_id"))
    action = one_of(["create", "update", "unchanged"], "what a PUT of this body would do")
    changes = shown(
        fields.List(fields.String()),
        "for an update: the members it changes, as paths (payload.url, tags); never their values",
    )


class AcceptedSchema(Open):
    """Dumps a ``scheduler_service.service.Accepted``."""

    id = shown(fields.String(attribute="schedule_id"))
    status = shown(fields.String(dump_default="accepted"), "always accepted")
    revision = shown(fields.Integer())
    next_schedule_time = nullable(
        Instant(), "the first time it will fire (ISO-8601 UTC); null if never"
    )
    next_schedule_time_local = nullable(
        LocalTime(source="next_schedule_time", zone="timezone"),
        "the same time in the schedule's timezone, with its offset",
    )


class TimePairSchema(Open):
    """Dumps a ``views.TimePair``."""

    utc = shown(Instant(attribute="moment"), "ISO-8601 UTC, e.g. …Z")
    local = shown(LocalTime(source="moment", zone="timezone"), "local time with its offset")


class PreviewAnswerSchema(Open):
    """Dumps a ``views.PreviewView``."""

    occurrences = shown(fields.List(fields.Nested(TimePairSchema)))
    description = shown(fields.String(), "in plain English")


class DeletedSchema(Open):
    """Dumps ``{"id": <schedule id>}``."""

    id = shown(fields.String())
    status = shown(fields.String(dump_default="deleted"), "always deleted")


class TriggeredSchema(Open):
    """Dumps the ``shared.model.Occurrence`` of the run."""

    id = shown(fields.String(attribute="schedule_id"), "the schedule")
    occurrence_id = shown(
        fields.String(),
        "<schedule id>:manual:<UTC time>:<random>; never equal to a scheduled "
        "occurrence's id (<schedule id>:<UTC time>); sent as Idempotency-Key",
    )
    scheduled_time = shown(Instant())
    status = shown(fields.String(dump_default="queued"), "always queued")


class AlertViewSchema(Open):
    """A schedule's ``alert`` (``shared.model.Alert``)."""

    late_after_seconds = shown(
        fields.Integer(), "an occurrence not started this long after its time is late"
    )


class FailureHookSchema(Open):
    """Dumps a masked ``on_failure`` hook (``shared.secrets.masked_hook``)."""

    url = shown(fields.String())
    headers = shown(fields.Dict(keys=fields.String(), values=fields.String()))


class CalendarViewSchema(Open):
    """Dumps a schedule's ``calendar`` (``shared.calendars.CalendarRule``)."""

    # ``exclude`` is a Schema's own attribute: the field is named apart.
    names = shown(
        fields.List(fields.String(), data_key="exclude", attribute="exclude"),
        "the tenant's calendars",
    )
    shift = one_of(Shift, "what an occurrence on a day off does")


class EverySchema(Open):
    number = shown(fields.Integer())
    unit = one_of(Unit)


def _notation_field(notation: TimingNotation) -> fields.Field[Any]:
    """How an answer shows a notation's value, by its ``view_kind`` (``None`` but the timing's
    own notation)."""
    attribute = f"values.{notation.name}"
    field: fields.Field[Any]
    if notation.view_kind is MemberKind.DATE_TIME:
        field = Instant(attribute=attribute)
    elif notation.view_kind is MemberKind.INTERVAL:
        field = fields.Nested(EverySchema, attribute=attribute)
    else:
        field = fields.String(attribute=attribute)
    return nullable(field, notation.view_description or None)


# Dumps a ``views.TimingView``: the canonical form of when it fires, each
# notation of ``shared.notations`` a member, the timing's own set, the others null.
TimingViewSchema = type(
    "TimingViewSchema",
    (Open,),
    {
        "__module__": __name__,
        "__doc__": "Dumps a ``views.TimingView``: the canonical form of when "
        "it fires, exactly one notation set.",
        "timezone": shown(fields.String()),
        **{notation.name: _notation_field(notation) for notation in TIMING_NOTATIONS.values()},
        "start": nullable(Instant()),
        "end": nullable(Instant(), "no occurrence after it"),
        "max_occurrences": nullable(fields.Integer()),
    },
)


class ScheduleViewSchema(Open):
    """Dumps a ``views.ScheduleView``."""

    id = shown(fields.String(attribute="schedule.schedule_id"))
    name = shown(fields.String(attribute="definition.name"))
    description = shown(fields.String(attribute="definition.description"))
    schedule_description = fields.String(metadata={"description": "when it fires, in English"})
    type = shown(fields.String(attribute="definition.type"))
    status = one_of(LISTED_STATUSES, attribute="schedule.status")
    revision = shown(fields.Integer(attribute="schedule.revision"))
    schedule = shown(fields.Dict(attribute="schedule_as_sent"), "as the client sent it")
    timing = shown(
        fields.Nested(TimingViewSchema, attribute="timing_view"),
        "the canonical form, its times as instants: a local wall time of "
        "schedule is the instant it names in timezone",
    )
    timezone = shown(fields.String())
    next_schedule_time = nullable(
        Instant(attribute="next_time"),
        "the next time the schedule will fire (ISO-8601 UTC), as of this "
        "answer; null when it will not fire again (paused, or no occurrence left)",
    )
    next_schedule_time_local = nullable(
        LocalTime(source="next_time", zone="timezone"),
        "next_schedule_time in the schedule's timezone, with its offset",
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
    payload = shown(
        fields.Raw(
            metadata={
                **PAYLOAD_DOCUMENT,
                "description": f"{PAYLOAD_DOCUMENT['description']}; secret values are masked",
            }
        )
    )
    metadata = shown(fields.Dict(attribute="definition.metadata"))
    tags = shown(fields.List(fields.String(), attribute="definition.tags"))
    priority = shown(fields.Integer(attribute="definition.priority"))
    retry = shown(fields.Dict(attribute="retry_document"))
    misfire = shown(fields.Dict(attribute="misfire_document"))
    jitter_seconds = shown(
        fields.Float(attribute="definition.jitter_seconds"),
        "each call comes up to this long after its time",
    )
    pause_after_failures = nullable(
        fields.Integer(attribute="definition.pause_after_failures"),
        "it pauses itself after this many failed occurrences in a row",
    )
    on_failure = nullable(
        fields.Nested(FailureHookSchema), "where failures are reported; secret values masked"
    )
    overlap = shown(
        fields.Enum(OverlapPolicy, by_value=True, attribute="definition.overlap"),
        "allow, skip or buffer_one: what an occurrence due while an earlier "
        "one is still running or waiting to retry does",
    )
    alert = nullable(
        fields.Nested(AlertViewSchema, attribute="definition.alert"),
        "lateness and absence told at on_failure; null: not told",
    )
    managed_by = nullable(
        fields.String(attribute="definition.managed_by"),
        "what keeps it (`scheduler apply`'s label); null: by hand",
    )
    calendar = nullable(
        fields.Nested(CalendarViewSchema, attribute="calendar_document"),
        "business days only: not weekends nor the dates of the calendars named; null: every day",
    )
    runs = shown(fields.Integer(attribute="schedule.run_count"))
    failures = shown(fields.Integer(attribute="schedule.failure_count"))
    consecutive_failures = shown(
        fields.Integer(attribute="schedule.consecutive_failures"),
        "failed occurrences since the last success",
    )
    paused_by, paused_at, paused_reason = pause_fields()
    paused_until = nullable(
        Instant(attribute="pause.paused_until"),
        "while paused: when it resumes by itself; null: when resumed",
    )
    pause_note = nullable(
        fields.String(attribute="pause.pause_note"), "while paused: the note its pause was given"
    )
    pause_set_by = nullable(
        fields.String(attribute="pause.pause_set_by"),
        "while paused: who paused it (the API key's name and id, console, system)",
    )
    skips = shown(
        fields.List(Instant(), attribute="pending_skips"),
        "the occurrences still to come that it skips (POST …/skip), earliest first",
    )
    superseded = shown(
        fields.Integer(attribute="schedule.superseded_count"),
        "occurrences the poller had sent ahead of their time that a later "
        "change, pause or delete superseded (skipped, never called); listed by "
        "GET …/executions?status=skipped",
    )
    occurrences_sent = shown(
        fields.Integer(attribute="schedule.occurrence_count"),
        "occurrences of this version of the schedule (since its last create, "
        "replace or PATCH) the poller has sent to the executors, those it sent ahead of "
        "their time included (up to the look-ahead, 5 minutes): not runs (runs counts "
        "those); what max_occurrences counts",
    )
    last_run_at = nullable(Instant(attribute="schedule.last_run_at"))
    last_status = nullable(fields.String(attribute="schedule.last_status"))
    created_at = shown(Instant(attribute="schedule.created_at"))
    updated_at = shown(Instant(attribute="schedule.updated_at"))
    trace_id = nullable(
        fields.String(),
        "the W3C trace its webhook calls continue (each call's traceparent): "
        "the one of the request that created or last replaced it (docs/tracing.md); null "
        "for a schedule stored before traces were kept",
    )


class SchedulePageSchema(Open):
    """Dumps a ``views.PageView`` of ``ScheduleView``."""

    items = shown(fields.List(fields.Nested(ScheduleViewSchema)))
    next_cursor = nullable(fields.String(), "pass as ?cursor= for the next page; null on the last")


class LeftOutSchema(Open):
    """Dumps a ``scheduler_service.service.LeftOut``."""

    occurrence_id = shown(fields.String())
    reason = shown(fields.String())


class BackfillAnswerSchema(Open):
    """Dumps a ``scheduler_service.service.Backfill``."""

    id = shown(fields.String(attribute="schedule_id"))
    policy = shown(fields.String())
    queued = shown(fields.List(fields.String()), "the occurrence ids sent to run, oldest first")
    left_out = shown(
        fields.List(fields.Nested(LeftOutSchema)), "occurrences of the range not run, and why"
    )


class HealthSchema(Open):
    status = shown(fields.String())
    checks = fields.Dict(keys=fields.String(), values=fields.String())
