"""The schedules' port: durable schedules, their definitions, states, claims and quota."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from shared.definition_cache import DefinitionCache
from shared.model import PauseIntent, Schedule, ScheduleDefinition, ScheduleStatus
from shared.ports.pages import Page


class ScheduleOrder(StrEnum):
    """What ``list_schedules`` orders a listing by, then by id (``shared.schedule_listing``)."""

    ID = "id"
    NAME = "name"
    # The dispatch cursor (``next_schedule_time``); schedules without one come last.
    NEXT_TIME = "next_time"
    CREATED = "created"


@dataclass(frozen=True)
class ScheduleFilter:
    """What ``list_schedules`` selects, and in which order; empty fields select everything of
    the tenant.

    ``search`` finds a schedule whose name contains the text (case ignored), one tag of which
    is the text, or whose target host (``shared.schedule_listing.target_of``) contains the host
    the text names: the rest of the URL is sealed at rest, so it is not searched. By name is
    in case-folded order (``shared.schedule_listing.name_key``). ``ids``: only those of these
    ids (an empty tuple selects none).
    """

    status: ScheduleStatus | None = None
    name_prefix: str | None = None
    tag: str | None = None
    next_before: datetime | None = None
    next_after: datetime | None = None
    search: str | None = None
    order: ScheduleOrder = ScheduleOrder.ID
    descending: bool = False
    ids: tuple[str, ...] | None = None


# The arguments of ``apply_definition``: tenant, schedule id, revision, definition, next schedule
# time, accepted at.
DefinitionToApply = tuple[str, str, int, ScheduleDefinition, datetime | None, datetime]


class OverlapTurn(StrEnum):
    """What ``take_overlaps`` gave an occurrence of a schedule whose overlap policy is not
    ``allow``."""

    HELD = "held"  # it holds its schedule's overlap marker: it may begin
    WAITING = "waiting"  # another holds it and this one waits (``buffer_one``): check again
    REFUSED = "refused"  # another holds it (and, to buffer, another waits): it is skipped


class OverlapSeen(StrEnum):
    """What a read showed of a schedule's overlap marker, as an occurrence claims it."""

    MINE = "mine"  # this occurrence holds it (a retry, a redelivery)
    OTHER = "other"  # another holds it, live


class OverlapClaim(NamedTuple):
    """An occurrence's claim on its schedule's overlap marker (``take_overlaps``): held, or
    waited for (``buffer``, ``taken_over``), until ``until`` unless renewed.

    ``seen`` is what a read of the schedule just showed, for the store to try the likely rule
    first (on MongoDB each rule tried is a command or more).
    """

    tenant: str
    schedule_id: str
    occurrence_id: str
    until: datetime
    buffer: bool = False
    seen: OverlapSeen | None = None
    # A run already begun, taken over after its executor died: it waits first in line, under
    # either policy, rather than be refused (``WAIT_OVERLAP_FIRST``).
    taken_over: bool = False


class Advance(NamedTuple):
    """One schedule the poller moves on (``Store.advance_schedules``): the claimed schedule, its
    new ``next_schedule_time`` and ``occurrence_count``, and its ``sent_ahead`` times."""

    claimed: Schedule
    next_schedule_time: datetime | None
    occurrence_count: int
    sent_ahead: tuple[datetime, ...] = ()
    # Its lateness cursor (``Schedule.late_check_at``, ``shared.lateness.armed_check_at``).
    late_check_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    """A poller's claim (``ScheduleStore.claim_due_schedules``): at most ``limit`` active
    schedules due by ``horizon``, leased to ``owner`` until ``lease_until``; a lease that ran
    out by ``now`` is taken over. ``oldest_first``: in ``shared.claim_rules.OLDEST_FIRST``'s
    order instead of ``BY_PRIORITY``'s."""

    horizon: datetime
    now: datetime
    limit: int
    owner: str
    lease_until: datetime
    oldest_first: bool = False


