"""The domain model: frozen, typed values. Raw JSON is turned into these at the edges only.

A schedule's definition and state live here; the records of its runs in ``shared.executions``,
whose names this module re-exports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, NamedTuple

from shared.calendars import CalendarRule
from shared.executions import KEPT_ATTEMPTS as KEPT_ATTEMPTS
from shared.executions import NO_ANSWER as NO_ANSWER
from shared.executions import Answer as Answer
from shared.executions import Attempt as Attempt
from shared.executions import AttemptOutcome as AttemptOutcome
from shared.executions import Execution as Execution
from shared.executions import ExecutionStatus as ExecutionStatus
from shared.executions import nominal_time as nominal_time
from shared.executions import tenths as tenths
from shared.formats import occurrence_id
from shared.jsonvalues import optional_int
from shared.targets import DeliveryPayload, payload_body, payload_from_document
from shared.targets.http import Payload as Payload
from shared.timeutil import to_epoch_ms, utc_ms

# A schedule's timing has its own module; the records here hold it, and name it for callers.
from shared.timing import JSON as JSON
from shared.timing import Every as Every
from shared.timing import Timing as Timing
from shared.timing import Unit as Unit
from shared.tracing import TraceContext


@dataclass(frozen=True)
class FailureHook:
    """Where a schedule's failures are reported (``on_failure``): a signed JSON ``POST`` to
    ``url`` with ``headers``, when an occurrence is dead-lettered or the schedule pauses itself.
    Its URL and headers are secrets as a payload's are (sealed at rest, masked in answers)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)

    def to_document(self) -> dict[str, JSON]:
        return {"url": self.url, "headers": dict(self.headers)}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> FailureHook:
        return cls(url=document["url"], headers=dict(document.get("headers") or {}))


