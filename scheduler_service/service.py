"""The API's application layer: what each endpoint does, without HTTP.

Creates and replaces go through queue 1 (the processor computes and stores them); pause, resume
and delete are applied to the store at once, guarded by a state revision, because the contract
promises that no occurrence fires after a delete (or pause) is accepted.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared.errors import InvalidInput, NotFound
from shared.messages import DefinitionMutation, encode_mutation
from shared.model import Execution, Schedule, ScheduleDefinition, ScheduleStatus, Timing
from shared.ports import Clock, OutgoingMessage, Queues, Store
from shared.recurrence import build_recurrence, first_occurrence
from shared.settings import Settings
from shared.timeutil import iso_local, iso_z, load_zone
from shared.validation import CANONICAL_FIELDS, check_timing

SECRET_HEADER = re.compile(r"(authorization|token|secret|password|api[-_]?key|cookie|-key$)", re.I)
MASK = "********"


class RevisionClock:
    """Revisions that order mutations: microseconds since the epoch, strictly increasing here.

    Several API processes order a schedule's mutations by their clocks; keep them in sync (NTP).
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return self._last


@dataclass(frozen=True)
class Accepted:
    schedule_id: str
    revision: int
    next_schedule_time: datetime | None
    timezone: str


class ScheduleService:
    def __init__(self, store: Store, queues: Queues, settings: Settings, clock: Clock) -> None:
        self.store = store
        self.queues = queues
        self.settings = settings
        self.clock = clock
        self.revisions = RevisionClock()

    # -- mutations ---------------------------------------------------------------------

    def check(self, timing: Timing, names: Mapping[str, str], now: datetime) -> datetime | None:
        """Domain checks of a parsed timing; returns its first occurrence."""
        check_timing(
            timing,
            now,
            timedelta(seconds=self.settings.min_interval_seconds),
            names={**CANONICAL_FIELDS, **names},
        )
        return first_occurrence(timing, now)

    def accept_definition(
        self,
        tenant: str,
        schedule_id: str | None,
        definition: ScheduleDefinition,
        names: Mapping[str, str],
    ) -> Accepted:
        now = self.clock.now()
        next_time = self.check(definition.timing, names, now)
        schedule_id = schedule_id or str(uuid.uuid4())
        revision = self.revisions.next()
        mutation = DefinitionMutation(tenant, schedule_id, revision, now, definition)
        self.queues.mutations.send([OutgoingMessage(encode_mutation(mutation))])
        return Accepted(schedule_id, revision, next_time, definition.timing.timezone)

    def get(self, tenant: str, schedule_id: str) -> Schedule:
        schedule = self.store.get_schedule(tenant, schedule_id)
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)
        return schedule

    def delete(self, tenant: str, schedule_id: str) -> None:
        """Tombstone the schedule now. An unknown id is still tombstoned (a create may be in
        flight on queue 1 and must not land), then reported as not found."""
        existing = self.store.get_schedule(tenant, schedule_id)
        self.store.apply_state(
            tenant,
            schedule_id,
            self.revisions.next(),
            ScheduleStatus.DELETED,
            None,
            self.clock.now(),
        )
        if existing is None or existing.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)

    def pause(self, tenant: str, schedule_id: str) -> Schedule:
        schedule = self.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.ACTIVE:
            self.store.apply_state(
                tenant,
                schedule_id,
                self.revisions.next(),
                ScheduleStatus.PAUSED,
                None,
                self.clock.now(),
            )
        return self.get(tenant, schedule_id)

    def resume(self, tenant: str, schedule_id: str) -> Schedule:
        """Resume from now: occurrences that fell in the pause are not caught up."""
        schedule = self.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.PAUSED:
            now = self.clock.now()
            recurrence = build_recurrence(schedule.live_definition.timing, schedule.accepted_at)
            candidate = schedule.next_schedule_time
            next_time = (
                candidate
                if candidate is not None and candidate >= now
                else recurrence.first_at_or_after(now)
            )
            self.store.apply_state(
                tenant, schedule_id, self.revisions.next(), ScheduleStatus.ACTIVE, next_time, now
            )
        return self.get(tenant, schedule_id)

    # -- views -------------------------------------------------------------------------

    def upcoming(self, timing: Timing, after: datetime, count: int) -> list[datetime]:
        recurrence = build_recurrence(timing, after)
        first = first_occurrence(timing, after)
        if first is None:
            return []
        times = [first]
        while len(times) < count:
            following = recurrence.next_after(times[-1])
            if following is None:
                break
            times.append(following)
        return times


def time_pair(moment: datetime | None, timezone: str) -> dict[str, str | None]:
    if moment is None:
        return {"utc": None, "local": None}
    return {"utc": iso_z(moment), "local": iso_local(moment, load_zone(timezone))}


def mask_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {name: MASK if SECRET_HEADER.search(name) else value for name, value in headers.items()}


def schedule_view(schedule: Schedule) -> dict[str, Any]:
    definition = schedule.live_definition
    timing = definition.timing
    payload = definition.payload.to_document()
    payload["headers"] = mask_headers(definition.payload.headers)
    next_time = time_pair(schedule.next_schedule_time, timing.timezone)
    return {
        "id": schedule.schedule_id,
        "name": definition.name,
        "description": definition.description,
        "type": definition.type,
        "status": schedule.status.value,
        "revision": schedule.revision,
        "schedule": definition.request.get("schedule", timing.to_document()),
        "timing": timing.to_document(),
        "timezone": timing.timezone,
        "next_schedule_time": next_time["utc"],
        "next_schedule_time_local": next_time["local"],
        "payload": payload,
        "metadata": dict(definition.metadata),
        "tags": list(definition.tags),
        "priority": definition.priority,
        "retry": definition.retry.to_document(),
        "misfire": definition.misfire.to_document(),
        "runs": schedule.run_count,
        "failures": schedule.failure_count,
        "consecutive_failures": schedule.consecutive_failures,
        "occurrences_dispatched": schedule.occurrence_count,
        "last_run_at": iso_z(schedule.last_run_at) if schedule.last_run_at else None,
        "last_status": schedule.last_status,
        "created_at": iso_z(schedule.created_at),
        "updated_at": iso_z(schedule.updated_at),
    }


def execution_view(execution: Execution) -> dict[str, Any]:
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
        "error": execution.error,
        "started_at": stamp(execution.started_at),
        "finished_at": stamp(execution.finished_at),
        "next_attempt_at": stamp(execution.next_attempt_at),
        "manual": execution.manual,
    }


__all__ = ["InvalidInput", "ScheduleService"]
