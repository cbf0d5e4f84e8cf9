"""How the API shows the domain to clients: schedules with their secrets masked, executions with
their errors masked, instants as UTC/local pairs.

Each answer is dumped by the response schema the OpenAPI document shows for it
(``scheduler_service.presenting.schemas``), from the domain object or from the view here that
adds what a client sees beside it (the masked payload, the next fire time). A schedule's
answers keep the documented order of their fields (``json_answer``); the others are dumped by
flask-smorest (``@blp.response``), which sorts their keys.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from flask import Response, current_app
from marshmallow import Schema

from scheduler_service.presenting.run_schemas import (
    DeadLetterSchema,
    ExecutionSchema,
    OccurrenceSchema,
)
from scheduler_service.presenting.schemas import ScheduleViewSchema, TimePairSchema
from scheduler_service.service.checks import Preview
from shared.describe import describe
from shared.model import (
    JSON,
    Execution,
    PausedBy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
)
from shared.notations import TIMING_NOTATIONS, notation_of
from shared.recurrence import instant_in
from shared.redaction import redact
from shared.secrets import masked_hook, masked_payload
from shared.timeutil import iso_z, load_zone

T = TypeVar("T")

SCHEDULE_VIEW = ScheduleViewSchema()
EXECUTION_VIEW = ExecutionSchema()
OCCURRENCE_VIEW = OccurrenceSchema()
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
class PauseView:
    """Who paused a schedule, when and why; all ``None`` unless it is paused (or for a schedule
    no longer stored)."""

    schedule: Schedule | None

    @property
    def paused(self) -> Schedule | None:
        schedule = self.schedule
        if schedule is None or schedule.status is not ScheduleStatus.PAUSED:
            return None
        return schedule

    def _while_paused(self, member: Callable[[Schedule], T]) -> T | None:
        """``member`` of the schedule while it is paused, else ``None``."""
        paused = self.paused
        return None if paused is None else member(paused)

    @property
    def paused_by(self) -> str | None:
        paused = self.paused
        return None if paused is None or paused.paused_by is None else paused.paused_by.value

    @property
    def paused_at(self) -> datetime | None:
        return self._while_paused(lambda paused: paused.paused_at)

    @property
    def paused_reason(self) -> str | None:
        paused = self.paused
        if paused is None or paused.paused_by is None:
            return None
        if paused.paused_by is PausedBy.FAILURES:
            return (
                f"paused itself after {paused.consecutive_failures} failed occurrences in a row "
                "(pause_after_failures); resume to restart it"
            )
        if paused.paused_until is not None:
            return f"paused by its owner until {iso_z(paused.paused_until)}"
        return "paused by its owner"

    @property
    def paused_until(self) -> datetime | None:
        return self._while_paused(lambda paused: paused.paused_until)

    @property
    def pause_note(self) -> str | None:
        return self._while_paused(lambda paused: paused.pause_note)

    @property
    def pause_set_by(self) -> str | None:
        return self._while_paused(lambda paused: paused.pause_set_by)


@dataclass(frozen=True)
class TimingView:
    """A timing as clients see it (``TimingViewSchema``): its times as instants (a local wall
    time is the instant it names in the zone, as the schedule computes it), and by notation
    (``values``: each notation of ``shared.notations`` by name, ``None`` but the timing's own)."""

    timezone: str
    values: dict[str, Any]
    start: datetime | None
    end: datetime | None
    max_occurrences: int | None

    @classmethod
    def of(cls, timing: Timing) -> TimingView:
        zone = load_zone(timing.timezone)

        def instant(moment: datetime | None) -> datetime | None:
            return None if moment is None else instant_in(moment, zone)

        values: dict[str, Any] = dict.fromkeys(TIMING_NOTATIONS)
        values[timing.kind] = notation_of(timing).view(timing.value, zone)
        return cls(
            timezone=timing.timezone,
            values=values,
            start=instant(timing.start),
            end=instant(timing.end),
            max_occurrences=timing.max_occurrences,
        )


@dataclass(frozen=True)
class ScheduleView:
    """A schedule as clients see it (``ScheduleViewSchema``): firing next at ``next_time``, its
    ``payload`` and ``on_failure`` hook masked."""

    schedule: Schedule
    payload: dict[str, JSON]
    next_time: datetime | None
    on_failure: dict[str, JSON] | None = None

    @property
    def pause(self) -> PauseView:
        return PauseView(self.schedule)

    @property
    def pending_skips(self) -> list[datetime]:
        """The skips still to come (those passed are done: the history shows them)."""
        now = datetime.now(UTC)
        return [moment for moment in self.schedule.skips if moment > now]

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
    def timing_view(self) -> TimingView:
        return TimingView.of(self.timing)

    @property
    def trace_id(self) -> str | None:
        trace = self.definition.trace
        return None if trace is None else trace.trace_id

    @property
    def retry_document(self) -> dict[str, JSON]:
        return self.definition.retry.to_document()

    @property
    def misfire_document(self) -> dict[str, JSON]:
        return self.definition.misfire.to_document()

    @property
    def calendar_document(self) -> dict[str, JSON] | None:
        calendar = self.definition.calendar
        return None if calendar is None else calendar.to_document()


def schedule_view_of(
    schedule: Schedule, secret_patterns: Iterable[str], next_time: datetime | None
) -> ScheduleView:
    """The schedule as clients see it, firing next at ``next_time``: secrets in the payload's
    URL, headers and query parameters masked by name and by shape
    (``shared.secrets.masked_payload``), and in its ``on_failure`` hook."""
    patterns = tuple(secret_patterns)
    definition = schedule.live_definition
    payload = masked_payload(definition.payload, patterns)
    return ScheduleView(schedule, payload, next_time, masked_hook(definition.on_failure, patterns))


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


def masked_occurrence(execution: Execution, secret_patterns: Iterable[str]) -> Execution:
    """One occurrence with every attempt it keeps, as clients see it: errors and the answers'
    excerpts masked."""
    patterns = tuple(secret_patterns)
    attempts = tuple(
        dataclasses.replace(
            attempt,
            error=None if attempt.error is None else redact(attempt.error, patterns),
            answer=attempt.answer.masked(patterns),
        )
        for attempt in execution.attempt_log
    )
    return dataclasses.replace(masked_execution(execution, patterns), attempt_log=attempts)


def occurrence_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    view: dict[str, Any] = OCCURRENCE_VIEW.dump(masked_occurrence(execution, secret_patterns))
    return view


def dead_letter_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    view: dict[str, Any] = DEAD_LETTER_VIEW.dump(masked_execution(execution, secret_patterns))
    return view


@dataclass(frozen=True)
class PageView(Generic[T]):
    """A page of a listing: its items and the cursor of the next page (as clients pass it)."""

    items: Sequence[T]
    next_cursor: str | None
    # A schedule's history names the schedule's status, and who paused it.
    schedule_status: ScheduleStatus | None = None
    pause: PauseView | None = None


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
