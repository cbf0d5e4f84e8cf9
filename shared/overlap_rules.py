"""The overlap marker's rules (``shared.model.OverlapPolicy``), whatever the backend.

A schedule whose policy is not ``allow`` keeps a marker: the occurrence in progress (begun, not
yet final) holds it until ``overlap_until``, renewed at each of its attempts and retries; with
``buffer_one``, one later occurrence waits in ``overlap_waiting`` until
``overlap_waiting_until``, renewed each time its executor checks again. A hold or a wait whose
time passed is free: its executor died. ``allow`` never writes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.guards import ALWAYS, Field, Param, Set, Write
from shared.store_rules import SCHEDULE_KEY

OVERLAP_HOLDER = Field("overlap_holder")
OVERLAP_UNTIL = Field("overlap_until")
OVERLAP_WAITING = Field("overlap_waiting")
OVERLAP_WAITING_UNTIL = Field("overlap_waiting_until")
_OCCURRENCE = Param("occurrence")
# No live hold, and no other live wait (disjoint cases: one guarded update each on MongoDB).
_NO_LIVE_HOLD = (OVERLAP_UNTIL == None) | (OVERLAP_UNTIL < Param("now"))
_NO_OTHER_WAIT = (
    (OVERLAP_WAITING_UNTIL == None)
    | (OVERLAP_WAITING_UNTIL < Param("now"))
    | ((OVERLAP_WAITING_UNTIL >= Param("now")) & (OVERLAP_WAITING == _OCCURRENCE))
)
# An occurrence takes a free marker (the one waiting for it, or none waiting): its wait ends.
HOLD_OVERLAP = Write(
    "schedules",
    SCHEDULE_KEY,
    _NO_LIVE_HOLD & _NO_OTHER_WAIT,
    (
        Set("overlap_holder", _OCCURRENCE),
        Set("overlap_until", Param("until")),
        Set("overlap_waiting", None),
        Set("overlap_waiting_until", None),
    ),
)
# The occurrence that holds it renews its hold (its next attempt, a retry's wait); a wait stays.
RENEW_OVERLAP = Write(
    "schedules",
    SCHEDULE_KEY,
    OVERLAP_HOLDER == _OCCURRENCE,
    (Set("overlap_until", Param("until")),),
)
# With ``buffer_one``, an occurrence refused a hold waits, if none other waits (the same
# condition, its own wait first: the case a wait checked again meets).
WAIT_OVERLAP = Write(
    "schedules",
    SCHEDULE_KEY,
    ((OVERLAP_WAITING_UNTIL >= Param("now")) & (OVERLAP_WAITING == _OCCURRENCE))
    | (OVERLAP_WAITING_UNTIL == None)
    | (OVERLAP_WAITING_UNTIL < Param("now")),
    (Set("overlap_waiting", _OCCURRENCE), Set("overlap_waiting_until", Param("until"))),
)
# A run taken over (its executor died mid-call, its hold ended with its lease) waits first in
# line, whatever the policy: it is the earlier occurrence, already begun; a wait it displaces
# finds its own gone at its next check and is skipped as one more waiting.
WAIT_OVERLAP_FIRST = Write(
    "schedules",
    SCHEDULE_KEY,
    ALWAYS,
    (Set("overlap_waiting", _OCCURRENCE), Set("overlap_waiting_until", Param("until"))),
)
# A final occurrence (or one skipped, or taken by none) frees the marker it holds.
RELEASE_OVERLAP = Write(
    "schedules",
    SCHEDULE_KEY,
    OVERLAP_HOLDER == _OCCURRENCE,
    (Set("overlap_holder", None), Set("overlap_until", None)),
)


def overlap_params(
    tenant: str,
    schedule_id: str,
    occurrence: str,
    now: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """The parameters of ``HOLD_OVERLAP``, ``RENEW_OVERLAP``, ``WAIT_OVERLAP``,
    ``WAIT_OVERLAP_FIRST`` and ``RELEASE_OVERLAP`` (which needs no ``until``)."""
    return {
        "tenant": tenant,
        "schedule_id": schedule_id,
        "occurrence": occurrence,
        "now": now,
        "until": until,
    }