@dataclass(frozen=True)
class Alert:
    """When a schedule's owner is told of an occurrence that did not run as planned, at its
    ``on_failure`` hook: ``occurrence.late`` when one has not started ``late_after_seconds``
    after its time (``shared.lateness``), ``occurrence.missed`` when the misfire policy drops
    one."""

    late_after_seconds: int

    def to_document(self) -> dict[str, JSON]:
        return {"late_after_seconds": self.late_after_seconds}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Alert:
        return cls(late_after_seconds=int(document["late_after_seconds"]))


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits up to ``min(cap, base * 2**(n-1))``."""

    max_attempts: int = 5
    backoff_seconds: float = 1.0
    max_backoff_seconds: float = 300.0

    def to_document(self) -> dict[str, JSON]:
        return {
            "max_attempts": self.max_attempts,
            "backoff_seconds": self.backoff_seconds,
            "max_backoff_seconds": self.max_backoff_seconds,
        }

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> RetryPolicy:
        return cls(**document)


class MisfirePolicy(StrEnum):
    FIRE_ALL = "fire_all"
    FIRE_ONCE = "fire_once"
    SKIP = "skip"


@dataclass(frozen=True)
class Misfire:
    """What to do with occurrences that were missed (every worker down, a backlog).

    ``grace_seconds`` is how late an occurrence may still run; ``None`` is better late than never.
    """

    policy: MisfirePolicy = MisfirePolicy.FIRE_ONCE
    grace_seconds: float | None = None

    def to_document(self) -> dict[str, JSON]:
        return {"policy": self.policy.value, "grace_seconds": self.grace_seconds}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Misfire:
        return cls(MisfirePolicy(document["policy"]), document.get("grace_seconds"))


class OverlapPolicy(StrEnum):
    """What an occurrence does when it is due while an earlier occurrence of its schedule is
    still running or waiting to retry (``docs/architecture.md``, "Overlap")."""

    ALLOW = "allow"  # it runs too
    SKIP = "skip"  # it is skipped, recorded as such
    BUFFER_ONE = "buffer_one"  # one waits, and runs when the earlier one ends; others skip


@dataclass(frozen=True)
class ScheduleDefinition:
    """What a client asked for, validated. ``request`` keeps the body as the client sent it."""

    timing: Timing
    # The delivery target: an HTTP call (``Payload``), or a message for an AWS queue or topic.
    payload: DeliveryPayload
    name: str = ""
    description: str = ""
    type: str = "API"
    priority: int = 5
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    misfire: Misfire = field(default_factory=Misfire)
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, JSON] = field(default_factory=dict)
    request: Mapping[str, JSON] = field(default_factory=dict)
    # Each occurrence fires up to this long after its time (``shared.dispatch.fire_time``).
    jitter_seconds: float = 0.0
    # The schedule pauses itself after this many failed occurrences in a row (None: never).
    pause_after_failures: int | None = None
    on_failure: FailureHook | None = None
    overlap: OverlapPolicy = OverlapPolicy.ALLOW
    # Lateness and absence told at ``on_failure`` (None: not told).
    alert: Alert | None = None
    # What keeps the schedule (``scheduler apply``'s label); ``None``: a person, by hand.
    managed_by: str | None = None
    # Business days only: the tenant's calendars it excludes, and the shift (shared.calendars).
    calendar: CalendarRule | None = None
    # The trace its occurrences continue (``shared.tracing``): the request that created or last
    # replaced it. Not part of what was asked for: two definitions differing only in it are equal.
    trace: TraceContext | None = field(default=None, compare=False)

    def to_document(self) -> dict[str, JSON]:
        return {
            "timing": self.timing.to_document(),
            "payload": self.payload.to_document(),
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "priority": self.priority,
            "retry": self.retry.to_document(),
            "misfire": self.misfire.to_document(),
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "request": dict(self.request),
            "jitter_seconds": self.jitter_seconds,
            "pause_after_failures": self.pause_after_failures,
            "on_failure": None if self.on_failure is None else self.on_failure.to_document(),
            "overlap": self.overlap.value,
            "alert": None if self.alert is None else self.alert.to_document(),
            "managed_by": self.managed_by,
            "calendar": None if self.calendar is None else self.calendar.to_document(),
            "trace": None if self.trace is None else self.trace.to_document(),
        }

    def body(self) -> dict[str, JSON]:
        """The body a ``PUT`` would send to store it again (secrets in the clear): what a
        ``PATCH`` merges onto, and what ``scheduler apply``'s plan compares."""
        schedule = self.request.get("schedule") or self.timing.to_document()
        return {
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "schedule": dict(schedule),
            "payload": payload_body(self.payload),
            "metadata": dict(self.metadata),
            "tags": list(self.tags),
            "priority": self.priority,
            "retry": self.retry.to_document(),
            "misfire": self.misfire.to_document(),
            "jitter_seconds": self.jitter_seconds,
            "pause_after_failures": self.pause_after_failures,
            "overlap": self.overlap.value,
            "on_failure": self.on_failure and self.on_failure.to_document(),
            "alert": self.alert and self.alert.to_document(),
            "managed_by": self.managed_by,
            "calendar": self.calendar and self.calendar.to_document(),
        }

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> ScheduleDefinition:
        return cls(
            timing=Timing.from_document(document["timing"]),
            payload=payload_from_document(document["payload"]),
            name=document.get("name", ""),
            description=document.get("description", ""),
            type=document.get("type", "API"),
            priority=document.get("priority", 5),
            retry=RetryPolicy.from_document(document.get("retry") or {}),
            misfire=Misfire.from_document(document.get("misfire") or {"policy": "fire_once"}),
            tags=tuple(document.get("tags") or ()),
            metadata=dict(document.get("metadata") or {}),
            request=dict(document.get("request") or {}),
            jitter_seconds=float(document.get("jitter_seconds", 0.0)),
            pause_after_failures=optional_int(document.get("pause_after_failures")),
            on_failure=FailureHook.from_document(hook)
            if (hook := document.get("on_failure"))
            else None,
            overlap=OverlapPolicy(document.get("overlap") or OverlapPolicy.ALLOW.value),
            alert=Alert.from_document(alert) if (alert := document.get("alert")) else None,
            managed_by=document.get("managed_by"),
            calendar=CalendarRule.from_document(rule)
            if (rule := document.get("calendar"))
            else None,
            # Absent from what was stored before traces were kept.
            trace=TraceContext.from_document(trace) if (trace := document.get("trace")) else None,
        )


class ScheduleStatus(StrEnum):
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"
    DELETED = "deleted"


# The statuses a listing of schedules shows (a deleted schedule is never listed).
LISTED_STATUSES = [s.value for s in ScheduleStatus if s is not ScheduleStatus.DELETED]


class PausedBy(StrEnum):
    """Who paused a schedule: its owner (the pause endpoint), or its own failures
    (``pause_after_failures``)."""

    USER = "user"
    FAILURES = "failures"


# Who set a change the service made by itself (a pause after failures, a pause's end), and one
# made in the console.
SYSTEM = "system"
CONSOLE = "console"


class PauseIntent(NamedTuple):
    """What a pause says beside itself: when it ends by itself (``None``: when resumed), the
    owner's note, and who set it (an API key's name, ``console``, ``system``)."""

    until: datetime | None = None
    note: str | None = None
    by: str | None = None


