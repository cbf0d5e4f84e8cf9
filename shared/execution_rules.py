"""The rules of stored execution records and idempotency records that hold whatever the
backend, each stated once (as ``shared.store_rules`` states the schedules'): guarded writes and
conditions of ``shared.guards``, with the functions that give their parameters."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.guards import Append, Field, Given, Inc, Param, Remove, Set, Write, set_given
from shared.model import (
    KEPT_ATTEMPTS,
    Attempt,
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    tenths,
)
from shared.store_rules import (
    EXECUTION_KEY,
    FAILED,
    IDEMPOTENCY_KEY,
    LEASE_OWNER,
    LEASE_UNTIL,
    RELEASED,
    RETRYING,
    RUNNING,
    SKIPPED,
    STATUS,
    SUCCEEDED,
    Run,
)
from shared.timeutil import utc_ms

# What retention deletes of them: records that are done.
EXPIRED_EXECUTION = STATUS.one_of(SUCCEEDED, FAILED, SKIPPED) & (
    Field("finished_at") < Param("before")
)

# The runs of a schedule: every record but the superseded (``None``: one written before
# superseded records were kept).
IS_RUN = Field("superseded").one_of(None, False)
# A skip is final for the occurrence's scheduled deliveries (one sent twice, or come back after
# its executor died before deleting it, would run late, out of its schedule's order); a manual
# run (a backfill) runs it, and a superseded one may come again at its schedule's new revision.
SKIPPED_FOR_GOOD = (STATUS == SKIPPED) & IS_RUN & ~Given(Param("manual"))
# The next attempt of an occurrence: of a record retrying or skipped (not for good), or running
# under a lease that ran out (its executor died). A final record, or one under a live lease,
# takes none.
TAKES_ATTEMPT = (STATUS.one_of(RETRYING, SKIPPED) & ~SKIPPED_FOR_GOOD) | (
    (STATUS == RUNNING) & (LEASE_UNTIL < Param("now"))
)
BEGIN = Write(
    "executions",
    EXECUTION_KEY,
    TAKES_ATTEMPT,
    (
        Set("status", RUNNING),
        Inc("attempts", 1),
        Set("revision", Param("revision")),
        Set("started_at", Param("now")),
        Set("lease_owner", Param("owner")),
        Set("lease_until", Param("lease_until")),
        Set("next_attempt_at", None),
        # A new attempt of an occurrence that was superseded makes its record a run again.
        Set("superseded", False),
    ),
    created=(
        ("schedule_id", Param("schedule_id")),
        ("scheduled_time", Param("scheduled_time")),
        ("manual", Param("manual")),
    ),
)
# An attempt ends only under the lease it began with; it joins the end of the record's log.
FINISH = Write(
    "executions",
    EXECUTION_KEY,
    (LEASE_OWNER == Param("owner")) & (STATUS == RUNNING),
    (
        *set_given(
            "status",
            "started_at",
            "finished_at",
            "http_status",
            "duration_ms",
            "lateness_ms",
            "error",
            "next_attempt_at",
        ),
        *RELEASED,
        Append("attempt_log", Param("attempt"), KEPT_ATTEMPTS),
    ),
)
# A skip makes a record, or ends one retrying or running under a lease that ran out; a live run
# and a record that is done keep theirs. A record made superseded is not a run; one that
# existed stays a run.
SKIP = Write(
    "executions",
    EXECUTION_KEY,
    (STATUS == RETRYING) | ((STATUS == RUNNING) & (LEASE_UNTIL < Param("now"))),
    (
        Set("status", SKIPPED),
        Set("finished_at", Param("now")),
        Set("error", Param("reason")),
        Set("next_attempt_at", None),
        *RELEASED,
    ),
    created=(
        ("schedule_id", Param("schedule_id")),
        ("scheduled_time", Param("scheduled_time")),
        ("attempts", 0),
        ("revision", Param("revision")),
        ("manual", Param("manual")),
        ("superseded", Param("superseded")),
    ),
)
# A dead letter: failed for good and not discarded.
DEAD_LETTER = (STATUS == FAILED) & (Field("discarded_at") == None)
REOPEN = Write(
    "executions",
    EXECUTION_KEY,
    DEAD_LETTER,
    (Set("status", RETRYING), Set("next_attempt_at", Param("now")), *RELEASED),
)
# A reopen is undone only while no attempt has begun since.
RESTORE = Write(
    "executions",
    EXECUTION_KEY,
    (STATUS == RETRYING) & (Field("attempts") == Param("attempts")) & (LEASE_OWNER == None),
    (Set("status", FAILED), Set("next_attempt_at", None)),
)
DISCARD = Write("executions", EXECUTION_KEY, DEAD_LETTER, (Set("discarded_at", Param("now")),))


def occurrence_params(occurrence: Occurrence) -> dict[str, Any]:
    """What ``BEGIN`` and ``SKIP`` take of the occurrence: its key, and its record's fields."""
    return {
        "tenant": occurrence.tenant,
        "occurrence_id": occurrence.occurrence_id,
        "schedule_id": occurrence.schedule_id,
        "scheduled_time": occurrence.scheduled_time,
        "manual": occurrence.manual,
        "revision": occurrence.revision,
    }


