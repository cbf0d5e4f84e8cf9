"""The rules of stored schedules and execution records that hold whatever the backend.

Each store adapter (``shared.adapters``) states these rules in its own terms (a guard of an
update, a ``WHERE`` clause, a branch); the functions here are what they mean, so an adapter
does not re-encode them, and the contract suite (``tests/integration/test_store_contract.py``)
checks that every adapter keeps them.
"""

from __future__ import annotations

import re
from datetime import datetime

from shared.model import Execution, ScheduleStatus
from shared.timeutil import utc_ms

# What ``delete_api_key`` accepts as a ``key_id``: hex digits of a SHA-256, at least eight.
_KEY_ID = re.compile(r"^[0-9a-f]{8,64}$")


def status_by_next_time(next_schedule_time: datetime | None) -> ScheduleStatus:
    """A live schedule is active while it has a next time, completed once it has none."""
    return ScheduleStatus.ACTIVE if next_schedule_time is not None else ScheduleStatus.COMPLETED


def takes_definition(
    stored_revision: int, status: ScheduleStatus, state_revision: int, revision: int
) -> bool:
    """Whether a stored schedule takes a definition of ``revision``: only a newer one and, on a
    tombstone, only one newer than the delete too (a create older than a delete never
    resurrects it)."""
    if revision <= stored_revision:
        return False
    return status is not ScheduleStatus.DELETED or revision > state_revision


def status_after_definition(
    status: ScheduleStatus, next_schedule_time: datetime | None
) -> ScheduleStatus:
    """The status a replaced definition leaves: a pause stays; otherwise by the next time."""
    if status is ScheduleStatus.PAUSED:
        return status
    return status_by_next_time(next_schedule_time)


def state_change_source(target: ScheduleStatus) -> ScheduleStatus:
    """The only status a pause (``PAUSED``) or a resume (``ACTIVE``) applies to."""
    if target is ScheduleStatus.PAUSED:
        return ScheduleStatus.ACTIVE
    if target is ScheduleStatus.ACTIVE:
        return ScheduleStatus.PAUSED
    raise ValueError(f"apply_state cannot set status {target.value!r}")


def attempt_lateness_ms(execution: Execution) -> float | None:
    """How late the attempt of ``execution`` started after its scheduled time, in milliseconds;
    ``None`` for an attempt that never started."""
    started = execution.started_at
    if started is None:
        return None
    return (utc_ms(started) - execution.scheduled_time).total_seconds() * 1000.0


def is_key_id(text: str) -> bool:
    """Whether ``text`` can be an API key's ``key_id`` (``ApiKey.key_id``, a hash prefix)."""
    return _KEY_ID.match(text) is not None