@dataclass(frozen=True)
class Schedule:
    """A stored schedule.

    Two revisions order the mutations that queue 1 may deliver out of order: ``revision`` for
    the definition (create / replace), ``state_revision`` for pause, resume and delete. A
    mutation older than the one applied is ignored; a delete leaves a tombstone (``DELETED``).
    """

    tenant: str
    schedule_id: str
    revision: int
    state_revision: int
    status: ScheduleStatus
    definition: ScheduleDefinition | None
    next_schedule_time: datetime | None
    accepted_at: datetime
    created_at: datetime
    updated_at: datetime
    occurrence_count: int = 0
    run_count: int = 0
    # Occurrences sent ahead of their time and then superseded (``Execution.superseded``).
    superseded_count: int = 0
    failure_count: int = 0
    consecutive_failures: int = 0
    last_run_at: datetime | None = None
    last_status: str | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    # Set while paused: by whom, and when.
    paused_by: PausedBy | None = None
    paused_at: datetime | None = None
    # The nominal times of the occurrences already sent to queue 2 that were still to come when
    # the poller last advanced the schedule, all of them, earliest first: what it fires before
    # ``next_schedule_time``, shown without computing the rule (``shared.dispatch``).
    sent_ahead: tuple[datetime, ...] = ()
    # The overlap marker (``OverlapPolicy``): the occurrence in progress, begun and not yet
    # final, until when its hold lasts unless renewed; and the one that waits for it
    # (``buffer_one``), until when unless checked again.
    overlap_holder: str | None = None
    overlap_until: datetime | None = None
    overlap_waiting: str | None = None
    overlap_waiting_until: datetime | None = None
    # With an ``alert``: when the earliest occurrence sent and not yet checked is late if it
    # has not started (its time + ``late_after_seconds``); None: none is waiting to be checked
    # (``shared.lateness``).
    late_check_at: datetime | None = None
    # A pause with intent: it ends by itself at ``paused_until`` (the poller resumes it), with
    # its owner's note; and who set it (an API key's name, ``console``, ``system``).
    paused_until: datetime | None = None
    pause_note: str | None = None
    pause_set_by: str | None = None
    # The nominal times of the occurrences its owner asked to skip (``POST …/skip``), earliest
    # first: the executor skips them (superseded, not runs).
    skips: tuple[datetime, ...] = ()
    # Raised by each change of ``skips`` (0: never set).
    skips_version: int = 0
    # The definition's text as the store keeps it (``shared.definition_codec``: its secrets
    # sealed), when read from a store: the poller carries it on queue 2 as it is
    # (``shared.messages.carry``). Dropped by ``evolve`` with another definition.
    stored_definition: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in (
            "next_schedule_time",
            "accepted_at",
            "created_at",
            "updated_at",
            "paused_at",
            "late_check_at",
            "paused_until",
        ):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, utc_ms(value))
        object.__setattr__(self, "sent_ahead", tuple(utc_ms(item) for item in self.sent_ahead))
        object.__setattr__(self, "skips", tuple(utc_ms(item) for item in self.skips))

    @property
    def live_definition(self) -> ScheduleDefinition:
        if self.definition is None:
            raise ValueError(f"schedule {self.schedule_id} is a tombstone without a definition")
        return self.definition

    def evolve(self, **changes: Any) -> Schedule:
        if "definition" in changes and "stored_definition" not in changes:
            changes["stored_definition"] = None
        return replace(self, **changes)


def revision_at(moment: datetime) -> int:
    """The revision of a change made at ``moment``: microseconds since the epoch, the clock the
    API's revisions come from, so that a schedule pausing itself is ordered with its owner's
    pauses and resumes."""
    return to_epoch_ms(moment) * 1000


@dataclass(frozen=True)
class Occurrence:
    """One firing of a schedule, as carried on queue 2."""

    tenant: str
    schedule_id: str
    revision: int
    scheduled_time: datetime
    priority: int = 5
    occurrence_id: str = ""
    manual: bool = False
    # A retry waiting out a delay longer than a queue message can stay invisible: re-sent,
    # and never attempted before this instant.
    not_before: datetime | None = None
    # The trace it continues (its schedule's, or its dispatch span's); None on a message sent
    # before traces were carried: its attempts then start traces of their own.
    trace: TraceContext | None = field(default=None, compare=False)
    # What a fire needs of its schedule's revision, sealed (``shared.messages.carry``), put on
    # queue 2 by the poller that read it: the executor's version check then reads no
    # definition. None: the executor reads the definition from the store (a manual run, one
    # too large to carry, a message from before it was carried).
    carried: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scheduled_time", utc_ms(self.scheduled_time))
        if not self.occurrence_id:
            object.__setattr__(
                self, "occurrence_id", occurrence_id(self.schedule_id, self.scheduled_time)
            )