def begin_params(
    occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
) -> dict[str, Any]:
    """``BEGIN``'s parameters."""
    return {**occurrence_params(occurrence), "now": now, "owner": owner, "lease_until": lease_until}


def finish_params(execution: Execution, owner: str, outcome: AttemptOutcome) -> dict[str, Any]:
    """``FINISH``'s parameters: the outcome, and the log's entry of the attempt."""
    started = attempt_started(execution, outcome)
    return {
        "tenant": execution.tenant,
        "occurrence_id": execution.occurrence_id,
        "owner": owner,
        "status": outcome.status.value,
        "started_at": started,
        "finished_at": outcome.finished_at,
        "http_status": outcome.answer.status,
        "duration_ms": outcome.duration_ms,
        "lateness_ms": run_lateness_ms(execution, outcome),
        "error": outcome.error,
        "next_attempt_at": outcome.next_attempt_at,
        "attempt": Attempt(
            execution.attempts,
            outcome.status,
            started,
            outcome.finished_at,
            outcome.duration_ms,
            outcome.answer,
            outcome.error,
        ).entry(),
    }


def skip_params(
    occurrence: Occurrence, reason: str, now: datetime, superseded: bool
) -> dict[str, Any]:
    """``SKIP``'s parameters."""
    return {**occurrence_params(occurrence), "superseded": superseded, "reason": reason, "now": now}


def settled_runs(
    settled: Sequence[tuple[Execution, AttemptOutcome]], recorded: Sequence[bool]
) -> list[Run]:
    """The runs a settle counts on their schedules: each final outcome it recorded, in order."""
    return [
        Run(
            execution.tenant,
            execution.schedule_id,
            outcome.status is ExecutionStatus.SUCCEEDED,
            outcome.finished_at,
            execution.occurrence_id,
        )
        for (execution, outcome), done in zip(settled, recorded, strict=True)
        if done and outcome.status.is_final
    ]


def attempt_started(execution: Execution, outcome: AttemptOutcome) -> datetime | None:
    """When the attempt that ended with ``outcome`` sent its request; for an outcome that does
    not say, when it was begun."""
    return outcome.started_at or execution.started_at


def run_lateness_ms(execution: Execution, outcome: AttemptOutcome) -> float | None:
    """The lateness a record keeps once ``outcome`` is recorded: its first attempt's, the
    moment that attempt's request was sent minus the scheduled time (the time it fires, jitter
    included), in milliseconds. A record that has one keeps it: a retry's delay is not
    lateness (``Execution.retry_delay_ms``)."""
    if execution.lateness_ms is not None:
        return execution.lateness_ms
    started = attempt_started(execution, outcome)
    if started is None:
        return None
    return tenths((utc_ms(started) - execution.scheduled_time).total_seconds() * 1000.0)


# -- idempotency records ---------------------------------------------------------------------

# A new key is saved; an expired record is replaced as if absent; a live one refuses the save.
SAVE_IDEMPOTENCY = Write(
    "idempotency_keys",
    IDEMPOTENCY_KEY,
    Field("expires_at") <= Param("now"),
    tuple(
        Set(name, Param(name))
        for name in (
            "fingerprint",
            "schedule_id",
            "revision",
            "next_schedule_time",
            "timezone",
            "created_at",
            "expires_at",
            "answer",
        )
    ),
    created=(),
)
LIVE_IDEMPOTENCY = Field("expires_at") > Param("now")
# The answer of a request that claimed its key before working (a record without an answer yet),
# kept from then on: only that request's claim (its fingerprint, still unanswered) takes it.
KEEP_IDEMPOTENT_ANSWER = Write(
    "idempotency_keys",
    IDEMPOTENCY_KEY,
    (Field("fingerprint") == Param("fingerprint")) & (Field("answer") == None),
    set_given("answer", "expires_at"),
)
FORGET_IDEMPOTENCY = Remove(
    "idempotency_keys", IDEMPOTENCY_KEY, Field("fingerprint") == Param("fingerprint")
)
