"""The poller's rules on stored schedules, whatever the backend (``shared.store_rules`` states
the vocabulary and the schedules' other rules): which schedules a claim takes and in what
order, the advance its lease's owner makes, and the lateness check's cursor."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.guards import Param, Set, Write, params_of, set_given
from shared.model import Schedule
from shared.ports import Advance, ClaimRequest
from shared.store_rules import (
    ACTIVE,
    COMPLETED,
    LATE_CHECK_AT,
    LEASE_OWNER,
    LEASE_UNTIL,
    NEXT_TIME,
    RELEASED,
    REVISION,
    SCHEDULE_KEY,
    STATE_REVISION,
    STATUS,
    status_by_next_time,
)

# A poller claims an active schedule due by the horizon that no live lease holds (one whose
# lease ran out: its poller died).
DUE = (STATUS == ACTIVE) & (NEXT_TIME <= Param("horizon"))
CLAIMABLE = DUE & ((LEASE_UNTIL == None) | (LEASE_UNTIL < Param("now")))
# The order a claim takes what is due in (issue 27 item 4; docs/architecture.md, "Priority
# under a backlog"): the highest priority first, then the earliest; and, for the claims of a
# poller that is behind which age the backlog (``polling_worker.worker.OLDEST_EVERY``), the
# earliest first whatever its priority. Pairs of a stored field and whether it descends.
BY_PRIORITY = (("priority", True), ("next_schedule_time", False))
OLDEST_FIRST = (("next_schedule_time", False),)
CLAIM = Write(
    "schedules",
    SCHEDULE_KEY,
    CLAIMABLE,
    (Set("lease_owner", Param("owner")), Set("lease_until", Param("lease_until"))),
)
# Moved on only by the lease's owner, and only if neither revision changed since the claim (a
# replace or a pause that landed meanwhile wins).
ADVANCE = Write(
    "schedules",
    SCHEDULE_KEY,
    (LEASE_OWNER == Param("owner"))
    & (REVISION == Param("revision"))
    & (STATE_REVISION == Param("state_revision"))
    & (STATUS == ACTIVE),
    (
        *set_given(
            "next_schedule_time", "occurrence_count", "status", "sent_ahead", "late_check_at"
        ),
        Set("updated_at", Param("now")),
        *RELEASED,
    ),
)


def claim_params(claim: ClaimRequest) -> dict[str, Any]:
    """``CLAIM``'s (and ``CLAIMABLE``'s) parameters."""
    return params_of(claim, ("horizon", "now", "owner", "lease_until"))


def advance_params(advance: Advance, owner: str, now: datetime) -> dict[str, Any]:
    """``ADVANCE``'s parameters."""
    claimed, next_time, count, sent_ahead = advance[:4]
    return {
        "tenant": claimed.tenant,
        "schedule_id": claimed.schedule_id,
        "owner": owner,
        "revision": claimed.revision,
        "state_revision": claimed.state_revision,
        "next_schedule_time": next_time,
        "occurrence_count": count,
        "status": status_by_next_time(next_time).value,
        "sent_ahead": sent_ahead,
        "late_check_at": advance.late_check_at,
        "now": now,
    }


# Lateness (``shared.lateness``): the schedules with an alert whose earliest unchecked
# occurrence is due to be checked (a paused one is not: what a pause holds back is not late).
# Equalities rather than a list: nx-27017 0.8.1 (a wire server we test against) gets an $in
# wrong beside a date written by an update operator, and an $or of them right.
LATE_DUE = ((STATUS == ACTIVE) | (STATUS == COMPLETED)) & (LATE_CHECK_AT <= Param("now"))
# A check moves the cursor past what it looked at only if no other check did first and no
# poller holds the schedule (its advance keeps the cursor it claimed), for the same revision:
# of two pollers checking at once, one moves it and tells.
MOVE_LATE_CHECK = Write(
    "schedules",
    SCHEDULE_KEY,
    (LATE_CHECK_AT == Param("checked")) & (LEASE_OWNER == None) & (REVISION == Param("revision")),
    (Set("late_check_at", Param("late_check_at")),),
)


def late_check_params(checked: Schedule, late_check_at: datetime | None) -> dict[str, Any]:
    """``MOVE_LATE_CHECK``'s parameters: the schedule as read (``checked``: its cursor), and
    where its cursor goes."""
    return {
        **params_of(checked, ("tenant", "schedule_id", "revision")),
        "checked": checked.late_check_at,
        "late_check_at": late_check_at,
    }
