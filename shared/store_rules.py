"""The rules of stored schedules and execution records that hold whatever the backend, each
stated once.

A guarded write is a ``shared.guards.Write``: the condition under which it applies to a stored
record, and what it changes (a record it may make besides); a query's selection is a
``shared.guards.Condition``. Each store adapter translates them thinly
(``shared.adapters.sqlite.sql``, ``shared.adapters.mongo.filters``) and gives each its
parameters through the functions beside it here; the contract suite
(``tests/integration/store/test_store_contract.py``) checks that every adapter keeps them, and
``tests/unit/test_guards.py`` that each translation means what ``shared.guards.holds`` does.

This module holds the vocabulary (statuses, keys, fields) and the schedules' writes made by
changes and runs; beside it, ``shared.claim_rules`` (the poller's claim, advance and lateness
check), ``shared.overlap_rules`` (the overlap marker), ``shared.quota_rules`` (a tenant's quota)
and ``shared.execution_rules`` (execution records).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from shared.guards import (
    ALWAYS,
    Field,
    Inc,
    Param,
    Set,
    Unless,
    Write,
    holds,
    params_of,
    set_given,
)
from shared.model import (
    SYSTEM,
    ExecutionStatus,
    PausedBy,
    PauseIntent,
    Schedule,
    ScheduleStatus,
    revision_at,
)
from shared.ports import SkipsChange, StateChange

# What ``delete_api_key`` accepts as a ``key_id``: hex digits of a SHA-256, at least eight.
_KEY_ID = re.compile(r"^[0-9a-f]{8,64}$")

ACTIVE = ScheduleStatus.ACTIVE.value
PAUSED = ScheduleStatus.PAUSED.value
COMPLETED = ScheduleStatus.COMPLETED.value
DELETED = ScheduleStatus.DELETED.value
RUNNING = ExecutionStatus.RUNNING.value
RETRYING = ExecutionStatus.RETRYING.value
SUCCEEDED = ExecutionStatus.SUCCEEDED.value
FAILED = ExecutionStatus.FAILED.value
SKIPPED = ExecutionStatus.SKIPPED.value

SCHEDULE_KEY = ("tenant", "schedule_id")
EXECUTION_KEY = ("tenant", "occurrence_id")
IDEMPOTENCY_KEY = ("tenant", "key")

STATUS = Field("status")
REVISION = Field("revision")
STATE_REVISION = Field("state_revision")
NEXT_TIME = Field("next_schedule_time")
LEASE_OWNER = Field("lease_owner")
LEASE_UNTIL = Field("lease_until")
LATE_CHECK_AT = Field("late_check_at")
RELEASED = (Set("lease_owner", None), Set("lease_until", None))
# Live schedules: those that can still fire (what a tenant's quota counts).
LIVE = STATUS.one_of(ACTIVE, PAUSED)
# Every schedule but the tombstones: what listings and counts show.
SHOWN = STATUS != DELETED

# -- schedules -------------------------------------------------------------------------------

# A definition lands on a stored schedule only if it is newer, and on a tombstone only if it is
# newer than the delete too: a create older than a delete never resurrects it.
DEFINITION_LANDS = (REVISION < Param("revision")) & ~(
    (STATUS == DELETED) & (STATE_REVISION >= Param("revision"))
)
# What a store keeps of a definition (``shared.adapters.records.definition_fields``).
DEFINITION_FIELDS = (
    "definition",
    "name",
    "tags",
    "target",
    "name_key",
    "pause_after_failures",
    "priority",
    "calendars",
)

LAND_DEFINITION = Write(
    "schedules",
    SCHEDULE_KEY,
    DEFINITION_LANDS,
    (
        *set_given("revision", *DEFINITION_FIELDS, "next_schedule_time"),
        # A pause stays; otherwise active while there is a next time (``status_by_next_time``).
        Set("status", Unless(STATUS == PAUSED, Param("status"))),
        Set("accepted_at", Param("accepted_at")),
        Set("updated_at", Param("accepted_at")),
        Set("occurrence_count", 0),
        # What was sent for an older revision does not fire.
        Set("sent_ahead", ()),
        # Nor is it checked for lateness (``shared.lateness``): the next advance arms it.
        Set("late_check_at", None),
        *RELEASED,
    ),
    created=(
        ("state_revision", 0),
        ("created_at", Param("accepted_at")),
        ("run_count", 0),
        ("failure_count", 0),
        ("consecutive_failures", 0),
        ("superseded_count", 0),
    ),
)


def status_by_next_time(next_schedule_time: datetime | None) -> ScheduleStatus:
    """A live schedule is active while it has a next time, completed once it has none."""
    return ScheduleStatus.ACTIVE if next_schedule_time is not None else ScheduleStatus.COMPLETED


def definition_params(
    tenant: str,
    schedule_id: str,
    revision: int,
    stored: Mapping[str, Any],
    next_schedule_time: datetime | None,
    accepted_at: datetime,
) -> dict[str, Any]:
    """``LAND_DEFINITION``'s parameters; ``stored``: what a store keeps of the definition."""
    return {
        "tenant": tenant,
        "schedule_id": schedule_id,
        "revision": revision,
        **stored,
        "next_schedule_time": next_schedule_time,
        "status": status_by_next_time(next_schedule_time).value,
        "accepted_at": accepted_at,
    }