class StateChange(NamedTuple):
    """One schedule's pause, resume or delete (``ScheduleStore.apply_state``, ``apply_states``):
    the state revision it comes with, the status it sets, the next time a resume sets, when it
    is made, and a pause's ``intent``."""

    tenant: str
    schedule_id: str
    state_revision: int
    status: ScheduleStatus
    next_schedule_time: datetime | None
    now: datetime
    intent: PauseIntent | None = None


class SkipsChange(NamedTuple):
    """A schedule's ``skips`` replaced (``ScheduleStore.set_skips``) if their version
    (``skips_version``) is still the one ``read``."""

    tenant: str
    schedule_id: str
    read: int
    skips: tuple[datetime, ...]


@dataclass(frozen=True)
class SlotReservation:
    """Room held for one live schedule of ``tenant`` by a create (or replace) the API accepted:
    it counts against the tenant's quota until the store holds that mutation (``revision``)
    or one newer, or until ``expires_at`` (its message was lost, or its process died before
    sending it)."""

    tenant: str
    schedule_id: str
    revision: int
    expires_at: datetime


class ScheduleStore(ABC):
    """Durable schedules, keyed by ``(tenant, schedule_id)``: tenants never share a key."""

    @abstractmethod
    def ensure_indexes(self) -> None:
        """Create the tables/collections and indexes the other methods rely on (idempotent)."""

    @abstractmethod
    def close(self) -> None:
        """Release the clients this adapter created."""

    @abstractmethod
    def ping(self) -> None:
        """Return if the backend answers; raise ``Transient`` otherwise."""

    @abstractmethod
    def get_schedule(self, tenant: str, schedule_id: str) -> Schedule | None:
        """The stored schedule, tombstones included (``status == DELETED``); ``None`` if unknown."""

    @abstractmethod
    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        """``get_schedule`` for each ``(tenant, schedule_id)``: the version check of every
        occurrence due together, in one read where the backend allows it.

        Returns the stored schedules (tombstones included) by key; unknown keys are absent.
        With ``cache``, a definition is opened only when the cache has no definition of its
        revision (and then kept there).
        """

    def get_schedule_states(
        self,
        keys: Sequence[tuple[str, str]],
        known: Mapping[tuple[str, str, int], ScheduleDefinition],
    ) -> dict[tuple[str, str], Schedule]:
        """``get_schedules`` without reading a definition: one read of the ids, revisions and
        states (a projection without the stored definitions, where the backend allows it).

        Each schedule's definition is the one ``known`` holds for its revision (a revision
        names one definition for good), else ``None``. This default reads them whole.
        """
        found = self.get_schedules(keys)
        return {
            key: schedule.evolve(
                definition=known.get((schedule.tenant, schedule.schedule_id, schedule.revision))
            )
            for key, schedule in found.items()
        }

    def apply_definition(self, landing: DefinitionToApply) -> bool:
        """``apply_definitions`` of one."""
        return self.apply_definitions([landing])[0]

    @abstractmethod
    def apply_definitions(self, definitions: Sequence[DefinitionToApply]) -> list[bool]:
        """Create or replace each schedule's definition, atomically, if its revision is newer;
        each ``(tenant, schedule_id, revision, definition, next_schedule_time, accepted_at)``
        in order (a schedule named twice in one call: each in turn). Returns, in order,
        whether each was applied.

        Applied only when ``revision`` is greater than the stored ``revision`` and, for a
        tombstone, greater than its ``state_revision`` (a create older than a delete never
        resurrects it). A replace keeps the pause state and the run counters, sets
        ``next_schedule_time`` (``None`` completes the schedule), empties ``sent_ahead`` (what
        was sent for the old revision does not fire) and drops any poller lease.
        """

    @abstractmethod
    def apply_state(self, change: StateChange) -> bool:
        """Pause, resume or delete, atomically, if ``state_revision`` is newer than the stored one.

        ``DELETED`` on an unknown id stores a tombstone (so a create still in flight on queue 1
        cannot land) and returns ``False``; on a tombstone it raises the tombstone's revision
        (a create accepted since the first delete cannot land either) and returns ``False``.
        Pausing or resuming an unknown or deleted schedule changes nothing and returns
        ``False``. Resume sets ``next_schedule_time`` as given. A pause records who paused
        (``PausedBy.USER``) and when, and its ``intent`` (until when, the note, who set it); a
        resume clears that and the consecutive failures.
        """

    @abstractmethod
    def set_skips(self, change: SkipsChange) -> bool:
        """Replace the schedule's ``skips`` with ``change.skips``, atomically, if their version
        (``skips_version``) is still ``change.read``; whether it was (a deleted or unknown
        schedule: never)."""

    @abstractmethod
    def resume_ended_pauses(self, now: datetime, limit: int) -> list[Schedule]:
        """Resume up to ``limit`` paused schedules whose ``paused_until`` came by ``now``, each
        once whoever else resumes them at the same time (a guarded write of its state revision
        as read): active again, the pause and its intent cleared, ``next_schedule_time`` left
        where the pause found it (the next claim applies the misfire policy to what the pause
        missed). Returns those this call resumed, as they were read."""

    @abstractmethod
    def take_overlaps(self, claims: Sequence[OverlapClaim], now: datetime) -> list[OverlapTurn]:
        """Each claim on its schedule's overlap marker, in order, each atomically: ``HELD`` if
        the marker was free (no hold whose ``until`` is still to come, and no other live wait)
        or is held by this occurrence already (its hold then lasts until the claim's
        ``until``); else ``WAITING`` for a ``buffer`` claim when no other live wait is
        recorded (it is recorded, until ``until``); else ``REFUSED``. Taking the marker ends
        the occurrence's own wait. A hold or wait whose ``until`` passed counts as free (its
        executor died). A schedule that does not exist refuses. A claim ``seen`` ``MINE``
        tries the renewal first; a ``buffer`` claim ``seen`` ``OTHER`` tries to wait first, and
        waits (``WAITING``) where it may, even if the marker was freed since the read: it takes
        it at its next claim."""

    @abstractmethod
    def release_overlaps(self, held: Sequence[tuple[str, str, str]]) -> None:
        """Free each (tenant, schedule id, occurrence id)'s marker, where that occurrence holds
        it (a wait stays: the waiting occurrence takes the marker when it checks again)."""

    @abstractmethod
    def apply_states(self, changes: Sequence[StateChange]) -> list[bool]:
        """``apply_state`` of each stored schedule, in one write where the backend allows it
        (SQLite: one transaction; MongoDB: one bulk write): a bulk operation's page. Returns,
        in order, whether each applied. Unlike ``apply_state`` it makes no tombstone of an
        unknown id, nor raises a tombstone's revision: it changes schedules read just before
        (a schedule named twice: by its first entry)."""

    @abstractmethod
    def claim_due_schedules(self, claim: ClaimRequest) -> list[Schedule]:
        """Claim at most ``limit`` active schedules with ``next_schedule_time <= horizon``, in
        the order of ``shared.claim_rules.BY_PRIORITY`` (the highest priority first, then the
        earliest) and returned in it; with ``oldest_first``, of ``OLDEST_FIRST`` (``claim``:
        ``ClaimRequest``).

        A claim following a full one may take them from a part of the due schedules (MongoDB:
        a window of slices), so that concurrent callers take disjoint work, as long as the most
        overdue is claimed within a bounded number of claims. A claimed schedule is invisible
        to other claims until ``lease_until`` or until the owner advances it; schedules whose
        lease expired (their poller died) are claimable again. Two concurrent callers never
        receive the same schedule.
        """

    def advance_schedule(
        self,
        claimed: Schedule,
        owner: str,
        next_schedule_time: datetime | None,
        occurrence_count: int,
        now: datetime,
        sent_ahead: Sequence[datetime] = (),
    ) -> bool:
        """``advance_schedules`` of one."""
        advance = Advance(claimed, next_schedule_time, occurrence_count, tuple(sent_ahead))
        return self.advance_schedules([advance], owner, now)[0]

    @abstractmethod
    def advance_schedules(
        self, advances: Sequence[Advance], owner: str, now: datetime
    ) -> list[bool]:
        """Move each claimed schedule on (``Advance``) and release its lease; returns, in
        order, whether each was applied (a schedule named twice: by its first entry).

        Applied only if ``owner`` still holds the lease and neither revision changed since the
        claim (a replace or pause that landed meanwhile wins). A next time of ``None``
        completes the schedule. ``sent_ahead`` replaces the schedule's ``sent_ahead`` (a
        definition applied later empties it; a pause or resume keeps it).
        """

    @abstractmethod
    def late_schedules(self, now: datetime, limit: int) -> list[Schedule]:
        """At most ``limit`` schedules, active or completed, whose ``late_check_at`` is at or
        before ``now`` (``shared.lateness``), the earliest first."""

    @abstractmethod
    def move_late_check(self, checked: Schedule, late_check_at: datetime | None) -> bool:
        """Set the ``late_check_at`` of the schedule ``checked`` was read as, only if it still
        has the one read, the same revision, and no poller holds it (its lease released);
        whether it was set. Of concurrent moves from the same read, one applies."""

    @abstractmethod
    def record_run(self, tenant: str, schedule_id: str, succeeded: bool, at: datetime) -> None:
        """Count a finished occurrence: runs, failures, consecutive failures (reset on success).

        A failure that brings an active schedule's consecutive failures to its definition's
        ``pause_after_failures`` pauses it, in the same write: ``paused_by`` is
        ``PausedBy.FAILURES``, ``paused_at`` is ``at``, and its ``state_revision`` becomes
        ``revision_at(at)``; unless a pause or resume with a newer revision landed first (a
        failure older than a resume never pauses the schedule again).
        """

    @abstractmethod
    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        """Live schedules of a tenant (no tombstones) as ``query`` selects and orders them,
        ``limit`` at most per page; ``cursor`` is a page's ``next_cursor`` for the same query
        (``shared.schedule_listing``: ``InvalidInput`` naming ``cursor`` for another)."""

    @abstractmethod
    def count_matching(self, tenant: str, query: ScheduleFilter) -> int:
        """How many schedules ``list_schedules`` would list for ``query`` over all its pages
        (in any order: the listing's selection, counted by the store)."""

    @abstractmethod
    def count_schedules(self) -> Mapping[str, int]:
        """Live schedules by status, over all tenants (for metrics)."""

    @abstractmethod
    def purge_expired(
        self, executions_before: datetime, schedules_before: datetime, limit: int
    ) -> tuple[int, int]:
        """Delete what retention no longer keeps, at most ``limit`` of each per call.

        Execution records that are final or skipped and finished before ``executions_before``;
        completed schedules and tombstones last changed before ``schedules_before``. Records in
        flight and schedules that can still fire are never touched. Returns how many execution
        records and schedules were deleted; a caller loops while either equals ``limit``.

        A backend that expires execution records by itself (MongoDB: a TTL index that follows
        the retention setting) leaves them to it and returns ``0`` for them.
        """

    @abstractmethod
    def count_tenant_schedules(self, tenant: str) -> int:
        """How many of the tenant's schedules can still fire: ``ACTIVE`` plus ``PAUSED``."""

    @abstractmethod
    def reserve_schedule_slot(
        self, reservation: SlotReservation, quota: int, now: datetime
    ) -> int | None:
        """Hold room for one more live schedule of the tenant, or say how many it has taken.

        The slots taken are the tenant's live schedules (``ACTIVE`` and ``PAUSED``) plus its
        reservations still pending (``shared.quota_rules.pending_slot``) of schedules not
        live, each schedule once. A reservation of a schedule that already takes a slot (a
        replace) is always held; another one only while fewer than ``quota`` are taken.
        Atomic against every other reservation of the tenant, from any process: of concurrent
        reservations, no more are held than the quota has room for, and none is refused while
        there is room. Returns ``None`` when held, else the slots taken.
        """

    @abstractmethod
    def release_schedule_slot(self, reservation: SlotReservation) -> None:
        """Give back a reservation whose create was not sent on queue 1 after all."""

    @abstractmethod
    def reseal_definitions(self) -> int:
        """Seal anew, with the first configured key, every stored definition sealed with another
        key or not sealed at all; returns how many were rewritten. A definition replaced
        meanwhile is left as its writer sealed it (with the first key too)."""
