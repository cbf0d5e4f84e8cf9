"""What the executor decides about a due occurrence before calling: pure functions, no I/O.

- ``superseded``: whether the schedule as stored now still wants this occurrence, sent ahead
  of its time;
- ``grace_refusal``: whether a first attempt starts too late for its schedule's grace.

What happens after a call (success, retry later, or dead letter) is ``shared.retry.next_step``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.formats import occurrence_id
from shared.model import (
    Occurrence,
    OverlapPolicy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
)
from shared.ports import OverlapSeen

DELETED = "schedule deleted"


@dataclass(frozen=True)
class Superseded:
    """A change, pause or delete of the schedule that came after its occurrence was sent."""

    cause: str  # changed, paused, deleted, skipped (on request)
    reason: str
    # Which change: every occurrence it supersedes has the same (schedule, cause, change).
    change: tuple[int, int]


def superseded(occurrence: Occurrence, schedule: Schedule | None) -> Superseded | None:
    """What superseded the occurrence, given its schedule as stored (``None``: unknown); None if
    it runs. A manual run (``trigger``) runs whatever the revision or pause state."""
    if schedule is None or schedule.status is ScheduleStatus.DELETED:
        state = schedule.state_revision if schedule is not None else 0
        return Superseded("deleted", DELETED, (occurrence.revision, state))
    if occurrence.manual:
        return None
    if schedule.revision != occurrence.revision:
        reason = f"schedule changed (revision {occurrence.revision} → {schedule.revision})"
        return Superseded("changed", reason, (occurrence.revision, schedule.revision))
    if schedule.status is ScheduleStatus.PAUSED and not pause_ended_by(schedule, occurrence):
        change = (occurrence.revision, schedule.state_revision)
        return Superseded("paused", "schedule paused", change)
    if skipped_on_request(schedule, occurrence):
        return Superseded("skipped", SKIPPED_ON_REQUEST, (occurrence.revision, 0))
    return None


# Why an occurrence its schedule's owner asked to skip was skipped (``POST …/skip``).
SKIPPED_ON_REQUEST = "skipped on request (POST …/skip)"


def skipped_on_request(schedule: Schedule, occurrence: Occurrence) -> bool:
    """Whether the occurrence is one the schedule's owner asked to skip: by its nominal time,
    which its id keeps (jitter moves only the time it fires)."""
    return any(
        occurrence_id(schedule.schedule_id, nominal) == occurrence.occurrence_id
        for nominal in schedule.skips
    )


def pause_ended_by(schedule: Schedule, occurrence: Occurrence) -> bool:
    """Whether the schedule's pause ends (``paused_until``) by the occurrence's time: it runs,
    whether or not a poller has resumed the schedule yet (it does so within about a second)."""
    until = schedule.paused_until
    return until is not None and occurrence.scheduled_time >= until


def grace_refusal(
    occurrence: Occurrence, definition: ScheduleDefinition, now: datetime, is_retry: bool
) -> str | None:
    """Why a call starting at ``now`` is too late for the schedule's grace; None if it is not.

    Grace applies to an occurrence's first attempt only (a retry is late by its backoff), and
    never to a manual run.
    """
    grace = definition.misfire.grace_seconds
    if grace is None or occurrence.manual or is_retry:
        return None
    late = (now - occurrence.scheduled_time).total_seconds()
    if late <= grace:
        return None
    return f"late by {late:.3f}s, beyond grace of {grace:g}s"


def overlap_refusal(policy: OverlapPolicy, holder: str | None) -> str:
    """Why an occurrence refused its schedule's overlap marker is skipped (``holder``: the
    occurrence in progress, as the version check read it)."""
    running = f"{holder} is" if holder else "an earlier occurrence is"
    if policy is OverlapPolicy.BUFFER_ONE:
        return f"overlap: {running} still in progress and another already waits"
    return f"overlap: {running} still running or waiting to retry"


def overlap_guarded(schedule: Schedule | None) -> bool:
    """Whether the schedule's occurrences take its overlap marker: a policy but ``allow``
    (``allow`` never writes it)."""
    return (
        schedule is not None
        and schedule.definition is not None
        and schedule.definition.overlap is not OverlapPolicy.ALLOW
    )


def overlap_blocked(schedule: Schedule, occurrence_id: str, now: datetime, buffer: bool) -> bool:
    """Whether the schedule as read says the occurrence can neither hold its overlap marker nor
    wait for it (``take_overlaps`` would refuse): another occurrence holds it live and, when it
    may wait (``buffer``), another waits live. Skipped on that read, it costs no write: it was
    due while the other held the schedule, as of the read."""
    if schedule.overlap_holder == occurrence_id:
        return False
    other_waits = (
        schedule.overlap_waiting != occurrence_id
        and schedule.overlap_waiting_until is not None
        and schedule.overlap_waiting_until >= now
    )
    held = schedule.overlap_until is not None and schedule.overlap_until >= now
    if not (held or other_waits):
        return False
    return not buffer or other_waits


def overlap_seen(schedule: Schedule, occurrence_id: str, now: datetime) -> OverlapSeen | None:
    """What the schedule as read shows of its overlap marker to this occurrence: its own, or
    another's live hold (``OverlapClaim.seen``); None when free."""
    if schedule.overlap_holder == occurrence_id:
        return OverlapSeen.MINE
    if schedule.overlap_until is not None and schedule.overlap_until >= now:
        return OverlapSeen.OTHER
    return None