def takes_definition(
    stored_revision: int, status: ScheduleStatus, state_revision: int, revision: int
) -> bool:
    """``DEFINITION_LANDS`` of a stored schedule and a definition of ``revision``."""
    stored = {"revision": stored_revision, "status": status.value, "state_revision": state_revision}
    return holds(DEFINITION_LANDS, stored, {"revision": revision})


# Pause, resume and delete apply only if newer than the last of them applied.
_NEWER_STATE = STATE_REVISION < Param("state_revision")
_STATE_CHANGED = (
    Set("state_revision", Param("state_revision")),
    Set("updated_at", Param("now")),
    *RELEASED,
)
# A pause's intent: when it ends by itself, the owner's note, who set it.
PAUSED_UNTIL = Field("paused_until")
_NO_INTENT = (Set("paused_until", None), Set("pause_note", None), Set("pause_set_by", None))
# A pause applies to an active schedule and says who paused it, when, until when and why.
PAUSE = Write(
    "schedules",
    SCHEDULE_KEY,
    _NEWER_STATE & (STATUS == ACTIVE),
    (
        *_STATE_CHANGED,
        Set("status", PAUSED),
        Set("paused_by", PausedBy.USER.value),
        Set("paused_at", Param("now")),
        # What a pause holds back is not late, however it ends (``shared.lateness``): the
        # advance after it arms the check again.
        Set("late_check_at", None),
        Set("paused_until", Param("until")),
        Set("pause_note", Param("note")),
        Set("pause_set_by", Param("by")),
    ),
)
# A resume applies to a paused one, sets its next time, and clears the pause and the failures
# in a row.
RESUME = Write(
    "schedules",
    SCHEDULE_KEY,
    _NEWER_STATE & (STATUS == PAUSED),
    (
        *_STATE_CHANGED,
        Set("status", Param("status")),
        Set("next_schedule_time", Param("next_schedule_time")),
        Set("paused_by", None),
        Set("paused_at", None),
        *_NO_INTENT,
        Set("consecutive_failures", 0),
    ),
)
# A pause that ended (its ``paused_until`` came): the poller resumes it once, whichever poller
# reads it first; its next time stays where the pause left it, so that the poller's next claim
# applies the misfire policy to the occurrences the pause missed.
PAUSE_ENDED = (STATUS == PAUSED) & (PAUSED_UNTIL <= Param("now"))
RESUME_AT_UNTIL = Write(
    "schedules",
    SCHEDULE_KEY,
    PAUSE_ENDED & (STATE_REVISION == Param("read_state_revision")),
    (
        *_STATE_CHANGED,
        Set("status", ACTIVE),
        Set("paused_by", None),
        Set("paused_at", None),
        *_NO_INTENT,
        Set("consecutive_failures", 0),
        # What the pause held back is not late: the next advance arms the check again.
        Set("late_check_at", None),
    ),
)
# A delete leaves a tombstone, made for an unknown id too, so that a create still on queue 1
# cannot land.
DELETE = Write(
    "schedules",
    SCHEDULE_KEY,
    _NEWER_STATE & (STATUS != DELETED),
    (
        *_STATE_CHANGED,
        Set("status", DELETED),
        Set("next_schedule_time", None),
        Set("paused_by", None),
        Set("paused_at", None),
        *_NO_INTENT,
    ),
    created=(
        ("revision", 0),
        ("definition", None),
        ("name", ""),
        ("tags", ()),
        ("calendars", ()),
        ("target", ""),
        ("name_key", ""),
        ("accepted_at", Param("now")),
        ("created_at", Param("now")),
        ("occurrence_count", 0),
        ("run_count", 0),
        ("failure_count", 0),
        ("consecutive_failures", 0),
        ("superseded_count", 0),
    ),
)
# A delete of a tombstone raises its revision: a create accepted since the first delete
# cannot land either.
RAISE_TOMBSTONE = Write(
    "schedules",
    SCHEDULE_KEY,
    _NEWER_STATE & (STATUS == DELETED),
    (Set("state_revision", Param("state_revision")), Set("updated_at", Param("now"))),
)


