"""What the executor decides about a due occurrence before calling: pure functions, no I/O.

- ``skip_reason``: whether the schedule as stored now still wants this occurrence;
- ``grace_refusal``: whether a first attempt starts too late for its schedule's grace.

What happens after a call (success, retry later, or dead letter) is ``shared.retry.next_step``.
"""

from __future__ import annotations

from datetime import datetime

from shared.model import Occurrence, Schedule, ScheduleDefinition, ScheduleStatus

DELETED = "schedule deleted"


def skip_reason(occurrence: Occurrence, schedule: Schedule | None) -> str | None:
    """Why the occurrence must not run, given its schedule as stored (``None``: unknown); None
    if it runs. A manual run (``trigger``) runs whatever the revision or pause state."""
    if schedule is None or schedule.status is ScheduleStatus.DELETED:
        return DELETED
    if occurrence.manual:
        return None
    if schedule.revision != occurrence.revision:
        return f"schedule changed (revision {occurrence.revision} → {schedule.revision})"
    if schedule.status is ScheduleStatus.PAUSED:
        return "schedule paused"
    return None


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
