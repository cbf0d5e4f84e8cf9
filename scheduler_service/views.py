"""How the API shows the domain to clients: schedules with their secrets masked, executions with
their errors masked, instants as UTC/local pairs.

Each answer is dumped by the response schema the OpenAPI document shows for it
(``scheduler_service.responses``), from the domain object or from the view here that adds what
a client sees beside it (the masked payload, the next fire time). A schedule's answers keep the
documented order of their fields (``json_answer``); the others are dumped by flask-smorest
(``@blp.response``), which sorts their keys.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from flask import Response, current_app
from marshmallow import Schema

from scheduler_service.responses import (
    DeadLetterSchema,
    ExecutionSchema,
    ScheduleViewSchema,
    TimePairSchema,
)
from scheduler_service.service import Preview
from shared.describe import describe
from shared.model import JSON, Execution, Schedule, ScheduleDefinition, ScheduleStatus, Timing
from shared.redaction import redact
from shared.secrets import masked_payload

T = TypeVar("T")

SCHEDULE_VIEW = ScheduleViewSchema()
EXECUTION_VIEW = ExecutionSchema()
DEAD_LETTER_VIEW = DeadLetterSchema()
TIME_PAIR = TimePairSchema()


def json_answer(
    schema: Schema, value: Any, status: int, headers: Mapping[str, str] | None = None
) -> Response:
    """``value`` dumped by ``schema``, its fields in the schema's order."""
    response = current_app.response_class(
        json.dumps(schema.dump(value), separators=(",", ":")),
        status=status,
        mimetype="application/json",
    )
    for name, header in (headers or {}).items():
        response.headers[name] = header
    return response


@dataclass(frozen=True)
class TimePair:
    """An instant, to show in UTC and in ``timezone`` (``TimePairSchema``)."""

    moment: datetime | None
    timezone: str


def time_pair(moment: datetime | None, timezone: str) -> dict[str, str | None]:
    pair: dict[str, str | None] = TIME_PAIR.dump(TimePair(moment, timezone))
    return pair


@dataclass(frozen=True)
class ScheduleView:
    """A schedule as clients see it (``ScheduleViewSchema``): firing next at ``next_time``, its
    ``payload`` masked."""

    schedule: Schedule
    payload: dict[str, JSON]
    next_time: datetime | None

    @property
    def definition(self) -> ScheduleDefinition:
        return self.schedule.live_definition

    @property
    def timing(self) -> Timing:
        return self.definition.timing

    @property
    def timezone(self) -> str:
        return self.timing.timezone

    @property
    def schedule_description(self) -> str:
        """When it fires, in English (the definition's ``description`` is the user's text)."""
        return describe(self.timing)

    @property
    def schedule_as_sent(self) -> JSON:
        return self.definition.request.get("schedule", self.timing.to_document())

    @property
    def timing_document(self) -> dict[str, JSON]:
        return self.timing.to_document()

    @property
    def retry_document(self) -> dict[str, JSON]:
        return self.definition.retry.to_document()

    @property
    def misfire_document(self) -> dict[str, JSON]:
        return self.definition.misfire.to_document()


def schedule_view_of(
    schedule: Schedule, secret_patterns: Iterable[str], next_time: datetime | None
) -> ScheduleView:
    """The schedule as clients see it, firing next at ``next_time``: secrets in the payload's
    URL, headers and query parameters masked by name and by shape
    (``shared.secrets.masked_payload``)."""
    payload = masked_payload(schedule.live_definition.payload, secret_patterns)
    return ScheduleView(schedule, payload, next_time)


def schedule_view(
    schedule: Schedule, secret_patterns: Iterable[str], next_time: datetime | None
) -> dict[str, Any]:
    """``schedule_view_of``, as the answer shows it."""
    view: dict[str, Any] = SCHEDULE_VIEW.dump(
        schedule_view_of(schedule, secret_patterns, next_time)
    )
    return view


def masked_execution(execution: Execution, secret_patterns: Iterable[str]) -> Execution:
    """An execution as clients see it: an HTTP client's error may quote the URL it called."""
    if execution.error is None:
        return execution
    return dataclasses.replace(execution, error=redact(execution.error, secret_patterns))


def execution_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    view: dict[str, Any] = EXECUTION_VIEW.dump(masked_execution(execution, secret_patterns))
    return view


def dead_letter_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    view: dict[str, Any] = DEAD_LETTER_VIEW.dump(masked_execution(execution, secret_patterns))
    return view


@dataclass(frozen=True)
class PageView(Generic[T]):
    """A page of a listing: its items and the cursor of the next page (as clients pass it)."""

    items: Sequence[T]
    next_cursor: str | None
    # A schedule's history names the schedule's status.
    schedule_status: ScheduleStatus | None = None


@dataclass(frozen=True)
class Replayed:
    """A dead letter replayed: its reopened record, making one more attempt."""

    execution: Execution

    @property
    def attempt(self) -> int:
        return self.execution.attempts + 1


@dataclass(frozen=True)
class PreviewView:
    """A preview's times as UTC/local pairs, and its description."""

    preview: Preview

    @property
    def occurrences(self) -> list[TimePair]:
        return [TimePair(moment, self.preview.timezone) for moment in self.preview.times]

    @property
    def description(self) -> str:
        return self.preview.description
