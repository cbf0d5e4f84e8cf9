"""The rules of stored schedules and execution records that hold whatever the backend.

Each store adapter (``shared.adapters``) states these rules in its own terms (a guard of an
update, a ``WHERE`` clause, a branch); the functions here are what they mean, so an adapter
does not re-encode them, and the contract suite (``tests/integration/store/test_store_contract.py``)
checks that every adapter keeps them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import NamedTuple

from shared.model import AttemptOutcome, Execution, ScheduleStatus, tenths
from shared.timeutil import utc_ms

# What ``delete_api_key`` accepts as a ``key_id``: hex digits of a SHA-256, at least eight.
_KEY_ID = re.compile(r"^[0-9a-f]{8,64}$")


# The schedules that count against a tenant's quota: those that can still fire.
LIVE_STATUSES = (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED)


class StoredState(NamedTuple):
    """What the quota needs of a stored schedule: its status and both revisions."""

    status: ScheduleStatus
    revision: int
    state_revision: int


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


def pending_slot(
    revision: int, expires_at: datetime, stored: StoredState | None, now: datetime
) -> bool:
    """Whether a quota reservation for a mutation of ``revision`` still counts: until the store
    holds that mutation or one newer (the schedule no longer ``takes_definition`` of it), and
    until it expires."""
    if expires_at <= now:
        return False
    return stored is None or takes_definition(
        stored.revision, stored.status, stored.state_revision, revision
    )


def admit_to_quota(
    schedule_id: str,
    states: Mapping[str, StoredState],
    pending_ids: Collection[str],
    live_elsewhere: int,
    quota: int,
) -> tuple[bool, int]:
    """Whether a reservation for ``schedule_id`` is held, and the slots the tenant then takes.

    ``states`` holds, in one snapshot, the stored schedules among ``schedule_id`` and the ids of
    the tenant's reservations; ``pending_ids`` are those whose reservation still counts;
    ``live_elsewhere`` counts the tenant's other live schedules. Each of these schedules takes
    one slot while live or pending. A schedule that takes one already is always admitted (a
    replace does not add a schedule); another only while fewer than ``quota`` are taken.
    """
    holding = {
        name
        for name in {schedule_id, *states, *pending_ids}
        if name in pending_ids or (name in states and states[name].status in LIVE_STATUSES)
    }
    taken = live_elsewhere + len(holding)
    if schedule_id in holding:
        return True, taken
    if taken < quota:
        return True, taken + 1
    return False, taken


def state_change_source(target: ScheduleStatus) -> ScheduleStatus:
    """The only status a pause (``PAUSED``) or a resume (``ACTIVE``) applies to."""
    if target is ScheduleStatus.PAUSED:
        return ScheduleStatus.ACTIVE
    if target is ScheduleStatus.ACTIVE:
        return ScheduleStatus.PAUSED
    raise ValueError(f"apply_state cannot set status {target.value!r}")


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


def is_key_id(text: str) -> bool:
    """Whether ``text`` can be an API key's ``key_id`` (``ApiKey.key_id``, a hash prefix)."""
    return _KEY_ID.match(text) is not None