# What the state rules take of a ``StateChange`` as it is.
_STATE_CHANGE_PARAMS = ("tenant", "schedule_id", "state_revision", "next_schedule_time", "now")


def state_params(change: StateChange) -> dict[str, Any]:
    """The parameters of ``PAUSE`` (with its ``intent``), ``RESUME``, ``DELETE`` and
    ``RAISE_TOMBSTONE``."""
    until, note, by = change.intent or PauseIntent()
    return {
        **params_of(
            change, ("tenant", "schedule_id", "state_revision", "next_schedule_time", "now")
        ),
        "status": status_by_next_time(change.next_schedule_time).value,
        "until": until,
        "note": note,
        "by": by,
    }


def resumed_revision(paused: Schedule, now: datetime) -> int:
    """The state revision ``RESUME_AT_UNTIL`` gives a paused schedule as read at ``now``: raised
    past both the one read and the clock's (``revision_at``), ordered with its owner's pauses
    and resumes."""
    return max(paused.state_revision + 1, revision_at(now))


def resume_at_until_params(paused: Schedule, now: datetime) -> dict[str, Any]:
    """``RESUME_AT_UNTIL``'s parameters for a paused schedule as read."""
    return {
        "tenant": paused.tenant,
        "schedule_id": paused.schedule_id,
        "read_state_revision": paused.state_revision,
        "state_revision": resumed_revision(paused, now),
        "now": now,
    }


# A finished occurrence counts on its schedule: a success resets the failures in a row, a
# failure adds one.
_RUN = (Inc("run_count", 1), Set("last_run_at", Param("at")), Set("last_status", Param("last")))
COUNT_SUCCESS = Write("schedules", SCHEDULE_KEY, ALWAYS, (*_RUN, Set("consecutive_failures", 0)))
COUNT_FAILURE = Write(
    "schedules",
    SCHEDULE_KEY,
    ALWAYS,
    (*_RUN, Inc("failure_count", 1), Inc("consecutive_failures", 1)),
)
# Then an active schedule whose failures in a row reached its pause_after_failures pauses
# itself, unless a pause or resume newer than the failure landed first.
PAUSE_AFTER = Field("pause_after_failures")
PAUSE_ON_FAILURES = Write(
    "schedules",
    SCHEDULE_KEY,
    (STATUS == ACTIVE)
    & (PAUSE_AFTER >= 1)
    & (Field("consecutive_failures") >= PAUSE_AFTER)
    & (STATE_REVISION < Param("state_revision")),
    (
        Set("status", PAUSED),
        Set("paused_by", PausedBy.FAILURES.value),
        Set("paused_at", Param("at")),
        Set("paused_until", None),
        Set("pause_note", None),
        Set("pause_set_by", SYSTEM),
        Set("updated_at", Param("at")),
        Set("state_revision", Param("state_revision")),
        Set("late_check_at", None),
        *RELEASED,
    ),
)


