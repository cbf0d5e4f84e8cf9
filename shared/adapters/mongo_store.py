"""The production schedule and execution store on MongoDB (pymongo).

Documents mirror the SQLite adapter's rows: collection ``schedules`` keyed
``_id = "<tenant>/<schedule_id>"``, collection ``executions`` keyed
``_id = "<tenant>/<occurrence_id>"``, ``idempotency_keys`` keyed ``_id = "<tenant>/<key>"``,
``api_keys`` keyed by the key's SHA-256, ``schedule_slots`` (quota reservations) keyed by the
tenant. Every instant is a BSON date (milliseconds, UTC).

Every mutation is one guarded, atomic update: the filter states the condition under which the
change applies (a newer revision, the lease owner, a status), so concurrent workers never
read-then-write. Where an upsert's filter does not match an existing document, MongoDB tries to
insert a second document with the same ``_id`` and fails with ``DuplicateKeyError``: that is how
"exists but the guard refused" is told apart from "did not exist".

The hot paths work in batches, a constant number of commands per batch whatever its size
(``tests/integration/test_mongo_round_trips.py``): a claim, the advances, the executor's version
check, begin and settle. Each item of a batch keeps its own guard; which guards matched is read
back by a token that only that call writes (``claim_token``, ``advance_token``, ``begin_token``,
``finish_token``), and only when the matched count says that some did not.

No update filter uses ``$or``: where a change applies in several cases, each case is its own
guarded update (or the case is a ``$nor``, which it gets right). That is as atomic, and it keeps
the adapter right on nx-27017 (0.8.1), a wire server we test against, which applies an update
whose filter has ``$or`` to a document with another ``_id``.
"""

from __future__ import annotations

import json
import random
import re
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any
from urllib.parse import urlsplit

import pymongo
from bson import json_util
from pymongo import ASCENDING, DESCENDING, ReturnDocument, UpdateOne
from pymongo.collection import Collection
from pymongo.errors import (
    BulkWriteError,
    DuplicateKeyError,
    PyMongoError,
)

from shared.adapters.mongo.indexes import ensure_indexes, expire_executions
from shared.adapters.mongo.signing_secrets import MongoSigningSecrets
from shared.adapters.mongo.transient import transient as _transient
from shared.definition_cache import DefinitionCache, open_definition
from shared.errors import Transient
from shared.model import (
    KEPT_ATTEMPTS,
    Attempt,
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    PausedBy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    revision_at,
)
from shared.ports import (
    Advance,
    ApiKey,
    DefinitionToApply,
    IdempotencyRecord,
    Page,
    ScheduleFilter,
    ScheduleOrder,
    SlotReservation,
    Store,
    execution_page,
    parse_execution_cursor,
)
from shared.schedule_listing import (
    KEYLESS_LAST,
    Segment,
    name_key,
    ordered_page,
    searched_host,
    target_of,
)
from shared.secrets import SecretBox
from shared.store_rules import (
    StoredState,
    admit_to_quota,
    attempt_started,
    is_key_id,
    pending_slot,
    run_lateness_ms,
    state_change_source,
    status_by_next_time,
    takes_definition,
)
from shared.timeutil import UTC, from_epoch_ms, maybe, parse_iso, to_epoch_ms, utc_ms

Document = dict[str, Any]
_PUSHED_JSON = json_util.JSONOptions(tz_aware=True)

# How often a guarded change goes round its cases when the document changes between them (each
# round either applies it or finds it refused; a livelock needs endless concurrent mutations).
_ROUNDS = 8
# How often a claim looks again for candidates it lost to a concurrent claimer.
_CLAIM_ROUNDS = 3
# Pollers claim disjoint work without coordinating. Each schedule carries a slice, a hash of its
# key; a poller that is behind (its last claim came back full) claims from one window of
# consecutive slices, the next window at each claim, and every ``_WHOLE_EVERY``-th claim from
# all of them: the most overdue schedule (or one stored before slices) waits at most that many
# claims of any poller. A poller that lost candidates to another jumps to a window at random.
# The slices are cut into up to ``_WINDOWS`` windows: fewer, wider ones while a window holds
# less than a claim takes (each such claim costs a second round, from all slices).
SLICES = 64
_WINDOWS = 8
_WHOLE_EVERY = _WINDOWS + 1
_DUPLICATE_KEY = 11000
# A new attempt of an occurrence that was superseded makes its record a run again.
_NOT_SUPERSEDED: Document = {"superseded": ""}
# How many of its latest counted occurrences a schedule remembers, so that a settle tried again
# never counts one twice: more than are settled while one settle is being retried.
_COUNTED = 16

# A tenant's quota reservations are one document: those pending (``reserved``, ``held`` of
# them), an upper bound of the slots taken (``taken``: counted exactly when written whole, then
# one more for each reservation added), and a ``version`` that every change raises. While the
# bound is under the quota and fewer than _SLOTS_HELD are held, a reservation is one guarded
# update; otherwise the slots are counted anew and the whole document written, guarded by its
# version, in up to _SLOT_ROUNDS rounds (each applies one writer's change).
_SLOTS_HELD = 64
_SLOT_ROUNDS = 64

_DELETED = ScheduleStatus.DELETED.value
_ACTIVE = ScheduleStatus.ACTIVE.value
_PAUSED = ScheduleStatus.PAUSED.value
_COMPLETED = ScheduleStatus.COMPLETED.value
_ORDER_FIELDS = {
    ScheduleOrder.ID: "schedule_id",
    ScheduleOrder.NAME: "name_key",
    ScheduleOrder.NEXT_TIME: "next_schedule_time",
    ScheduleOrder.CREATED: "created_at",
}


def _key(tenant: str, name: str) -> str:
    """``<tenant>/<name>``, with ``%`` and ``/`` escaped in the tenant so no two keys collide."""
    return f"{tenant.replace('%', '%25').replace('/', '%2F')}/{name}"


