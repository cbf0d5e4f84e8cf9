"""How the API shows the domain to clients: schedules, executions and dead letters with their
secrets masked, and instants as UTC/local pairs."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from shared.describe import describe
from shared.model import Attempt, Execution, PausedBy, Schedule, ScheduleStatus
from shared.redaction import redact, redact_body
from shared.secrets import masked_hook, masked_payload
from shared.timeutil import iso_local, iso_z, load_zone


def time_pair(moment: datetime | None, timezone: str) -> dict[str, str | None]:
    if moment is None:
        return {"utc": None, "local": None}
    return {"utc": iso_z(moment), "local": iso_local(moment, load_zone(timezone))}


def schedule_view(
    schedule: Schedule, secret_patterns: Iterable[str], next_time: datetime | None
) -> dict[str, Any]:
    """The schedule as clients see it, firing next at ``next_time``: secrets in the payload's
    URL, headers and query parameters masked by name and by shape
    (``shared.secrets.masked_payload``)."""
    definition = schedule.live_definition
    timing = definition.timing
    payload = masked_payload(definition.payload, secret_patterns)
    next_pair = time_pair(next_time, timing.timezone)
    cursor = schedule.next_schedule_time
    return {
        "id": schedule.schedule_id,
        "name": definition.name,
        "description": definition.description,
        # The user's "description" above is their own text; this one says when it fires.
        "schedule_description": describe(timing),
        "type": definition.type,
        "status": schedule.status.value,
        "revision": schedule.revision,
        "schedule": definition.request.get("schedule", timing.to_document()),
        "timing": timing.to_document(),
        "timezone": timing.timezone,
        "next_schedule_time": next_pair["utc"],
        "next_schedule_time_local": next_pair["local"],
        "dispatch_cursor": iso_z(cursor) if cursor is not None else None,
        "payload": payload,
        "metadata": dict(definition.metadata),
        "tags": list(definition.tags),
        "priority": definition.priority,
        "retry": definition.retry.to_document(),
        "misfire": definition.misfire.to_document(),
        "jitter_seconds": definition.jitter_seconds,
        "pause_after_failures": definition.pause_after_failures,
        "on_failure": masked_hook(definition.on_failure, secret_patterns),
        "runs": schedule.run_count,
        "failures": schedule.failure_count,
        "consecutive_failures": schedule.consecutive_failures,
        **pause_view(schedule),
        "occurrences_dispatched": schedule.occurrence_count,
        "last_run_at": iso_z(schedule.last_run_at) if schedule.last_run_at else None,
        "last_status": schedule.last_status,
        "created_at": iso_z(schedule.created_at),
        "updated_at": iso_z(schedule.updated_at),
    }


def pause_view(schedule: Schedule | None) -> dict[str, Any]:
    """Who paused the schedule, when and why; all null unless it is paused."""
    if schedule is None or schedule.status is not ScheduleStatus.PAUSED:
        return {"paused_by": None, "paused_at": None, "paused_reason": None}
    reason = "paused by its owner"
    if schedule.paused_by is PausedBy.FAILURES:
        reason = (
            f"paused itself after {schedule.consecutive_failures} failed occurrences in a row "
            "(pause_after_failures); resume to restart it"
        )
    return {
        "paused_by": None if schedule.paused_by is None else schedule.paused_by.value,
        "paused_at": None if schedule.paused_at is None else iso_z(schedule.paused_at),
        "paused_reason": reason if schedule.paused_by is not None else None,
    }


def execution_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """An execution as clients see it: an HTTP client's error may quote the URL it called."""

    def stamp(moment: datetime | None) -> str | None:
        return iso_z(moment) if moment else None

    return {
        "occurrence_id": execution.occurrence_id,
        "schedule_id": execution.schedule_id,
        "scheduled_time": iso_z(execution.scheduled_time),
        "status": execution.status.value,
        "attempts": execution.attempts,
        "http_status": execution.http_status,
        "duration_ms": execution.duration_ms,
        "lateness_ms": execution.lateness_ms,
        "error": None if execution.error is None else redact(execution.error, secret_patterns),
        "started_at": stamp(execution.started_at),
        "finished_at": stamp(execution.finished_at),
        "next_attempt_at": stamp(execution.next_attempt_at),
        "manual": execution.manual,
    }


def dead_letter_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    finished = execution.finished_at
    return {
        "id": execution.occurrence_id,
        "schedule_id": execution.schedule_id,
        "occurrence_id": execution.occurrence_id,
        "scheduled_time": iso_z(execution.scheduled_time),
        "failed_at": iso_z(finished) if finished else None,
        "attempts": execution.attempts,
        "http_status": execution.http_status,
        "error": None if execution.error is None else redact(execution.error, secret_patterns),
        "manual": execution.manual,
    }


def occurrence_view(execution: Execution, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """One occurrence with every attempt it keeps; errors and excerpts masked as configured."""
    patterns = tuple(secret_patterns)
    return {
        **execution_view(execution, patterns),
        "attempt_log": [attempt_view(attempt, patterns) for attempt in execution.attempt_log],
    }


def attempt_view(attempt: Attempt, secret_patterns: Iterable[str]) -> dict[str, Any]:
    excerpt = attempt.response_excerpt
    return {
        "number": attempt.number,
        "status": attempt.status.value,
        "started_at": iso_z(attempt.started_at) if attempt.started_at else None,
        "finished_at": iso_z(attempt.finished_at),
        "duration_ms": attempt.duration_ms,
        "http_status": attempt.http_status,
        "error": None if attempt.error is None else redact(attempt.error, secret_patterns),
        "response_status_line": attempt.response_status_line,
        "response_excerpt": None if excerpt is None else redact_body(excerpt, secret_patterns),
        "response_truncated": attempt.response_truncated,
    }
