"""The lasting record of each occurrence (``Execution``) and of each of its attempts
(``Attempt``), what an attempt ended with (``AttemptOutcome``), and what its target answered
(``Answer``): how the executor records a run, and what the API shows of it. Re-exported by
``shared.model``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from shared.formats import parse_occurrence_id
from shared.redaction import DEFAULT_SECRET_NAMES, redact, redact_body
from shared.timeutil import utc_ms


def nominal_time(occurrence_id: str) -> datetime | None:
    """The time a scheduled occurrence's id names (``shared.formats.occurrence_id``): its
    schedule's time before jitter; None for a manual trigger's id or text of another form."""
    named = parse_occurrence_id(occurrence_id)
    return None if named is None or named.manual else named.scheduled_time


def tenths(milliseconds: float | None) -> float | None:
    """A figure in milliseconds as it is shown and kept: to a tenth of a millisecond."""
    return None if milliseconds is None else round(milliseconds, 1)


class ExecutionStatus(StrEnum):
    RUNNING = "running"
    RETRYING = "retrying"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"

    @property
    def is_final(self) -> bool:
        return self in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED)


@dataclass(frozen=True)
class Execution:
    """The lasting record of one occurrence: one document, updated by each attempt."""

    tenant: str
    occurrence_id: str
    schedule_id: str
    scheduled_time: datetime
    status: ExecutionStatus
    attempts: int
    revision: int
    # When the latest attempt's request was sent (while an attempt runs: when it was begun).
    started_at: datetime | None = None
    finished_at: datetime | None = None
    http_status: int | None = None
    duration_ms: float | None = None
    # How late the first attempt's request was sent after ``scheduled_time`` (the time it
    # fires, jitter included: ``jitter_ms``); later attempts keep it (``retry_delay_ms``).
    lateness_ms: float | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None
    manual: bool = False
    # The attempts that ended, oldest first (the last ``KEPT_ATTEMPTS``).
    attempt_log: tuple[Attempt, ...] = ()
    # Skipped before any call because a change, pause or delete of its schedule came after the
    # poller had sent it ahead of its time: not a run, so histories list it only when asked
    # for skipped records. A later attempt of the same occurrence clears it.
    superseded: bool = False

    @property
    def retry_delay_ms(self) -> float | None:
        """How much later than the first attempt the latest was sent (backoffs, ``Retry-After``,
        a replay); None before a second attempt."""
        if self.attempts < 2 or self.lateness_ms is None or self.started_at is None:
            return None
        since_scheduled = (self.started_at - self.scheduled_time).total_seconds() * 1000.0
        return tenths(since_scheduled - self.lateness_ms)

    @property
    def jitter_ms(self) -> float | None:
        """How much later than its schedule's time the occurrence fires by the schedule's
        jitter (``scheduled_time`` includes it; its id names the time before)."""
        nominal = nominal_time(self.occurrence_id)
        if nominal is None:
            return None
        return (self.scheduled_time - nominal).total_seconds() * 1000.0


# How many attempts an execution record keeps, the latest ones.
KEPT_ATTEMPTS = 50


@dataclass(frozen=True)
class Answer:
    """What a target answered one attempt, as the attempt keeps it (none: no answer): an HTTP
    status and status line (e.g. "HTTP/1.1 503 Service Unavailable"), the first bytes of the
    body as text (SCHEDULER_RESPONSE_EXCERPT_BYTES), and whether the body was longer."""

    status: int | None = None
    status_line: str | None = None
    excerpt: str | None = None
    truncated: bool = False

    def entry(self) -> dict[str, Any]:
        """Its keys in an attempt's entry of a record's stored log (the same in every store)."""
        return {
            "http_status": self.status,
            "status_line": self.status_line,
            "excerpt": self.excerpt,
            "truncated": self.truncated,
        }

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any]) -> Answer:
        """The answer an entry of a record's stored log keeps (``entry``'s keys)."""
        return cls(
            entry.get("http_status"),
            entry.get("status_line"),
            entry.get("excerpt"),
            bool(entry.get("truncated", False)),
        )

    def masked(self, patterns: Iterable[str] = DEFAULT_SECRET_NAMES) -> Answer:
        """The answer with the secret-looking values of its excerpt masked (it may echo a
        credential)."""
        if not self.excerpt:
            return self
        return replace(self, excerpt=redact_body(self.excerpt, patterns))


# What an attempt that got no answer keeps.
NO_ANSWER = Answer()


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt of an occurrence as its record keeps it: how it ended (``SUCCEEDED``,
    ``RETRYING`` or ``FAILED``), and what the webhook answered, if it answered."""

    number: int
    status: ExecutionStatus
    started_at: datetime | None
    finished_at: datetime
    duration_ms: float | None = None
    answer: Answer = NO_ANSWER
    error: str | None = None

    def __post_init__(self) -> None:
        if self.started_at is not None:
            object.__setattr__(self, "started_at", utc_ms(self.started_at))
        object.__setattr__(self, "finished_at", utc_ms(self.finished_at))

    def entry(self) -> dict[str, Any]:
        """Its entry in a record's stored log: the same keys in every store; its two instants
        as they are, for the store's adapter to keep as the store keeps instants."""
        return {
            "number": self.number,
            "status": self.status.value,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_ms": self.duration_ms,
            "error": self.error,
            **self.answer.entry(),
        }

    @classmethod
    def from_entry(
        cls, entry: Mapping[str, Any], started_at: datetime | None, finished_at: datetime
    ) -> Attempt:
        """One entry of a record's stored log (``entry``); its two instants, kept as each
        store keeps instants, read by the store's adapter."""
        return cls(
            number=entry["number"],
            status=ExecutionStatus(entry["status"]),
            started_at=started_at,
            finished_at=finished_at,
            duration_ms=entry.get("duration_ms"),
            answer=Answer.from_entry(entry),
            error=entry.get("error"),
        )

    @classmethod
    def last_of(cls, execution: Execution) -> tuple[Attempt, ...]:
        """A record written before attempts were kept: its last attempt, from the record's
        own fields (none if no attempt has ended)."""
        if execution.attempts < 1 or execution.finished_at is None:
            return ()
        if execution.status not in (
            ExecutionStatus.SUCCEEDED,
            ExecutionStatus.RETRYING,
            ExecutionStatus.FAILED,
        ):
            return ()
        return (
            cls(
                number=execution.attempts,
                status=execution.status,
                started_at=execution.started_at,
                finished_at=execution.finished_at,
                duration_ms=execution.duration_ms,
                answer=Answer(execution.http_status),
                error=execution.error,
            ),
        )


@dataclass(frozen=True)
class AttemptOutcome:
    """What one HTTP attempt ended with, as the executor records it. An HTTP client's error may
    quote the URL it called, query and all: ``error`` is kept redacted, and so is the excerpt
    of the answer's body (it may echo a credential)."""

    status: ExecutionStatus
    finished_at: datetime
    answer: Answer = NO_ANSWER
    duration_ms: float | None = None
    error: str | None = None
    next_attempt_at: datetime | None = None
    # When the attempt's request was sent (None: unknown, the record's begin time stands in).
    started_at: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "duration_ms", tenths(self.duration_ms))
        if self.started_at is not None:
            object.__setattr__(self, "started_at", utc_ms(self.started_at))
        if self.error is not None:
            object.__setattr__(self, "error", redact(self.error))
        object.__setattr__(self, "answer", self.answer.masked())
