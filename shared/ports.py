"""The ports: small interfaces between the domain and the outside world.

Every port has a production adapter (MongoDB, SQS, HTTP) and an embedded one (SQLite) in
``shared.adapters``. One contract test suite runs over all adapters of a port, so the docstrings
here are the specification both must meet.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar

from shared.definition_cache import DefinitionCache
from shared.errors import SchedulerError
from shared.formats import execution_cursor
from shared.formats import parse_execution_cursor as parse_execution_cursor
from shared.model import (
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
)
from shared.retry import Verdict
from shared.targets import DeliveryPayload
from shared.timeutil import UTC, utc_ms


class Clock(ABC):
    @abstractmethod
    def now(self) -> datetime:
        """The current instant, aware UTC, to the millisecond."""


class SystemClock(Clock):
    def now(self) -> datetime:
        return utc_ms(datetime.now(UTC))


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
    in case-folded order (``shared.schedule_listing.name_key``).
    """

    status: ScheduleStatus | None = None
    name_prefix: str | None = None
    tag: str | None = None
    next_before: datetime | None = None
    next_after: datetime | None = None
    search: str | None = None
    order: ScheduleOrder = ScheduleOrder.ID
    descending: bool = False


T = TypeVar("T")

# The arguments of ``apply_definition``: tenant, schedule id, revision, definition, next schedule
# time, accepted at.
DefinitionToApply = tuple[str, str, int, ScheduleDefinition, datetime | None, datetime]


class Advance(NamedTuple):
    """One schedule the poller moves on (``Store.advance_schedules``): the claimed schedule, its
    new ``next_schedule_time`` and ``occurrence_count``, and its ``sent_ahead`` times."""

    claimed: Schedule
    next_schedule_time: datetime | None
    occurrence_count: int
    sent_ahead: tuple[datetime, ...] = ()


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None


def execution_page(
    found: Sequence[Execution], limit: int, moment: Callable[[Execution], datetime | None]
) -> Page[Execution]:
    """The first ``limit`` records of ``found`` (read one past the limit, to learn whether
    more exist), with a cursor naming the last one's ``moment`` and occurrence id: what every
    store's records are ordered by, newest first (``parse_execution_cursor`` reads it back)."""
    items = list(found[:limit])
    at = moment(items[-1]) if items else None
    if len(found) <= limit or at is None:
        return Page(items)
    return Page(items, execution_cursor(at, items[-1].occurrence_id))


@dataclass(frozen=True)
class ApiKey:
    """An API key as stored: only its SHA-256 (``key_hash``, hex), never the key itself.

    ``key_id`` is the public handle of a key (for listing and revoking): a prefix of the hash.
    """

    key_hash: str
    tenant: str
    name: str
    created_at: datetime

    @property
    def key_id(self) -> str:
        return self.key_hash[:12]


@dataclass(frozen=True)
class IdempotencyRecord:
    """What a create answered for an ``Idempotency-Key``, kept until ``expires_at``.

    ``fingerprint`` identifies the request (method, path and body); a repeat with the same key and
    fingerprint gets the same answer, a repeat with another fingerprint is a conflict.
    """

    tenant: str
    key: str
    fingerprint: str
    schedule_id: str
    revision: int
    next_schedule_time: datetime | None
    timezone: str
    created_at: datetime
    expires_at: datetime


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

    def apply_definition(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_schedule_time: datetime | None,
        accepted_at: datetime,
    ) -> bool:
        """``apply_definitions`` of one."""
        return self.apply_definitions(
            [(tenant, schedule_id, revision, definition, next_schedule_time, accepted_at)]
        )[0]

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
    def apply_state(
        self,
        tenant: str,
        schedule_id: str,
        state_revision: int,
        status: ScheduleStatus,
        next_schedule_time: datetime | None,
        now: datetime,
    ) -> bool:
        """Pause, resume or delete, atomically, if ``state_revision`` is newer than the stored one.

        ``DELETED`` on an unknown id stores a tombstone (so a create still in flight on queue 1
        cannot land) and returns ``False``; on a tombstone it raises the tombstone's revision
        (a create accepted since the first delete cannot land either) and returns ``False``.
        Pausing or resuming an unknown or deleted schedule changes nothing and returns
        ``False``. Resume sets ``next_schedule_time`` as given. A pause records who paused
        (``PausedBy.USER``) and when; a resume clears that and the consecutive failures.
        """

    @abstractmethod
    def claim_due_schedules(
        self, horizon: datetime, now: datetime, limit: int, owner: str, lease_until: datetime
    ) -> list[Schedule]:
        """Claim at most ``limit`` active schedules with ``next_schedule_time <= horizon``.

        Earliest first; except that a claim following a full one may take the earliest of a part
        of the due schedules (MongoDB: a window of slices), so that concurrent callers take
        disjoint work, as long as the most overdue is claimed within a bounded number of
        claims. A claimed schedule is invisible to other claims until ``lease_until``
        or until the owner advances it; schedules whose lease expired (their poller died) are
        claimable again. Two concurrent callers never receive the same schedule.
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
        reservations still pending (``shared.store_rules.pending_slot``) of schedules not
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


class IdempotencyStore(ABC):
    """What the API answered to each ``Idempotency-Key``, keyed by ``(tenant, key)`` and kept
    until the record's ``expires_at``: a repeated create gets the same answer."""

    @abstractmethod
    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        """Store ``record`` unless a live one (``expires_at > now``) has its ``(tenant, key)``.

        Atomic: of concurrent saves of one key, exactly one wins. Returns the record in force and
        whether it is the one given (``True``) or one stored before (``False``). An expired
        record is replaced as if absent.
        """

    @abstractmethod
    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        """The live record of ``(tenant, key)``; ``None`` if there is none or it expired."""

    @abstractmethod
    def delete_idempotency_record(self, tenant: str, key: str, fingerprint: str) -> bool:
        """Forget a record, only if it still has ``fingerprint`` (undo a save whose create
        could not be enqueued). Returns whether a record was deleted."""