def run_params(tenant: str, schedule_id: str, succeeded: bool, at: datetime) -> dict[str, Any]:
    """The parameters of ``COUNT_SUCCESS``/``COUNT_FAILURE`` and then ``PAUSE_ON_FAILURES``:
    a pause at ``at`` has the revision of a change made then (``revision_at``)."""
    return {
        "tenant": tenant,
        "schedule_id": schedule_id,
        "at": at,
        "last": SUCCEEDED if succeeded else FAILED,
        "state_revision": revision_at(at),
    }


class Run(NamedTuple):
    """A finished occurrence counted on its schedule (``record_run``); its occurrence id where
    a backend needs it to count the run once (a settle tried again)."""

    tenant: str
    schedule_id: str
    succeeded: bool
    at: datetime
    occurrence_id: str | None = None


def run_counts(
    runs: Sequence[Run],
) -> tuple[list[tuple[Run, Write, dict[str, Any]]], list[dict[str, Any]]]:
    """What counting ``runs`` in order writes: each run's count (``COUNT_SUCCESS`` or
    ``COUNT_FAILURE``, with its parameters), then ``PAUSE_ON_FAILURES``'s parameters for each
    schedule whose last run failed."""
    counts = []
    last: dict[tuple[str, str], tuple[Write, dict[str, Any]]] = {}
    for run in runs:
        params = run_params(run.tenant, run.schedule_id, run.succeeded, run.at)
        rule = COUNT_SUCCESS if run.succeeded else COUNT_FAILURE
        counts.append((run, rule, params))
        last[(run.tenant, run.schedule_id)] = (rule, params)
    return counts, [params for rule, params in last.values() if rule is COUNT_FAILURE]


# The occurrences its owner asked to skip, replaced as a whole only if they are as read, by
# their version (two requests at once: one goes, the other reads again); never set: ``None``.
# (A version rather than the list itself: nx-27017 cannot compare a stored array with a
# given one, which MongoDB can.) A completed schedule too: its last occurrences may still be
# on their way to the executors.
SKIPS_VERSION = Field("skips_version")
SET_SKIPS = Write(
    "schedules",
    SCHEDULE_KEY,
    SHOWN & (SKIPS_VERSION == Param("read_skips")),
    (Set("skips", Param("skips")), Inc("skips_version", 1)),
)
SET_FIRST_SKIPS = Write(
    "schedules",
    SCHEDULE_KEY,
    SHOWN & (SKIPS_VERSION == None),
    (Set("skips", Param("skips")), Set("skips_version", 1)),
)


def skips_params(change: SkipsChange) -> dict[str, Any]:
    """``SET_SKIPS``'s and ``SET_FIRST_SKIPS``' parameters."""
    return {**params_of(change, ("tenant", "schedule_id", "skips")), "read_skips": change.read}


# Superseded occurrences skipped, counted on their schedule.
COUNT_SUPERSEDED = Write(
    "schedules", SCHEDULE_KEY, ALWAYS, (Inc("superseded_count", Param("count")),)
)
# A definition sealed anew, unless it was replaced since it was read.
RESEAL = Write(
    "schedules",
    SCHEDULE_KEY,
    Field("definition") == Param("read"),
    (Set("definition", Param("definition")),),
)
# What retention deletes: schedules that can no longer fire (``shared.execution_rules``: execution
# records that are done).
ENDED = (COMPLETED, DELETED)
CHANGED_BEFORE = Field("updated_at") < Param("before")
EXPIRED_SCHEDULE = STATUS.one_of(*ENDED) & CHANGED_BEFORE


def is_key_id(text: str) -> bool:
    """Whether ``text`` can be an API key's ``key_id`` (``ApiKey.key_id``, a hash prefix)."""
    return _KEY_ID.match(text) is not None
