"""A tenant's quota of live schedules, whatever the backend: which reservations still count,
and whether one more is admitted."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import NamedTuple

from shared.model import ScheduleStatus
from shared.store_rules import takes_definition

# The schedules that count against a tenant's quota: those that can still fire.
LIVE_STATUSES = (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED)


class StoredState(NamedTuple):
    """What the quota needs of a stored schedule: its status and both revisions."""

    status: ScheduleStatus
    revision: int
    state_revision: int


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
