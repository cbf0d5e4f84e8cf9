"""A create or replace body, a preview's and a backfill's, loaded into the domain: nothing past
them sees the JSON. The parts are read by ``timing`` (the ``schedule`` object), ``targets``
(``payload``, by its kind), ``call`` (``on_failure``, ``retry``, ``misfire``) and ``fields``;
the domain checks of the parts read run even when another field is bad, so that one answer
names every bad field (``DomainChecked``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from flask import current_app, g, has_app_context
from marshmallow import (
    EXCLUDE,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from scheduler_service.requests.calendars import CalendarRuleSchema
from scheduler_service.requests.call import (
    AlertSchema,
    FailureHookField,
    MisfireSchema,
    RetrySchema,
)
from scheduler_service.requests.fields import (
    DateTimeText,
    InstantText,
    JsonNumber,
    OneOfAnyCase,
    Strict,
    WholeNumber,
    domain,
)
from scheduler_service.requests.targets import PayloadField
from scheduler_service.requests.timing import ScheduleSpecSchema
from shared.definition_rules import (
    MANAGED_BY,
    MANAGED_BY_RULE,
    MAX_JITTER_SECONDS,
    MAX_PAUSE_AFTER_FAILURES,
    check_metadata,
)
from shared.errors import InvalidInput
from shared.formats import SCHEDULE_ID, SCHEDULE_ID_RULE
from shared.model import Misfire, MisfirePolicy, OverlapPolicy, RetryPolicy, ScheduleDefinition


def named_as_sent(
    fields: Mapping[str, list[str]], names: Mapping[str, str]
) -> dict[str, list[str]]:
    """The domain's errors, which name a schedule's fields canonically (``schedule.start``), with
    the names the body gave them (``schedule.start_date``: ``names``, from ``to_timing``)."""
    renamed: dict[str, list[str]] = {}
    for name, messages in fields.items():
        part, _, field = name.partition(".")
        if part == "schedule" and field in names:
            name = f"schedule.{names[field]}"
        renamed[name] = messages
    return renamed


@contextmanager
def as_sent(names: Mapping[str, str]) -> Iterator[None]:
    """``InvalidInput`` raised inside, its fields named as the body named them
    (``named_as_sent``)."""
    try:
        yield
    except InvalidInput as exc:
        raise InvalidInput(named_as_sent(exc.fields, names)) from None


class DomainChecked(Strict):
    """A body whose domain checks (``ScheduleService.domain_errors``: does the timing fire, and
    not too often; is the target allowed …) run on the parts that were read even when another
    field is bad, so that one answer names every bad field. A body without field errors gets
    the same checks from the service."""

    def handle_error(self, error: ValidationError, data: Any, *, many: bool, **kwargs: Any) -> None:
        scheduler = current_app.extensions.get("scheduler") if has_app_context() else None
        if scheduler is None or not isinstance(error.messages, dict):
            return
        if isinstance(error.valid_data, dict):
            parts = dict(error.valid_data)
            names: Mapping[str, str] = {}
            if isinstance(parts.get("schedule"), tuple):
                parts["schedule"], names = parts["schedule"]
            sent = data.get("schedule") if isinstance(data, dict) else None
            parts["fire_if_past"] = isinstance(sent, dict) and sent.get("fire_if_past") is True
            found = scheduler.checks.domain_errors(
                parts, scheduler.clock.now(), parts.get("id"), getattr(g, "tenant", None)
            )
            for name, messages in named_as_sent(found, names).items():
                error.messages.setdefault(name, messages)


@dataclass(frozen=True)
class ScheduleRequest:
    """A create or replace body, loaded: the schedule's definition, the id the body names (if
    any), and how the body names its schedule's fields (``schedule.start_date`` …), for the
    errors of the domain checks."""

    schedule_id: str | None
    definition: ScheduleDefinition
    names: Mapping[str, str]
    # A one-time schedule whose time has passed fires at once rather than being refused.
    fire_if_past: bool = False


class ScheduleBodySchema(DomainChecked):
    """The body of ``POST /schedule`` and ``PUT /schedule/{id}``, loaded as a
    ``ScheduleRequest``."""

    id = fields.String(validate=validate.Regexp(SCHEDULE_ID, error=SCHEDULE_ID_RULE))
    name = fields.String(load_default="", validate=validate.Length(max=200))
    description = fields.String(load_default="", validate=validate.Length(max=2000))
    type = fields.String(load_default="API", validate=OneOfAnyCase(["API"]))
    schedule = fields.Nested(ScheduleSpecSchema, required=True)
    payload = PayloadField(required=True)
    metadata = fields.Dict(
        keys=fields.String(),
        values=fields.Raw(),
        load_default=dict,
        validate=domain(check_metadata),
    )
    tags = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        load_default=list,
        validate=validate.Length(max=50),
    )
    priority = WholeNumber(
        load_default=5,
        validate=validate.Range(0, 9),
        metadata={
            "description": "0 to 9 (default 5): when more is due than can be called at once, "
            "after an outage or in a burst, the higher goes first, each level worth a minute of "
            "lateness; on time it changes nothing (docs/architecture.md, Priority under a backlog)"
        },
    )
    retry = fields.Nested(RetrySchema, load_default=lambda: RetryPolicy())
    misfire = fields.Nested(MisfireSchema, load_default=lambda: Misfire())
    jitter_seconds = JsonNumber(
        load_default=0.0,
        validate=validate.Range(0, MAX_JITTER_SECONDS),
        metadata={
            "description": "spread each call over this many seconds after its time (0 to "
            f"{MAX_JITTER_SECONDS}): the same delay for an occurrence on every attempt, drawn "
            "from its id, which keeps the nominal time"
        },
    )
    on_failure = FailureHookField(
        load_default=None,
        allow_none=True,
        metadata={
            "description": "a URL, or {url, headers}: a signed JSON POST to it when an "
            "occurrence is dead-lettered or the schedule pauses itself (best effort, not "
            "retried); its URL and headers are kept secret like the payload's",
            "oneOf": [
                {"type": "string", "format": "uri"},
                {
                    "type": "object",
                    "required": ["url"],
                    "properties": {
                        "url": {"type": "string", "format": "uri"},
                        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
            ],
            "nullable": True,
        },
    )
    calendar = fields.Nested(
        CalendarRuleSchema,
        load_default=None,
        allow_none=True,
        metadata={
            "description": "fire on business days only: not Saturday or Sunday, nor a date of "
            "the tenant's calendars named in exclude, in the schedule's timezone; an occurrence "
            "on another day is skipped, or shifted to the next or previous business day at the "
            "same local time (docs/time-semantics.md, Business calendars)"
        },
    )
    pause_after_failures = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=validate.Range(1, MAX_PAUSE_AFTER_FAILURES),
        metadata={
            "description": "pause the schedule after this many failed occurrences in a row "
            f"(1 to {MAX_PAUSE_AFTER_FAILURES}; an occurrence fails once its retries are spent "
            "and it is dead-lettered; a success resets the count); null or absent: never. "
            "Resume restarts it."
        },
    )
    alert = fields.Nested(
        AlertSchema,
        load_default=None,
        allow_none=True,
        metadata={
            "description": "{late_after_seconds}: tell on_failure (signed, as its other "
            "events) of each occurrence that has not started late_after_seconds after its "
            "time (occurrence.late) and of each the misfire policy drops (occurrence.missed); "
            "needs on_failure"
        },
    )

    @validates_schema
    def alert_has_a_hook(self, body: dict[str, Any], **_: Any) -> None:
        if body.get("alert") is not None and body.get("on_failure") is None:
            raise ValidationError(
                "an alert is sent to on_failure: give on_failure a URL too", "alert"
            )

    overlap = fields.Enum(
        OverlapPolicy,
        by_value=True,
        load_default=OverlapPolicy.ALLOW,
        metadata={
            "description": "an occurrence due while an earlier one of this schedule is still "
            "running or waiting to retry: allow (it runs too), skip (it is skipped, recorded as "
            "such), buffer_one (one waits and runs when the earlier one ends; others due "
            "meanwhile are skipped). Holds across executors; an executor that dies frees it "
            "when its lease ends."
        },
    )
    managed_by = fields.String(
        load_default=None,
        allow_none=True,
        validate=validate.Regexp(MANAGED_BY, error=MANAGED_BY_RULE),
        metadata={
            "description": "what keeps this schedule, e.g. the repository whose files "
            "`scheduler apply` applies; `scheduler apply --prune` deletes only schedules of its "
            "own label. null or absent: kept by hand"
        },
    )

    @post_load(pass_original=True)
    def to_request(
        self, body: dict[str, Any], original: dict[str, Any], **_: Any
    ) -> ScheduleRequest:
        timing, names = body["schedule"]
        definition = ScheduleDefinition(
            timing=timing,
            payload=body["payload"],
            name=body["name"],
            description=body["description"],
            type=body["type"].upper(),
            priority=body["priority"],
            retry=body["retry"],
            misfire=body["misfire"],
            tags=tuple(body["tags"]),
            metadata=body["metadata"],
            # The schedule as sent, to show it back as written.
            request={"schedule": original["schedule"]},
            jitter_seconds=body["jitter_seconds"],
            pause_after_failures=body["pause_after_failures"],
            on_failure=body["on_failure"],
            overlap=body["overlap"],
            alert=body["alert"],
            managed_by=body["managed_by"],
            calendar=body["calendar"],
        )
        fire_if_past = original["schedule"].get("fire_if_past") is True
        return ScheduleRequest(body.get("id"), definition, names, fire_if_past)


class PreviewSchema(DomainChecked):
    class Meta:
        unknown = EXCLUDE

    schedule = fields.Nested(ScheduleSpecSchema, required=True)
    count = WholeNumber(load_default=5, validate=validate.Range(1, 100))
    after = DateTimeText()
    before = DateTimeText()
    # The schedule's id, for the times of a cron line with H (which spreads by it).
    id = fields.String(validate=validate.Regexp(SCHEDULE_ID))
    calendar = fields.Nested(
        CalendarRuleSchema,
        load_default=None,
        allow_none=True,
        metadata={"description": "the schedule's calendar: its times on business days only"},
    )


class BackfillSchema(Strict):
    """The body of ``POST /schedule/{id}/backfill``: a range of past time, half open."""

    start = InstantText(
        data_key="from",
        required=True,
        metadata={"description": "first instant of the range (included), with its offset"},
    )
    end = InstantText(
        data_key="to",
        required=True,
        metadata={"description": "end of the range (excluded), not in the future"},
    )
    policy = fields.String(
        load_default=MisfirePolicy.FIRE_ALL.value,
        validate=validate.OneOf([MisfirePolicy.FIRE_ALL.value, MisfirePolicy.FIRE_ONCE.value]),
        metadata={"description": "fire_all runs each occurrence; fire_once only the latest"},
    )

    @post_load
    def to_policy(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**data, "policy": MisfirePolicy(data["policy"])}


class PauseSchema(Strict):
    """The body of ``POST /schedule/{id}/pause``, optional: when the pause ends by itself, and
    why."""

    until = InstantText(
        load_default=None,
        metadata={
            "description": "when it resumes by itself (the misfire policy applies to what the "
            "pause missed); to come, and not after the schedule's last occurrence. Absent: "
            "paused until resumed"
        },
    )
    note = fields.String(
        load_default=None,
        validate=validate.Length(max=500),
        metadata={"description": "why, in words (at most 500 characters), shown with the pause"},
    )


class SkipSchema(Strict):
    """The body of ``POST /schedule/{id}/skip``: how many of the next occurrences, or which one."""

    count = fields.Integer(
        strict=True,
        validate=validate.Range(min=1, max=1000),
        metadata={"description": "skip the next count occurrences (1 to 1000)"},
    )
    at = InstantText(
        metadata={"description": "skip the occurrence at this time (one the schedule has, to come)"}
    )

    @validates_schema
    def one_of_them(self, data: dict[str, Any], **_: Any) -> None:
        if ("count" in data) == ("at" in data):
            raise ValidationError("give count or at, not both", "count")


class UnskipQuerySchema(Strict):
    """The query of ``DELETE /schedule/{id}/skip``: one skip to undo, or all."""

    at = InstantText(
        load_default=None,
        metadata={"description": "undo the skip of this occurrence only; absent: every skip"},
    )