class ApiKeyStore(ABC):
    """The API keys issued by ``scheduler keys create``, keyed by their SHA-256: the key itself
    is never stored."""

    @abstractmethod
    def add_api_key(self, key: ApiKey) -> bool:
        """Store a key; ``False`` (and nothing changes) if one with that hash exists."""

    @abstractmethod
    def find_api_key(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256, if it exists (revoked keys are deleted, so never found)."""

    @abstractmethod
    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every stored key, or the tenant's, oldest first."""

    @abstractmethod
    def delete_api_key(self, key_id: str) -> int:
        """Revoke the keys whose ``key_id`` (hash prefix) is ``key_id``; returns how many.

        Anything but 8 to 64 lowercase hex digits (``store_rules.is_key_id``) revokes nothing:
        never "every key" for an empty prefix."""


@dataclass(frozen=True)
class StoredSigningSecret:
    """One of a tenant's signing secrets as stored: ``sealed`` is the secret sealed for its
    tenant (``shared.signing``); ``retires_at`` is when it stops signing (``None``: not set).
    The deployment's secret (``SCHEDULER_WEBHOOK_SECRET``) stands in a set, while it retires, as
    ``shared.signing.DEPLOYMENT``: nothing sealed, no creation time."""

    secret_id: str
    sealed: str
    created_at: datetime | None
    retires_at: datetime | None = None


@dataclass(frozen=True)
class SigningSecretSet:
    """A tenant's signing secrets, oldest first, at ``version`` (1 for the first set stored,
    one more at each change)."""

    tenant: str
    version: int
    secrets: tuple[StoredSigningSecret, ...]


class SigningSecretStore(ABC):
    """Each tenant's webhook signing secrets (``shared.signing`` decides what they are; the
    store keeps a tenant's set whole, sealed, and changes it by compare-and-set)."""

    @abstractmethod
    def get_signing_secrets(self, tenants: Collection[str]) -> dict[str, SigningSecretSet]:
        """The stored sets of ``tenants`` by tenant, in one read; a tenant with none is
        absent. Never another tenant's."""

    @abstractmethod
    def put_signing_secrets(self, secrets: SigningSecretSet) -> bool:
        """Store ``secrets`` if the tenant's stored set is at ``secrets.version - 1`` (none
        stored counts as 0): of two writers of the same version, exactly one wins. Returns
        whether it was stored; nothing changes when not."""


class ExecutionStore(ABC):
    """The lasting record of every occurrence, one record per ``(tenant, occurrence_id)``."""

    def begin_attempt(
        self, occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
    ) -> Execution | None:
        """``begin_attempts`` of one."""
        return self.begin_attempts([occurrence], owner, now, lease_until)[0]

    @abstractmethod
    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        """Atomically take the right to make the next attempt of each occurrence, in order.

        Creates the record (``RUNNING``, attempt 1) or moves a ``RETRYING``/``SKIPPED`` one, or a
        ``RUNNING`` one whose lease expired (its executor died), to ``RUNNING`` with one more
        attempt. ``None`` at a position when the occurrence is final (``SUCCEEDED``/``FAILED``),
        another executor holds a live lease, or an earlier position of the batch took it: the
        caller must not fire it. One write for the batch where the backend allows it.
        """

    @abstractmethod
    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        """Record how the attempt ended, if ``owner`` still holds it, and add it to the end of
        the record's ``attempt_log`` (which keeps the last ``KEPT_ATTEMPTS``), in the same
        write. Returns whether recorded."""

    @abstractmethod
    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        """Record occurrences as ``SKIPPED``, each with its reason.

        A record that exists is changed only while it is ``RETRYING``, or ``RUNNING`` with a
        lease that ended before ``now`` (its executor died); a live run, a succeeded, failed or
        skipped occurrence keeps its record. Returns how many records were written.

        ``superseded``: the occurrences were sent ahead of their time and a change, pause or
        delete of their schedule came after. The records this creates are marked
        ``superseded`` (not runs: ``list_executions`` shows them only when asked for
        ``SKIPPED``), and each schedule's ``superseded_count`` grows by as many, in the same
        call. A record that existed (a run that retried) is skipped but stays a run.
        """

    @abstractmethod
    def get_execution(self, tenant: str, occurrence_id: str) -> Execution | None:
        """One occurrence's record, with its ``attempt_log``; a record written before attempts
        were kept gives its last attempt from its own fields."""

    @abstractmethod
    def list_executions(
        self,
        tenant: str,
        schedule_id: str,
        limit: int,
        cursor: str | None,
        status: ExecutionStatus | None = None,
    ) -> Page[Execution]:
        """A schedule's records, newest scheduled time first: with ``status``, those in it
        (superseded ones too, for ``SKIPPED``); without, its runs: every record but the
        superseded. Each page costs what it lists (an index per selection), plus, without
        ``status``, the superseded records it passes over."""

    # -- dead letters: the occurrences that failed for good ------------------------------

    @abstractmethod
    def list_dead_letters(
        self,
        tenant: str,
        limit: int,
        cursor: str | None,
        schedule_ids: Collection[str] | None = None,
    ) -> Page[Execution]:
        """The tenant's dead letters: records ``FAILED`` and not discarded, the latest failure
        (``finished_at``) first; only those of ``schedule_ids`` when given (none if empty)."""

    @abstractmethod
    def reopen_dead_letter(
        self, tenant: str, occurrence_id: str, now: datetime
    ) -> Execution | None:
        """Give a dead letter one more attempt: ``FAILED`` (not discarded) becomes
        ``RETRYING``, due ``now``, so ``begin_attempt`` takes it (one attempt more); the last
        outcome stays until that attempt ends. Atomic: of concurrent reopens one wins. Returns
        the record as reopened; ``None`` if it is not a dead letter."""

    @abstractmethod
    def restore_dead_letter(self, reopened: Execution) -> bool:
        """Undo ``reopen_dead_letter`` (its message could not be sent): ``FAILED`` again, only
        while the record is ``RETRYING`` with no attempt begun since. Returns whether undone."""

    @abstractmethod
    def discard_dead_letter(self, tenant: str, occurrence_id: str, now: datetime) -> bool:
        """Take a dead letter off the list for good (it stays ``FAILED`` in the history, and
        can no longer be reopened). Returns whether it was a dead letter."""


class Store(ScheduleStore, ExecutionStore, IdempotencyStore, ApiKeyStore, SigningSecretStore):
    """Every store port over one backend: every store adapter implements this."""

    @abstractmethod
    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        """``finish_attempt`` for each, and ``record_run`` for each final outcome it recorded
        (a schedule whose failures reach its ``pause_after_failures`` pauses itself), in one
        write for the outcomes and one for the run counts where the backend allows it.

        Returns, in order, whether each outcome was recorded (``owner`` still held the attempt);
        an outcome that was not recorded is not counted on its schedule either. A settle that
        failed part-way and is tried again records and counts each outcome once (an adapter
        that writes them apart says ``True`` for those its failed try recorded).
        """


@dataclass(frozen=True)
class OutgoingMessage:
    body: str
    delay_seconds: float = 0.0


@dataclass(frozen=True)
class ReceivedMessage:
    message_id: str
    body: str
    receipt_handle: str
    receive_count: int
    sent_at: datetime | None = None


@dataclass(frozen=True)
class QueueDepth:
    visible: int
    in_flight: int
    delayed: int


class MessageTooLarge(SchedulerError):
    """A message over the queue's size limit: the queue refuses it, whenever it is sent."""

    def __init__(self, queue: str, size: int, limit: int) -> None:
        super().__init__(f"a message of {size} bytes is over the {limit}-byte limit of {queue!r}")
        self.size = size
        self.limit = limit


class MessageQueue(ABC):
    """A queue with SQS's semantics.

    A received message is invisible for its visibility timeout and comes back if it is not
    deleted; ``receive_count`` counts its deliveries; a delayed message is invisible until its
    delay passes; a message received more than the queue's ``max_receives`` goes to its
    dead-letter queue instead. Delivery is at least once; order is not guaranteed.
    """

    name: str

    @abstractmethod
    def send(self, messages: Sequence[OutgoingMessage]) -> None:
        """Enqueue messages (in batches as the backend allows); all or an exception.

        ``MessageTooLarge`` (and nothing sent) when one is over the queue's size limit.
        """

    @abstractmethod
    def receive(
        self, max_messages: int, wait_seconds: float, visibility_timeout: float
    ) -> list[ReceivedMessage]:
        """Up to ``max_messages`` visible messages, waiting at most ``wait_seconds`` for one."""

    @abstractmethod
    def delete(self, receipt_handles: Sequence[str]) -> None:
        """Remove received messages for good. Unknown or stale receipts are ignored."""

    @abstractmethod
    def change_visibility(self, receipt_handle: str, timeout_seconds: float) -> None:
        """Make a received message visible again ``timeout_seconds`` from now."""

    @abstractmethod
    def change_visibilities(self, changes: Sequence[tuple[str, float]]) -> None:
        """``change_visibility`` for each ``(receipt_handle, timeout_seconds)``, in as few
        requests as the backend allows. Unknown or stale receipts are ignored."""

    @abstractmethod
    def create(self) -> None:
        """Create the queue, and its link to the dead-letter queue, if missing (idempotent)."""

    @abstractmethod
    def depth(self) -> QueueDepth:
        """Approximate counts of visible, in-flight and delayed messages."""

    @abstractmethod
    def close(self) -> None:
        """Release the clients this adapter created."""


@dataclass(frozen=True)
class Queues:
    """The queues of the pipeline: mutations (queue 1), occurrences (queue 2), dead letters."""

    mutations: MessageQueue
    occurrences: MessageQueue
    dead_letters: MessageQueue

    def close(self) -> None:
        for queue in (self.mutations, self.occurrences, self.dead_letters):
            queue.close()


@dataclass(frozen=True)
class WebhookRequest:
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout_seconds: float
    # How much of the answer's body to give back whole in ``WebhookResponse.body`` (a token
    # endpoint's answer, a body a check reads); at most the sender's ``MAX_BODY_BYTES``.
    body_bytes: int = 0


@dataclass(frozen=True)
class WebhookResponse:
    status: int
    headers: Mapping[str, str]
    duration_ms: float
    # e.g. "HTTP/1.1 200 OK"
    status_line: str = ""
    # The first bytes of the body (as many as the sender was asked to keep), and whether the
    # body was longer.
    body_excerpt: bytes = b""
    body_truncated: bool = False
    # The first ``WebhookRequest.body_bytes`` of the body, and whether that was all of it.
    body: bytes = b""
    body_complete: bool = True


class WebhookSender(ABC):
    """Makes webhook calls on an event loop, many at once."""

    @abstractmethod
    async def send(self, request: WebhookRequest) -> WebhookResponse:
        """Make the call. Raises ``WebhookError`` for a timeout or connection failure."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""


class WebhookError(Exception):
    """The call produced no HTTP response: timeout, refused connection, refused target."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class Delivered:
    """How one attempt at a delivery target ended: the verdict, and what its record keeps."""

    verdict: Verdict
    finished_at: datetime
    duration_ms: float
    # The target's answer, if it gave one: an HTTP status and status line ("HTTP/1.1 200 OK"),
    # the start of the body as text, and whether the body was longer.
    status: int | None = None
    status_line: str | None = None
    excerpt: str | None = None
    truncated: bool = False


P = TypeVar("P", bound=DeliveryPayload)


class DeliveryTarget(ABC, Generic[P]):
    """Delivers occurrences to one kind of target (``shared.targets``: an HTTP webhook, an SQS
    queue, an SNS topic), on an event loop, many at once. One module per kind implements it
    (``shared.adapters.http_target``, ``sqs_target``, ``sns_target``);
    ``shared.adapters.targets.Targets`` hands each payload to the one of its kind."""

    @abstractmethod
    def destination(self, payload: P) -> str:
        """What deliveries in flight are counted by (``executor_calls_per_host``): a host, a
        queue, a topic."""

    @abstractmethod
    async def deliver(
        self, occurrence: Occurrence, payload: P, attempt: int, now: datetime, schedule_name: str
    ) -> Delivered:
        """Make attempt number ``attempt`` of ``occurrence`` (of the schedule named
        ``schedule_name``, for its placeholders), starting at ``now``. A failure of the target
        (no answer, a refused target, an answer that is not a success) is a verdict, never an
        exception."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""