def _instant(value: datetime | str | None) -> datetime | None:
    """A stored BSON date as aware UTC; a client without ``tz_aware`` hands back naive UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        # nx-27017 0.8.1 (a wire server we test against) stores a date written by an update
        # operator as naive ISO text in UTC; MongoDB itself always answers a datetime.
        value = parse_iso(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return utc_ms(value)


def schedule_slice(key: str) -> int:
    """The slice of a schedule's key: the same in every process (not Python's salted hash)."""
    return zlib.crc32(key.encode()) % SLICES


@dataclass
class _ClaimCursor:
    """Where a poller (one owner) claims next; see ``SLICES``."""

    behind: bool = False
    windows: int = _WINDOWS
    window: int = field(default_factory=lambda: random.randrange(_WINDOWS))
    claims: int = 0
    # Claim tokens this owner stamped on schedules it never read back (the store failed
    # between the update and the read), with the ids they were stamped on.
    unread: dict[str, list[str]] = field(default_factory=dict)

    def next_window(self) -> tuple[int, int] | None:
        """The slices of this claim's first round; ``None``: all, earliest first."""
        if not self.behind:
            return None
        self.claims += 1
        if self.claims % _WHOLE_EVERY == 0:
            return None
        self.window = (self.window + 1) % self.windows
        return self._slices()

    def jump(self) -> tuple[int, int]:
        self.window = random.randrange(self.windows)
        return self._slices()

    def fitted(self, filled: bool) -> None:
        """Wider windows after one that held less than the claim wanted; narrower after one
        that filled it."""
        self.windows = min(_WINDOWS, self.windows * 2) if filled else max(1, self.windows // 2)
        self.window %= self.windows

    def _slices(self) -> tuple[int, int]:
        width = SLICES // self.windows
        return self.window * width, (self.window + 1) * width


class MongoStore(MongoSigningSecrets, Store):
    def __init__(
        self,
        client: pymongo.MongoClient[Document],
        database_name: str,
        owns_client: bool = False,
        *,
        secrets: SecretBox,
        execution_retention: timedelta | None = None,
    ) -> None:
        """``secrets`` seals each payload's secret parts in the ``definition`` field.
        ``execution_retention``: finished records expire that long after they became final
        (a TTL index, made or changed by ``ensure_indexes``); ``None`` keeps them."""
        self.client = client
        self.secrets = secrets
        self.owns_client = owns_client
        self.execution_retention = execution_retention
        database = client[database_name]
        self.schedules: Collection[Document] = database["schedules"]
        self.executions: Collection[Document] = database["executions"]
        self.idempotency_keys: Collection[Document] = database["idempotency_keys"]
        self.api_keys: Collection[Document] = database["api_keys"]
        self.migrations: Collection[Document] = database["migrations"]
        self.schedule_slots: Collection[Document] = database["schedule_slots"]
        self.signing_secrets: Collection[Document] = database["signing_secrets"]
        self._claim_cursors: dict[str, _ClaimCursor] = {}

    @classmethod
    def from_url(
        cls,
        url: str,
        database_name: str,
        *,
        secrets: SecretBox,
        execution_retention: timedelta | None = None,
    ) -> MongoStore:
        """A store on its own client (closed by ``close()``); connects lazily, fails fast.

        Safe on a replica set by default: writes acknowledged by a majority (a write the
        primary acknowledged alone can be rolled back by an election) and reads from the
        primary (a secondary may lag, and a claim or a version check must see the latest
        write). Short timeouts, so an unreachable server becomes ``Transient`` in seconds and the
        components try again at once (``shared.backoff``): a server selection re-checks the
        server every 500 ms while it waits, so the first try after an outage goes through
        within half a second (docs/operations.md, "When the store is unreachable"). The same
        options in the URL win (``w=``, ``readPreference=``, ``…TimeoutMS=``).
        """
        query = urlsplit(url).query.lower()
        defaults: dict[str, Any] = {
            name: value
            for name, value in (
                ("serverSelectionTimeoutMS", 3000),
                ("connectTimeoutMS", 5000),
                ("w", "majority"),
                ("readPreference", "primary"),
            )
            if not re.search(rf"(^|&){name.lower()}=", query)
        }
        client: pymongo.MongoClient[Document] = pymongo.MongoClient(
            url, tz_aware=True, appname="scheduler", **defaults
        )
        return cls(
            client,
            database_name,
            owns_client=True,
            secrets=secrets,
            execution_retention=execution_retention,
        )

    def ensure_indexes(self) -> None:
        with _transient("ensure_indexes"):
            ensure_indexes(self.schedules.database, self._target_of)
            if self.execution_retention is not None:
                expire_executions(
                    self.schedules.database, int(self.execution_retention.total_seconds())
                )

    def _target_of(self, definition: str) -> str:
        return target_of(self.secrets.open(json.loads(definition)).payload.location)

    def close(self) -> None:
        if self.owns_client:
            self.client.close()

    def ping(self) -> None:
        with _transient("ping"):
            self.client.admin.command("ping")

    # -- schedules -----------------------------------------------------------------------

    def get_schedule(self, tenant: str, schedule_id: str) -> Schedule | None:
        with _transient("get_schedule"):
            document = self.schedules.find_one({"_id": _key(tenant, schedule_id)})
        return None if document is None else _schedule(document, self.secrets)

    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        if not keys:
            return {}
        ids = list(dict.fromkeys(_key(tenant, schedule_id) for tenant, schedule_id in keys))
        with _transient("get_schedules"):
            documents = list(self.schedules.find({"_id": {"$in": ids}}))
        schedules = (_schedule(document, self.secrets, cache) for document in documents)
        return {(schedule.tenant, schedule.schedule_id): schedule for schedule in schedules}

    def apply_definition(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_schedule_time: datetime | None,
        accepted_at: datetime,
    ) -> bool:
        live, paused = self._definition_guards(
            tenant, schedule_id, revision, definition, next_schedule_time, accepted_at
        )
        key = live[0]["_id"]
        with _transient("apply_definition"):
            # Twice at most: an insert of the same id can race the upsert (MongoDB retries
            # such an upsert itself only when its filter names the _id alone), and a pause or
            # resume can move the schedule between the two guards. The second time round the
            # document exists, so only such a move again, unlikely, ends in ``Transient``.
            for _ in range(2):
                try:
                    self.schedules.update_one(*live, upsert=True)
                    return True
                except DuplicateKeyError:
                    pass
                if self.schedules.update_one(*paused).matched_count:
                    return True
                current = self.schedules.find_one(
                    {"_id": key}, {"revision": 1, "state_revision": 1, "status": 1}
                )
                if current is not None and not takes_definition(
                    current["revision"],
                    ScheduleStatus(current["status"]),
                    current["state_revision"],
                    revision,
                ):
                    return False
        raise Transient(f"apply_definition {key}: changed by another writer, try again")

    def apply_definitions(self, definitions: Sequence[DefinitionToApply]) -> list[bool]:
        # One insert_many for the batch: new schedules, the common case (a create, a seed). Those
        # whose id is taken (duplicate keys) get the guarded upserts of apply_definition, one at
        # a time.
        guards = [self._definition_guards(*arguments) for arguments in definitions]
        keys = [live[0]["_id"] for live, _ in guards]
        if len(set(keys)) < len(keys):
            return super().apply_definitions(definitions)  # in turn, as the port says
        taken: set[int] = set()
        with _transient("apply_definitions"):
            try:
                if guards:
                    self.schedules.insert_many(
                        [
                            {"_id": key, **change["$setOnInsert"], **change["$set"]}
                            for key, ((_, change), _) in zip(keys, guards, strict=True)
                        ],
                        ordered=False,
                    )
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors", [])
                if any(error.get("code") != _DUPLICATE_KEY for error in errors):
                    raise
                taken = {error["index"] for error in errors}
        return [
            index not in taken or self.apply_definition(*arguments)
            for index, arguments in enumerate(definitions)
        ]

    def _definition_guards(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_schedule_time: datetime | None,
        accepted_at: datetime,
    ) -> tuple[tuple[Document, Document], tuple[Document, Document]]:
        """The guarded upsert of ``apply_definition`` and the guarded update of its paused case:
        filter and change of each.

        The upsert inserts a new schedule, and replaces a stored one when the revision is newer
        and, for a tombstone, newer than the delete. Any other stored schedule refuses it, and
        the insert the upsert falls back to fails on the _id: a DuplicateKeyError. A paused one
        refuses it too: a replace keeps the pause, so it has its own guarded update. (On
        MongoDB an update pipeline could keep the pause in the same upsert, a $cond on
        $status; nx-27017 0.8.1, a wire server we test against, has no pipeline updates, so the
        two guards work everywhere; a paused replace costs one command more.)
        """
        key = _key(tenant, schedule_id)
        accepted = utc_ms(accepted_at)
        changes: Document = {
            "revision": revision,
            # JSON text, as in the SQLite adapter: client-chosen keys (metadata, headers, query
            # parameters, the raw request) may contain '.' or start with '$', which MongoDB
            # restricts in stored field names.
            "definition": json.dumps(self.secrets.seal(definition), separators=(",", ":")),
            "name": definition.name,
            "tags": list(definition.tags),
            "target": target_of(definition.payload.location),
            "name_key": name_key(definition.name),
            "next_schedule_time": maybe(utc_ms, next_schedule_time),
            "slice": schedule_slice(key),
            "accepted_at": accepted,
            "updated_at": accepted,
            "occurrence_count": 0,
            # What was sent for an older revision does not fire.
            "sent_ahead": [],
            "lease_owner": None,
            "lease_until": None,
            # Beside the definition, for the guard of a schedule pausing itself (_run_count).
            "pause_after_failures": definition.pause_after_failures,
        }
        on_insert: Document = {
            "tenant": tenant,
            "schedule_id": schedule_id,
            "state_revision": 0,
            "created_at": accepted,
            "run_count": 0,
            "failure_count": 0,
            "consecutive_failures": 0,
            "last_run_at": None,
            "last_status": None,
        }
        newer = {"$lt": revision}
        live = {**changes, "status": status_by_next_time(next_schedule_time).value}
        replace_live = {
            "_id": key,
            "revision": newer,
            "status": {"$ne": _PAUSED},
            "$nor": [{"status": _DELETED, "state_revision": {"$gte": revision}}],
        }
        replace_paused = {"_id": key, "revision": newer, "status": _PAUSED}
        return (
            (replace_live, {"$set": live, "$setOnInsert": on_insert}),
            (replace_paused, {"$set": changes}),
        )

    def apply_state(
        self,
        tenant: str,
        schedule_id: str,
        state_revision: int,
        status: ScheduleStatus,
        next_schedule_time: datetime | None,
        now: datetime,
    ) -> bool:
        key = _key(tenant, schedule_id)
        at = utc_ms(now)
        newer = {"$lt": state_revision}
        common: Document = {
            "state_revision": state_revision,
            "updated_at": at,
            "lease_owner": None,
            "lease_until": None,
        }
        with _transient("apply_state"):
            if status is ScheduleStatus.DELETED:
                try:
                    result = self.schedules.update_one(
                        {"_id": key, "state_revision": newer, "status": {"$ne": _DELETED}},
                        {
                            "$set": {
                                **common,
                                "status": _DELETED,
                                "next_schedule_time": None,
                                "paused_by": None,
                                "paused_at": None,
                            },
                            # Unknown id: a tombstone, so a create still on queue 1 cannot land.
                            "$setOnInsert": {
                                "tenant": tenant,
                                "schedule_id": schedule_id,
                                "revision": 0,
                                "definition": None,
                                "name": "",
                                "tags": [],
                                "target": "",
                                "name_key": "",
                                "accepted_at": at,
                                "created_at": at,
                                "occurrence_count": 0,
                                "run_count": 0,
                                "failure_count": 0,
                                "consecutive_failures": 0,
                                "last_run_at": None,
                                "last_status": None,
                            },
                        },
                        upsert=True,
                    )
                except DuplicateKeyError:
                    # Already deleted (then a newer tombstone, so a create accepted since the
                    # first delete cannot land either), or a newer state is stored.
                    self.schedules.update_one(
                        {"_id": key, "state_revision": newer, "status": _DELETED},
                        {"$set": {"state_revision": state_revision, "updated_at": at}},
                    )
                    return False
                return bool(result.matched_count)
            source = state_change_source(status)
            if status is ScheduleStatus.PAUSED:
                common["paused_by"] = PausedBy.USER.value
                common["paused_at"] = at
            else:
                # A resume clears who paused and the failure streak.
                common["next_schedule_time"] = maybe(utc_ms, next_schedule_time)
                common["paused_by"] = None
                common["paused_at"] = None
                common["consecutive_failures"] = 0
                status = status_by_next_time(next_schedule_time)
            result = self.schedules.update_one(
                {"_id": key, "state_revision": newer, "status": source.value},
                {"$set": {**common, "status": status.value}},
            )
            return bool(result.matched_count)

    def claim_due_schedules(
        self, horizon: datetime, now: datetime, limit: int, owner: str, lease_until: datetime
    ) -> list[Schedule]:
        # A constant number of round trips per batch, whatever its size: the candidates' ids
        # from the (status, next_schedule_time, slice, lease_until) index, one guarded
        # update_many that stamps a fresh claim token on those still free, and one read of what
        # carries the token (by _id, so it stays an index lookup). Of concurrent claimers, each
        # candidate goes to one: the update's filter repeats the whole condition. A claimer that
        # lost candidates to another goes round again, in another window of slices (SLICES),
        # and the next read no longer sees what the other holds.
        due: Document = {"status": _ACTIVE, "next_schedule_time": {"$lte": utc_ms(horizon)}}
        expired: Document = {"lease_until": {"$lt": utc_ms(now)}}
        leased = utc_ms(lease_until)
        cursor = self._claim_cursors.setdefault(owner, _ClaimCursor())
        window = cursor.next_window()
        claimed: list[Schedule] = []
        with _transient("claim_due_schedules"):
            if cursor.unread:
                reclaimed = self._reclaim_unread(cursor, due, owner, leased)
                claimed += [_schedule(document, self.secrets) for document in reclaimed]
            for _ in range(_CLAIM_ROUNDS):
                wanted = limit - len(claimed)
                if wanted <= 0:
                    break
                free: Document = {"$or": [{"lease_until": None}, expired]}
                selector: Document = {**due, **free}
                if window is not None:
                    # In $and: the same to MongoDB, and nx-27017 0.8.1 drops a range that
                    # stands beside an $or.
                    in_window = {"slice": {"$gte": window[0], "$lt": window[1]}}
                    selector = {**due, "$and": [free, in_window]}
                candidates = list(
                    self.schedules.find(selector, {"_id": 1, "lease_until": 1})
                    .sort("next_schedule_time", ASCENDING)
                    .limit(wanted)
                )
                if not candidates and window is None:
                    break
                if candidates:
                    won = self._stamp_claims(candidates, due, expired, owner, leased)
                    claimed += [_schedule(document, self.secrets) for document in won]
                    if len(won) < len(candidates):
                        window = cursor.jump()
                        continue
                if window is not None:
                    cursor.fitted(len(candidates) == wanted)
                if len(candidates) == wanted or window is None:
                    break
                # This window has no more due: the rest from all slices.
                window = None
        cursor.behind = len(claimed) >= limit
        claimed.sort(key=_due_order)
        return claimed

    def _stamp_claims(
        self,
        candidates: Sequence[Document],
        due: Document,
        expired: Document,
        owner: str,
        leased: datetime,
    ) -> list[Document]:
        """Lease the candidates still free to ``owner``; the documents this call leased."""
        token = uuid.uuid4().hex
        stamp = {"$set": {"lease_owner": owner, "lease_until": leased, "claim_token": token}}
        # Free means no lease, or one that ran out (its poller died): two guarded cases, as no
        # update filter here uses $or (see the module's docstring).
        free = [c["_id"] for c in candidates if c.get("lease_until") is None]
        lapsed = [c["_id"] for c in candidates if c.get("lease_until") is not None]
        ids = [c["_id"] for c in candidates]
        try:
            for chosen, lease_state in ((free, {"lease_until": None}), (lapsed, expired)):
                if chosen:
                    self.schedules.update_many(
                        {"_id": {"$in": chosen}, **due, **lease_state}, stamp
                    )
            return list(self.schedules.find({"_id": {"$in": ids}, "claim_token": token}))
        except PyMongoError:
            # An update may have been applied without its answer: what it leased is taken
            # back by this owner's next claim, not left until the lease ends.
            self._claim_cursors[owner].unread[token] = ids
            raise

    def _reclaim_unread(
        self, cursor: _ClaimCursor, due: Document, owner: str, leased: datetime
    ) -> list[Document]:
        """The schedules an earlier claim of ``owner`` leased but never read back (see
        ``_stamp_claims``), still leased to it and due: leased again under a new token, read.
        Advanced or claimed by another since, a schedule carries another owner or token."""
        unread, cursor.unread = cursor.unread, {}
        ids = list(dict.fromkeys(id_ for stamped in unread.values() for id_ in stamped))
        token = uuid.uuid4().hex
        try:
            self.schedules.update_many(
                {
                    "_id": {"$in": ids},
                    "claim_token": {"$in": list(unread)},
                    "lease_owner": owner,
                    **due,
                },
                {"$set": {"lease_until": leased, "claim_token": token}},
            )
            return list(self.schedules.find({"_id": {"$in": ids}, "claim_token": token}))
        except PyMongoError:
            cursor.unread = {**unread, token: ids}
            raise

    def advance_schedule(
        self,
        claimed: Schedule,
        owner: str,
        next_schedule_time: datetime | None,
        occurrence_count: int,
        now: datetime,
        sent_ahead: Sequence[datetime] = (),
    ) -> bool:
        return self.advance_schedules(
            [Advance(claimed, next_schedule_time, occurrence_count, tuple(sent_ahead))], owner, now
        )[0]

    def advance_schedules(
        self, advances: Sequence[Advance], owner: str, now: datetime
    ) -> list[bool]:
        # One bulk_write, each update under its own guard. Which guards matched: all of them
        # when the matched count says so (the common case); otherwise one read of the token
        # that only the updates of this call wrote.
        if not advances:
            return []
        token = uuid.uuid4().hex
        updates = [
            UpdateOne(
                {
                    "_id": _key(claimed.tenant, claimed.schedule_id),
                    "lease_owner": owner,
                    "revision": claimed.revision,
                    "state_revision": claimed.state_revision,
                    "status": _ACTIVE,
                },
                {
                    "$set": {
                        "next_schedule_time": maybe(utc_ms, next_time),
                        "occurrence_count": count,
                        "status": status_by_next_time(next_time).value,
                        "sent_ahead": [utc_ms(moment) for moment in ahead],
                        "updated_at": utc_ms(now),
                        "lease_owner": None,
                        "lease_until": None,
                        "advance_token": token,
                    }
                },
            )
            for claimed, next_time, count, ahead in advances
        ]
        keys = [_key(advance.claimed.tenant, advance.claimed.schedule_id) for advance in advances]
        with _transient("advance_schedules"):
            result = self.schedules.bulk_write(updates, ordered=False)
            if result.matched_count == len(set(keys)) == len(keys):
                return [True] * len(keys)
            applied = {
                document["_id"]
                for document in self.schedules.find(
                    {"_id": {"$in": keys}, "advance_token": token}, {"_id": 1}
                )
            }
        # A schedule named twice in one call is advanced once: by its first entry.
        first = {key: index for index, key in reversed(list(enumerate(keys)))}
        return [key in applied and first[key] == index for index, key in enumerate(keys)]

    def record_run(self, tenant: str, schedule_id: str, succeeded: bool, at: datetime) -> None:
        updates = [UpdateOne(*_run_count(tenant, schedule_id, succeeded, at))]
        if not succeeded:
            updates.append(UpdateOne(*_pause_on_failures(tenant, schedule_id, at)))
        with _transient("record_run"):
            self.schedules.bulk_write(updates)

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        if query.status is ScheduleStatus.DELETED:
            return Page([])  # tombstones are never listed
        return ordered_page(query, limit, cursor, lambda segment: self._segment(tenant, segment))

    def _segment(self, tenant: str, segment: Segment) -> list[Schedule]:
        query = segment.query
        selector: Document = {
            "tenant": tenant,
            "status": query.status.value if query.status is not None else {"$ne": _DELETED},
        }
        if query.name_prefix:
            selector["name"] = {"$regex": "^" + re.escape(query.name_prefix)}
        if query.tag:
            # ``$in`` rather than plain equality: the same on MongoDB, and nx-27017 0.8.1 answers
            # nothing to an equality on an array field once ``{tenant, tags}`` is indexed.
            selector["tags"] = {"$in": [query.tag]}
        window: Document = {}
        if query.next_after is not None:
            window["$gte"] = utc_ms(query.next_after)
        if query.next_before is not None:
            window["$lte"] = utc_ms(query.next_before)
        if window:
            selector["next_schedule_time"] = window
        field = _ORDER_FIELDS[query.order]
        if query.order in KEYLESS_LAST:
            # At the top of the filter, not in its $and: nx-27017 0.8.1 (a wire server we test
            # against) misses explicit nulls there.
            if segment.keyless and field in selector:
                return []  # a window of times holds no schedule without one
            keyed = {**selector.get(field, {}), "$ne": None}
            selector[field] = None if segment.keyless else keyed
        either: list[Document] = []
        text = (query.search or "").strip()
        if text:
            host = searched_host(text)
            either.append(
                {
                    "$or": [
                        {"name_key": {"$regex": re.escape(name_key(text))}},
                        {"tags": {"$in": [text]}},
                        *([{"target": {"$regex": re.escape(host)}}] if host else []),
                    ]
                }
            )
        direction = DESCENDING if query.descending else ASCENDING
        beyond = "$lt" if query.descending else "$gt"
        by_id = segment.keyless or query.order is ScheduleOrder.ID
        after = segment.after
        if after is not None and by_id:
            selector["schedule_id"] = {beyond: after.schedule_id}
        elif after is not None:
            either.append(
                {
                    "$or": [
                        {field: {beyond: after.key}},
                        {field: after.key, "schedule_id": {beyond: after.schedule_id}},
                    ]
                }
            )
        if either:
            selector["$and"] = either
        order = [("schedule_id", direction)]
        if not by_id:
            order.insert(0, (field, direction))
        with _transient("list_schedules"):
            documents = list(self.schedules.find(selector).sort(order).limit(segment.limit))
        return [_schedule(document, self.secrets) for document in documents]

    def count_schedules(self) -> Mapping[str, int]:
        with _transient("count_schedules"):
            groups = self.schedules.aggregate(
                [
                    {"$match": {"status": {"$ne": _DELETED}}},
                    {"$group": {"_id": "$status", "n": {"$sum": 1}}},
                ]
            )
            return {group["_id"]: group["n"] for group in groups}

    def purge_expired(
        self, executions_before: datetime, schedules_before: datetime, limit: int
    ) -> tuple[int, int]:
        # Execution records expire by the TTL index on final_at (``ensure_indexes``): MongoDB
        # deletes them as they age, which no sweep of bounded batches keeps up with at scale.
        # Schedules are purged here: one status at a time, by equality (nx-27017 0.8.1 misses
        # dates written by update operators when the same filter has ``$in``). delete_many has
        # no limit, so pick the oldest ids first; the status in the delete keeps a schedule
        # that changed meanwhile.
        deleted = 0
        with _transient("purge_expired"):
            for status in (_COMPLETED, _DELETED):
                ids = [
                    document["_id"]
                    for document in self.schedules.find(
                        {"status": status, "updated_at": {"$lt": utc_ms(schedules_before)}},
                        {"_id": 1},
                    )
                    .sort("updated_at", ASCENDING)
                    .limit(limit - deleted)
                ]
                if ids:
                    result = self.schedules.delete_many({"_id": {"$in": ids}, "status": status})
                    deleted += result.deleted_count
                if deleted >= limit:
                    break
        return 0, deleted

    def count_tenant_schedules(self, tenant: str) -> int:
        with _transient("count_tenant_schedules"):
            return self.schedules.count_documents(
                {"tenant": tenant, "status": {"$in": [_ACTIVE, _PAUSED]}}
            )

    def reserve_schedule_slot(
        self, reservation: SlotReservation, quota: int, now: datetime
    ) -> int | None:
        entry = _slot_entry(reservation)
        with _transient("reserve_schedule_slot"):
            added = self.schedule_slots.update_one(
                {"_id": reservation.tenant, "taken": {"$lt": quota}, "held": {"$lt": _SLOTS_HELD}},
                {"$push": {"reserved": entry}, "$inc": {"taken": 1, "held": 1, "version": 1}},
            )
            if added.matched_count:
                return None
            for _ in range(_SLOT_ROUNDS):
                decided, taken = self._recount_slots(reservation, entry, quota, now)
                if decided:
                    return taken
        raise Transient(
            f"reserve_schedule_slot {reservation.tenant}: changed by other writers, try again"
        )

    def _recount_slots(
        self, reservation: SlotReservation, entry: str, quota: int, now: datetime
    ) -> tuple[bool, int | None]:
        """One round: whether it decided (else another writer changed the document
        meanwhile), and ``reserve_schedule_slot``'s answer."""
        tenant = reservation.tenant
        document = self.schedule_slots.find_one({"_id": tenant})
        held = [_slot(tenant, item) for item in (document["reserved"] if document else [])]
        ids = sorted({reservation.schedule_id, *(item.schedule_id for item in held)})
        # The reserved schedules in one read, and the other live ones counted apart: a create
        # applied between the two reads is counted once either way.
        states = {
            found["schedule_id"]: StoredState(
                ScheduleStatus(found["status"]), found["revision"], found["state_revision"]
            )
            for found in self.schedules.find(
                {"tenant": tenant, "schedule_id": {"$in": ids}},
                {"schedule_id": 1, "status": 1, "revision": 1, "state_revision": 1},
            )
        }
        kept = [
            item
            for item in held
            if pending_slot(item.revision, item.expires_at, states.get(item.schedule_id), now)
        ]
        live_elsewhere = self.schedules.count_documents(
            {"tenant": tenant, "status": {"$in": [_ACTIVE, _PAUSED]}, "schedule_id": {"$nin": ids}}
        )
        admitted, taken = admit_to_quota(
            reservation.schedule_id,
            states,
            {item.schedule_id for item in kept},
            live_elsewhere,
            quota,
        )
        if not admitted:
            return True, taken
        reserved = [*map(_slot_entry, kept), entry]
        fields = {"reserved": reserved, "held": len(reserved), "taken": taken}
        if document is None:
            try:
                self.schedule_slots.insert_one({"_id": tenant, "version": 1, **fields})
            except DuplicateKeyError:
                return False, None
            return True, None
        written = self.schedule_slots.update_one(
            {"_id": tenant, "version": document["version"]},
            {"$set": fields, "$inc": {"version": 1}},
        )
        return bool(written.matched_count), None

    def release_schedule_slot(self, reservation: SlotReservation) -> None:
        entry = _slot_entry(reservation)
        with _transient("release_schedule_slot"):
            # ``taken`` stays: an upper bound still, counted anew when it reaches the quota.
            self.schedule_slots.update_one(
                {"_id": reservation.tenant, "reserved": entry},
                {"$pull": {"reserved": entry}, "$inc": {"held": -1, "version": 1}},
            )

    def reseal_definitions(self) -> int:
        resealed = 0
        with _transient("reseal_definitions"):
            stored = self.schedules.find({"definition": {"$ne": None}}, {"definition": 1})
            for document in stored:
                text = self.secrets.resealed(document["definition"])
                if text is not None:
                    result = self.schedules.update_one(
                        {"_id": document["_id"], "definition": document["definition"]},
                        {"$set": {"definition": text}},
                    )
                    resealed += result.modified_count
        return resealed

    # -- idempotency keys ----------------------------------------------------------------

    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        key = _key(record.tenant, record.key)
        document: Document = {
            "_id": key,
            "tenant": record.tenant,
            "key": record.key,
            "fingerprint": record.fingerprint,
            "schedule_id": record.schedule_id,
            "revision": record.revision,
            "next_schedule_time": maybe(utc_ms, record.next_schedule_time),
            "timezone": record.timezone,
            "created_at": utc_ms(record.created_at),
            "expires_at": utc_ms(record.expires_at),
        }
        # One guarded upsert: a new key is inserted and an expired record replaced (of
        # concurrent savers one gets through); a live record refuses it, and the insert the
        # upsert falls back to fails on the _id: a DuplicateKeyError, then the live one answers.
        expired = {"_id": key, "expires_at": {"$lte": utc_ms(now)}}
        with _transient("save_idempotency_record"):
            # Twice at most: the live record can be deleted between the upsert and the read
            # (its create could not be enqueued).
            for _ in range(2):
                try:
                    self.idempotency_keys.replace_one(expired, document, upsert=True)
                    return _idempotency(document), True
                except DuplicateKeyError:
                    pass
                current = self.idempotency_keys.find_one({"_id": key})
                if current is not None:
                    return _idempotency(current), False
        raise Transient(f"save_idempotency_record {key}: changed by another writer, try again")

    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        with _transient("get_idempotency_record"):
            document = self.idempotency_keys.find_one(
                {"_id": _key(tenant, key), "expires_at": {"$gt": utc_ms(now)}}
            )
        return None if document is None else _idempotency(document)

    def delete_idempotency_record(self, tenant: str, key: str, fingerprint: str) -> bool:
        with _transient("delete_idempotency_record"):
            result = self.idempotency_keys.delete_one(
                {"_id": _key(tenant, key), "fingerprint": fingerprint}
            )
        return result.deleted_count == 1

    # -- API keys ------------------------------------------------------------------------

    def add_api_key(self, key: ApiKey) -> bool:
        with _transient("add_api_key"):
            try:
                self.api_keys.insert_one(
                    {
                        "_id": key.key_hash,
                        "tenant": key.tenant,
                        "name": key.name,
                        "created_at": utc_ms(key.created_at),
                    }
                )
            except DuplicateKeyError:
                return False
        return True

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with _transient("find_api_key"):
            document = self.api_keys.find_one({"_id": key_hash})
        return None if document is None else _api_key(document)

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        selector: Document = {} if tenant is None else {"tenant": tenant}
        with _transient("list_api_keys"):
            documents = list(self.api_keys.find(selector))
        keys = [_api_key(document) for document in documents]
        return sorted(keys, key=lambda key: (key.created_at, key.key_hash))

    def delete_api_key(self, key_id: str) -> int:
        if not is_key_id(key_id):
            return 0
        with _transient("delete_api_key"):
            result = self.api_keys.delete_many({"_id": {"$regex": f"^{key_id}"}})
        return result.deleted_count

    # -- executions ----------------------------------------------------------------------

    def begin_attempt(
        self, occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
    ) -> Execution | None:
        key = _key(occurrence.tenant, occurrence.occurrence_id)
        started = utc_ms(now)
        attempt: Document = {
            "status": "running",
            "revision": occurrence.revision,
            "started_at": started,
            "lease_owner": owner,
            "lease_until": utc_ms(lease_until),
            "next_attempt_at": None,
            "final_at": None,
        }
        with _transient("begin_attempt"):
            for _ in range(_ROUNDS):
                # The first delivery of an occurrence, the common case: a new record.
                record = _first_attempt(occurrence, attempt)
                try:
                    self.executions.insert_one(record)
                    return _execution(record)
                except DuplicateKeyError:
                    pass
                # A retry is due or was skipped; or the executor that ran it died (its lease
                # ran out without a finish). The previous attempt's outcome fields stay.
                for guard in (
                    {"status": {"$in": ["retrying", "skipped"]}},
                    {"status": "running", "lease_until": {"$lt": started}},
                ):
                    document = self.executions.find_one_and_update(
                        {"_id": key, **guard},
                        {"$set": attempt, "$inc": {"attempts": 1}, "$unset": _NOT_SUPERSEDED},
                        return_document=ReturnDocument.AFTER,
                    )
                    if document is not None:
                        return _execution(document)
                current = self.executions.find_one({"_id": key}, {"status": 1, "lease_until": 1})
                if current is not None:
                    status = ExecutionStatus(current["status"])
                    if status.is_final:
                        return None
                    live = _instant(current.get("lease_until"))
                    if status is ExecutionStatus.RUNNING and live is not None and live >= started:
                        return None  # another executor holds a live lease
                # It changed state between the guarded updates: go round again.
        raise Transient(f"begin_attempt {key}: too many concurrent changes, try again")

    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        # One insert_many for the batch: the first delivery of an occurrence, the common case.
        # The records that exist already (duplicates, sorted out after) get the guarded updates
        # of begin_attempt as one update_many per case, stamped with a token of this call, and
        # one read says which of them this call took.
        if not occurrences:
            return []
        started = utc_ms(now)
        token = uuid.uuid4().hex
        attempt: Document = {
            "status": "running",
            "started_at": started,
            "lease_owner": owner,
            "lease_until": utc_ms(lease_until),
            "next_attempt_at": None,
            "final_at": None,
            "begin_token": token,
        }
        records = [
            _first_attempt(occurrence, {**attempt, "revision": occurrence.revision})
            for occurrence in occurrences
        ]
        began: list[Execution | None] = [None] * len(records)
        with _transient("begin_attempts"):
            try:
                self.executions.insert_many(records, ordered=False)
                taken: set[int] = set()
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors", [])
                if any(error.get("code") != _DUPLICATE_KEY for error in errors):
                    raise
                taken = {error["index"] for error in errors}
            for index, record in enumerate(records):
                if index not in taken:
                    began[index] = _execution(record)
            if not taken:
                return began
            # The first delivery of each taken key in the batch, with its revision.
            firsts = {records[index]["_id"]: index for index in sorted(taken, reverse=True)}
            keys = list(firsts)
            for guard in (
                {"status": {"$in": ["retrying", "skipped"]}},
                {"status": "running", "lease_until": {"$lt": started}},
            ):
                # The previous attempt's outcome fields stay; the revision is the delivery's.
                self.executions.bulk_write(
                    [
                        UpdateOne(
                            {"_id": key, **guard},
                            {
                                "$set": {**attempt, "revision": records[index]["revision"]},
                                "$inc": {"attempts": 1},
                                "$unset": _NOT_SUPERSEDED,
                            },
                        )
                        for key, index in firsts.items()
                    ],
                    ordered=False,
                )
            current = {
                document["_id"]: document
                for document in self.executions.find({"_id": {"$in": keys}})
            }
        # A key is handed to one delivery of the batch; its other deliveries must not fire.
        handed = {record["_id"] for index, record in enumerate(records) if index not in taken}
        for index in sorted(taken):
            key = records[index]["_id"]
            document = current.get(key)
            if key in handed:
                continue
            handed.add(key)
            if document is not None and document.get("begin_token") == token:
                began[index] = _execution(document)
            elif document is None or not _held_or_final(document, started):
                # It changed state between the update and the read (or vanished): one at a time.
                began[index] = self.begin_attempt(occurrences[index], owner, now, lease_until)
        return began

    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        with _transient("finish_attempt"):
            result = self.executions.update_one(*_finish(execution, owner, outcome))
        return result.matched_count == 1

    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        # Two bulk_writes per batch: the outcomes, each under the guard of finish_attempt, then
        # the run counts of the final ones that were recorded, in order, each schedule whose
        # last outcome failed followed by the guarded update that pauses it if its streak
        # reached its pause_after_failures. Which guards matched: all when the matched count
        # says so; otherwise one read of the tokens. A token names the attempt, so a settle
        # tried again after a failure between the two writes finds the outcomes its first try
        # recorded, and counts them: once, as each count is guarded by its occurrence
        # (``_run_count``).
        if not settled:
            return []
        keys = [_key(execution.tenant, execution.occurrence_id) for execution, _ in settled]
        tokens = [_attempt_token(execution, owner) for execution, _ in settled]
        with _transient("settle_attempts"):
            result = self.executions.bulk_write(
                [
                    UpdateOne(*_finish(execution, owner, outcome, token))
                    for (execution, outcome), token in zip(settled, tokens, strict=True)
                ],
                ordered=False,
            )
            if result.matched_count == len(set(keys)) == len(keys):
                recorded = [True] * len(keys)
            else:
                found = {
                    document["_id"]: document.get("finish_token")
                    for document in self.executions.find(
                        {"_id": {"$in": keys}}, {"_id": 1, "finish_token": 1}
                    )
                }
                first = {key: index for index, key in reversed(list(enumerate(keys)))}
                recorded = [
                    found.get(key) == tokens[i] and first[key] == i for i, key in enumerate(keys)
                ]
            runs = []
            last_failures: dict[tuple[str, str], datetime | None] = {}
            for (execution, outcome), done in zip(settled, recorded, strict=True):
                if done and outcome.status.is_final:
                    succeeded = outcome.status is ExecutionStatus.SUCCEEDED
                    key = (execution.tenant, execution.schedule_id)
                    runs.append(
                        UpdateOne(
                            *_run_count(
                                *key, succeeded, outcome.finished_at, execution.occurrence_id
                            )
                        )
                    )
                    last_failures[key] = None if succeeded else outcome.finished_at
            runs += [
                UpdateOne(*_pause_on_failures(*key, at))
                for key, at in last_failures.items()
                if at is not None
            ]
            if runs:
                self.schedules.bulk_write(runs)
        return recorded

    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        # Two unordered bulk_writes at most, whatever the number of skips (a burst of them
        # follows an outage): each upsert creates a record or skips a retrying one; the records
        # it found in another state (duplicate keys) get the guarded update of a run whose
        # lease ran out (its executor died). A live run, or a succeeded, failed or skipped
        # record, stays as it is. Superseded ones: one more, the schedules' counts of the
        # records created.
        if not skips:
            return 0
        finished = utc_ms(now)
        keys = [_key(occurrence.tenant, occurrence.occurrence_id) for occurrence, _ in skips]
        upserts = [
            UpdateOne(
                {"_id": key, "status": "retrying"},
                {
                    "$set": {
                        "status": "skipped",
                        "finished_at": finished,
                        "final_at": finished,
                        "error": reason,
                        "next_attempt_at": None,
                    },
                    "$setOnInsert": {
                        "tenant": occurrence.tenant,
                        "occurrence_id": occurrence.occurrence_id,
                        "schedule_id": occurrence.schedule_id,
                        "scheduled_time": occurrence.scheduled_time,
                        "attempts": 0,
                        "revision": occurrence.revision,
                        "started_at": None,
                        "http_status": None,
                        "duration_ms": None,
                        "lateness_ms": None,
                        "lease_owner": None,
                        "lease_until": None,
                        "manual": occurrence.manual,
                        **({"superseded": True} if superseded else {}),
                    },
                },
                upsert=True,
            )
            for key, (occurrence, reason) in zip(keys, skips, strict=True)
        ]
        with _transient("record_skips"):
            try:
                done = self.executions.bulk_write(upserts, ordered=False)
                written = done.upserted_count + done.matched_count
                created = list(done.upserted_ids or {})
                taken: set[int] = set()
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors", [])
                if any(error.get("code") != _DUPLICATE_KEY for error in errors):
                    raise
                written = int(exc.details.get("nUpserted", 0)) + int(exc.details.get("nMatched", 0))
                created = [upserted["index"] for upserted in exc.details.get("upserted", [])]
                taken = {error["index"] for error in errors}
            if superseded and created:
                self._count_superseded([skips[index][0] for index in created])
            # The first skip of each record found in another state, with its reason.
            firsts = {keys[index]: index for index in sorted(taken, reverse=True)}
            if firsts:
                expired = self.executions.bulk_write(
                    [
                        UpdateOne(
                            {"_id": key, "status": "running", "lease_until": {"$lt": finished}},
                            {
                                "$set": {
                                    "status": "skipped",
                                    "finished_at": finished,
                                    "final_at": finished,
                                    "error": skips[index][1],
                                    "next_attempt_at": None,
                                    "lease_owner": None,
                                    "lease_until": None,
                                }
                            },
                        )
                        for key, index in firsts.items()
                    ],
                    ordered=False,
                )
                written += expired.matched_count
        return written

    def _count_superseded(self, occurrences: Sequence[Occurrence]) -> None:
        """One bulk_write: each schedule's ``superseded_count`` grows by its records created."""
        counts = Counter((item.tenant, item.schedule_id) for item in occurrences)
        self.schedules.bulk_write(
            [
                UpdateOne({"_id": _key(tenant, schedule_id)}, {"$inc": {"superseded_count": count}})
                for (tenant, schedule_id), count in counts.items()
            ],
            ordered=False,
        )

    def get_execution(self, tenant: str, occurrence_id: str) -> Execution | None:
        with _transient("get_execution"):
            document = self.executions.find_one({"_id": _key(tenant, occurrence_id)})
        return None if document is None else _execution(document)

    def list_executions(
        self,
        tenant: str,
        schedule_id: str,
        limit: int,
        cursor: str | None,
        status: ExecutionStatus | None = None,
    ) -> Page[Execution]:
        # Served in the order of the (tenant, schedule_id, scheduled_time, occurrence_id) index
        # (with a status, of the one with status after schedule_id), no in-memory sort: after a
        # cursor, each branch of the $or is a bounded scan of that index, already in the sort's
        # order, and MongoDB merges them (SORT_MERGE). Without a status, the superseded records
        # are filtered out as the scan meets them.
        selector: Document = {"tenant": tenant, "schedule_id": schedule_id}
        if status is None:
            # The same as {"$ne": True} (nx-27017 0.8.1 gets that one wrong beside the $or of
            # a cursor): null matches the records that lack the field.
            selector["superseded"] = {"$in": [None, False]}
        else:
            selector["status"] = status.value
        return self._execution_page(
            "list_executions",
            selector,
            ("scheduled_time", attrgetter("scheduled_time")),
            limit,
            cursor,
        )

    def list_dead_letters(
        self,
        tenant: str,
        limit: int,
        cursor: str | None,
        schedule_ids: Iterable[str] | None = None,
    ) -> Page[Execution]:
        selector: Document = {"tenant": tenant, "status": "failed", "discarded_at": None}
        if schedule_ids is not None:
            # Of some schedules: the tenant's failed records read in order (the index of
            # dead letters), the others passed over; no index more for every record to keep.
            # An $or of equalities, not $in: nx-27017 0.8.1 (a wire server we test against)
            # misses dates written by update operators when the same filter has $in.
            either = [{"schedule_id": schedule_id} for schedule_id in sorted(schedule_ids)]
            if not either:
                return Page([])
            selector["$and"] = [{"$or": either}]
        return self._execution_page(
            "list_dead_letters",
            selector,
            ("finished_at", attrgetter("finished_at")),
            limit,
            cursor,
        )

    def _execution_page(
        self,
        action: str,
        selector: Document,
        order: tuple[str, Callable[[Execution], datetime | None]],
        limit: int,
        cursor: str | None,
    ) -> Page[Execution]:
        """The records ``selector`` finds, newest first by ``order`` (its field, and the record's
        time in it), after ``cursor``."""
        time_field, moment = order
        if cursor is not None:
            after_ms, occurrence = parse_execution_cursor(cursor)
            after = from_epoch_ms(after_ms)
            beyond = [
                {time_field: {"$lt": after}},
                {time_field: after, "occurrence_id": {"$lt": occurrence}},
            ]
            if "$and" in selector:
                # Beside another $or, inside the $and too: nx-27017 0.8.1 ignores an $or
                # beside an $and that holds one.
                selector["$and"] = [*selector["$and"], {"$or": beyond}]
            else:
                selector["$or"] = beyond
        with _transient(action):
            documents = list(
                self.executions.find(selector)
                .sort([(time_field, DESCENDING), ("occurrence_id", DESCENDING)])
                .limit(limit + 1)
            )
        return execution_page([_execution(document) for document in documents], limit, moment)

    def reopen_dead_letter(
        self, tenant: str, occurrence_id: str, now: datetime
    ) -> Execution | None:
        with _transient("reopen_dead_letter"):
            document = self.executions.find_one_and_update(
                {"_id": _key(tenant, occurrence_id), "status": "failed", "discarded_at": None},
                {
                    "$set": {
                        "status": "retrying",
                        "next_attempt_at": utc_ms(now),
                        "lease_owner": None,
                        "lease_until": None,
                    }
                },
                return_document=ReturnDocument.AFTER,
            )
        return None if document is None else _execution(document)

    def restore_dead_letter(self, reopened: Execution) -> bool:
        with _transient("restore_dead_letter"):
            result = self.executions.update_one(
                {
                    "_id": _key(reopened.tenant, reopened.occurrence_id),
                    "status": "retrying",
                    "attempts": reopened.attempts,
                    "lease_owner": None,
                },
                {"$set": {"status": "failed", "next_attempt_at": None}},
            )
        return result.modified_count == 1

    def discard_dead_letter(self, tenant: str, occurrence_id: str, now: datetime) -> bool:
        with _transient("discard_dead_letter"):
            result = self.executions.update_one(
                {"_id": _key(tenant, occurrence_id), "status": "failed", "discarded_at": None},
                {"$set": {"discarded_at": utc_ms(now)}},
            )
        return result.modified_count == 1


def _first_attempt(occurrence: Occurrence, attempt: Mapping[str, Any]) -> Document:
    """The record of an occurrence's first attempt: ``attempt`` says who runs it, until when."""
    return {
        "_id": _key(occurrence.tenant, occurrence.occurrence_id),
        "tenant": occurrence.tenant,
        "occurrence_id": occurrence.occurrence_id,
        "schedule_id": occurrence.schedule_id,
        "scheduled_time": occurrence.scheduled_time,
        "attempts": 1,
        "finished_at": None,
        "http_status": None,
        "duration_ms": None,
        "lateness_ms": None,
        "error": None,
        "manual": occurrence.manual,
        **attempt,
    }


def _held_or_final(document: Mapping[str, Any], started: datetime) -> bool:
    """Whether a record refuses a new attempt: final, or running under a live lease."""
    status = ExecutionStatus(document["status"])
    if status.is_final:
        return True
    live = _instant(document.get("lease_until"))
    return status is ExecutionStatus.RUNNING and live is not None and live >= started


def _finish(
    execution: Execution, owner: str, outcome: AttemptOutcome, token: str | None = None
) -> tuple[Document, Document]:
    """The guarded update of ``finish_attempt``: filter and change."""
    finished = utc_ms(outcome.finished_at)
    started = maybe(utc_ms, attempt_started(execution, outcome))
    changes: Document = {
        "status": outcome.status.value,
        "started_at": started,
        "finished_at": finished,
        "http_status": outcome.http_status,
        "duration_ms": outcome.duration_ms,
        "lateness_ms": run_lateness_ms(execution, outcome),
        "error": outcome.error,
        "next_attempt_at": maybe(utc_ms, outcome.next_attempt_at),
        # What the TTL index of retention counts from: only records that are done carry it.
        "final_at": finished if outcome.status.is_final else None,
        "lease_owner": None,
        "lease_until": None,
    }
    if token is not None:
        changes["finish_token"] = token
    guard = {
        "_id": _key(execution.tenant, execution.occurrence_id),
        "lease_owner": owner,
        "status": "running",
    }
    # The attempt joins the record's log in the same update, which keeps the latest ones.
    attempt = {
        "number": execution.attempts,
        "status": outcome.status.value,
        "started_at": started,
        "finished_at": finished,
        "duration_ms": outcome.duration_ms,
        "http_status": outcome.http_status,
        "error": outcome.error,
        "status_line": outcome.response_status_line,
        "excerpt": outcome.response_excerpt,
        "truncated": outcome.response_truncated,
    }
    log = {"$each": [attempt], "$slice": -KEPT_ATTEMPTS}
    return guard, {"$set": changes, "$push": {"attempt_log": log}}


def _attempts(document: Mapping[str, Any], execution: Execution) -> tuple[Attempt, ...]:
    """The record's log; for a record written before attempts were kept, its last one."""
    log = document.get("attempt_log")
    if log is None:
        return Attempt.last_of(execution)
    return tuple(
        Attempt.from_entry(
            entry,
            _instant(entry.get("started_at")),
            _required(_instant(entry.get("finished_at"))),
        )
        for entry in map(_pushed, log)
    )


def _slot_entry(reservation: SlotReservation) -> str:
    """A quota reservation as an item of its tenant's ``reserved`` array: text, which every
    server compares, pushes and pulls alike (nx-27017 0.8.1 turns a pushed document to text)."""
    expires_ms = to_epoch_ms(reservation.expires_at)
    return f"{reservation.revision}:{expires_ms}:{reservation.schedule_id}"


def _slot(tenant: str, entry: str) -> SlotReservation:
    revision, expires_ms, schedule_id = entry.split(":", 2)
    return SlotReservation(tenant, schedule_id, int(revision), from_epoch_ms(int(expires_ms)))


def _pushed(entry: Mapping[str, Any] | str) -> Mapping[str, Any]:
    """A document of an array. nx-27017 0.8.1 hands one written by ``$push`` back as its
    extended JSON text; MongoDB itself always answers the document."""
    if isinstance(entry, str):
        document: Mapping[str, Any] = json_util.loads(entry, json_options=_PUSHED_JSON)
        return document
    return entry


def _attempt_token(execution: Execution, owner: str) -> str:
    """Names one attempt of one occurrence: the same in every try of its settle."""
    started = execution.started_at
    return f"{owner}|{execution.attempts}|{'' if started is None else utc_ms(started).isoformat()}"


def _run_count(
    tenant: str,
    schedule_id: str,
    succeeded: bool,
    at: datetime,
    occurrence_id: str | None = None,
) -> tuple[Document, Document]:
    """The update of ``record_run``: runs, failures, consecutive failures (reset on success).

    With ``occurrence_id``, counted once per occurrence: the schedule keeps the last
    ``_COUNTED`` occurrences it counted, and the update's filter passes over those.
    """
    guard: Document = {"_id": _key(tenant, schedule_id)}
    changes: Document = {
        "$inc": {"run_count": 1, "failure_count": 0 if succeeded else 1},
        "$set": {
            "last_run_at": utc_ms(at),
            "last_status": "succeeded" if succeeded else "failed",
        },
    }
    if succeeded:
        changes["$set"]["consecutive_failures"] = 0
    else:
        changes["$inc"]["consecutive_failures"] = 1
    if occurrence_id is not None:
        # $nin rather than $ne: the same on MongoDB, and nx-27017 0.8.1 answers $ne on an
        # array field wrongly (and takes text that looks like a date for a date, hence the
        # whole occurrence id, not its time).
        guard["counted"] = {"$nin": [occurrence_id]}
        changes["$push"] = {"counted": {"$each": [occurrence_id], "$slice": -_COUNTED}}
    return guard, changes


def _pause_on_failures(tenant: str, schedule_id: str, at: datetime) -> tuple[Document, Document]:
    """The guarded update, after ``_run_count`` of a failure at ``at``, that pauses an active
    schedule whose failures in a row reached its ``pause_after_failures``, unless a pause or
    resume newer than the failure landed (``$expr`` compares two fields of the document)."""
    revision = revision_at(at)
    guard: Document = {
        "_id": _key(tenant, schedule_id),
        "status": _ACTIVE,
        "pause_after_failures": {"$gte": 1},
        "state_revision": {"$lt": revision},
        "$expr": {"$gte": ["$consecutive_failures", "$pause_after_failures"]},
    }
    moment = utc_ms(at)
    changes: Document = {
        "status": _PAUSED,
        "paused_by": PausedBy.FAILURES.value,
        "paused_at": moment,
        "updated_at": moment,
        "state_revision": revision,
        "lease_owner": None,
        "lease_until": None,
    }
    return guard, {"$set": changes}


def _due_order(schedule: Schedule) -> tuple[datetime, str]:
    assert schedule.next_schedule_time is not None  # claimed schedules are due
    return schedule.next_schedule_time, schedule.schedule_id


def _required(value: datetime | None) -> datetime:
    if value is None:
        raise ValueError("a required date is missing from a stored document")
    return value


def _schedule(
    document: Mapping[str, Any], secrets: SecretBox, cache: DefinitionCache | None = None
) -> Schedule:
    key = (document["tenant"], document["schedule_id"], document["revision"])
    return Schedule(
        tenant=key[0],
        schedule_id=key[1],
        revision=key[2],
        state_revision=document["state_revision"],
        status=ScheduleStatus(document["status"]),
        definition=open_definition(secrets, document.get("definition"), key, cache),
        next_schedule_time=_instant(document.get("next_schedule_time")),
        accepted_at=_required(_instant(document.get("accepted_at"))),
        created_at=_required(_instant(document.get("created_at"))),
        updated_at=_required(_instant(document.get("updated_at"))),
        occurrence_count=document.get("occurrence_count", 0),
        run_count=document.get("run_count", 0),
        superseded_count=document.get("superseded_count", 0),
        failure_count=document.get("failure_count", 0),
        consecutive_failures=document.get("consecutive_failures", 0),
        last_run_at=_instant(document.get("last_run_at")),
        last_status=document.get("last_status"),
        lease_owner=document.get("lease_owner"),
        lease_until=_instant(document.get("lease_until")),
        paused_by=PausedBy(paused_by) if (paused_by := document.get("paused_by")) else None,
        paused_at=_instant(document.get("paused_at")),
        sent_ahead=tuple(map(_required, map(_instant, document.get("sent_ahead") or ()))),
    )


def _idempotency(document: Mapping[str, Any]) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant=document["tenant"],
        key=document["key"],
        fingerprint=document["fingerprint"],
        schedule_id=document["schedule_id"],
        revision=document["revision"],
        next_schedule_time=_instant(document.get("next_schedule_time")),
        timezone=document["timezone"],
        created_at=_required(_instant(document.get("created_at"))),
        expires_at=_required(_instant(document.get("expires_at"))),
    )


def _api_key(document: Mapping[str, Any]) -> ApiKey:
    return ApiKey(
        key_hash=document["_id"],
        tenant=document["tenant"],
        name=document.get("name", ""),
        created_at=_required(_instant(document.get("created_at"))),
    )


def _execution(document: Mapping[str, Any]) -> Execution:
    execution = Execution(
        tenant=document["tenant"],
        occurrence_id=document["occurrence_id"],
        schedule_id=document["schedule_id"],
        scheduled_time=_required(_instant(document.get("scheduled_time"))),
        status=ExecutionStatus(document["status"]),
        attempts=document["attempts"],
        revision=document["revision"],
        started_at=_instant(document.get("started_at")),
        finished_at=_instant(document.get("finished_at")),
        http_status=document.get("http_status"),
        duration_ms=document.get("duration_ms"),
        lateness_ms=document.get("lateness_ms"),
        error=document.get("error"),
        next_attempt_at=_instant(document.get("next_attempt_at")),
        lease_owner=document.get("lease_owner"),
        lease_until=_instant(document.get("lease_until")),
        manual=bool(document.get("manual", False)),
        superseded=bool(document.get("superseded", False)),
    )
    return replace(execution, attempt_log=_attempts(document, execution))
