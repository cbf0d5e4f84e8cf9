"""The MongoDB store's indexes, as a versioned list.

``STEPS`` is numbered from 1; the database records the last step applied in the ``migrations``
collection (``{_id: "indexes", version: N}``), and ``ensure_indexes`` applies the steps after
it, in order: a process that finds the database up to date sends one read. Every step is
idempotent (``createIndexes`` of an index that exists is a no-op on the server), so processes
starting together may each apply a step; the version only ever rises (a guarded upsert), and a
database that a newer version brought further is left as it is. A change of indexes is a new
step at the end, never an edit of one applied before.

Plain indexes only: no ``partialFilterExpression`` and no reliance on a unique index skipping
documents that lack a key. nx-27017 (a wire-protocol server we test against) implements
neither, and every schedule document, tombstones included, carries ``tenant`` and
``schedule_id``, so a full unique index is right on every server.

The TTL indexes of execution records and of changes follow a setting, not a version:
``expire_executions`` and ``expire_changes`` check them at every start.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, NamedTuple

from pymongo import ASCENDING, DESCENDING, UpdateOne
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import DuplicateKeyError, OperationFailure

from shared.errors import ConfigurationError
from shared.schedule_listing import name_key

Document = dict[str, Any]
# The stored target host of a definition's JSON text (its opened URL's host).
TargetOf = Callable[[str], str]
Keys = tuple[tuple[str, int], ...]

_VERSION_ID = "indexes"
# The document of ``migrations`` that an earlier version wrote once it had filled the search
# fields of every schedule.
_SEARCH_FIELDS_FILLED = "schedules.search_fields"
_KEYS_PER_FILL = 500


@dataclass(frozen=True)
class Index:
    collection: str
    keys: Keys
    unique: bool = False
    # A TTL index (seconds after the date in its one field); a server without TTL indexes
    # gets the plain index, which every reader's own check of the date makes enough.
    expire_after_seconds: int | None = None

    def apply(self, database: Database[Document], target_of: TargetOf) -> None:
        collection = database[self.collection]
        options: dict[str, Any] = {"unique": True} if self.unique else {}
        if self.expire_after_seconds is None:
            collection.create_index(list(self.keys), **options)
            return
        try:
            collection.create_index(list(self.keys), expireAfterSeconds=self.expire_after_seconds)
        except OperationFailure:
            collection.create_index(list(self.keys))


@dataclass(frozen=True)
class DropIndexes:
    """Drop the indexes of these keys, each a prefix of one that serves it now (found by key:
    nx-27017 names indexes its own way)."""

    collection: str
    keys: tuple[tuple[str, ...], ...]

    def apply(self, database: Database[Document], target_of: TargetOf) -> None:
        collection = database[self.collection]
        dropped = [list(key) for key in self.keys]
        for name, index in collection.index_information().items():
            if [key for key, _ in index["key"]] in dropped:
                collection.drop_index(name)


def _fill(
    schedules: Collection[Document],
    missing: str,
    read: tuple[str, ...],
    values_of: Callable[[Document], Document],
) -> None:
    """Set on each schedule stored without the field ``missing`` the fields ``values_of`` its
    stored ``read`` fields gives, a batch of writes at a time; each write is guarded by the
    definition it read."""
    stored = schedules.find(
        {missing: {"$exists": False}, "definition": {"$ne": None}},
        dict.fromkeys(("definition", *read), 1),
    )
    fills: list[UpdateOne] = []
    for document in stored:
        fills.append(
            UpdateOne(
                {"_id": document["_id"], "definition": document["definition"]},
                {"$set": values_of(document)},
            )
        )
        if len(fills) == _KEYS_PER_FILL:
            schedules.bulk_write(fills, ordered=False)
            fills = []
    if fills:
        schedules.bulk_write(fills, ordered=False)


@dataclass(frozen=True)
class FillSearchFields:
    """Give the schedules stored before the fields of search and order were kept (``target``
    beside the sealed payload, ``name_key``) theirs. Processes starting together may each fill
    some, to the same values."""

    def apply(self, database: Database[Document], target_of: TargetOf) -> None:
        if database["migrations"].find_one({"_id": _SEARCH_FIELDS_FILLED}) is not None:
            return
        _fill(
            database["schedules"],
            "name_key",
            ("name",),
            lambda document: {
                "target": target_of(document["definition"]),
                "name_key": name_key(document["name"]),
            },
        )


@dataclass(frozen=True)
class FillPriorities:
    """Give the schedules stored before their priority was kept beside the definition (for
    the claim's order, ``shared.claim_rules.BY_PRIORITY``) theirs, from the definition's text
    (where the priority is never sealed)."""

    def apply(self, database: Database[Document], target_of: TargetOf) -> None:
        _fill(
            database["schedules"],
            "priority",
            (),
            lambda document: {"priority": json.loads(document["definition"]).get("priority", 5)},
        )


Step = Index | DropIndexes | FillSearchFields | FillPriorities


_BY_ID = ("schedule_id", ASCENDING)


def _listing(field_name: str) -> Index:
    """A tenant's schedules by one field, then id: a filter or an order of the listing."""
    return Index("schedules", (("tenant", ASCENDING), (field_name, ASCENDING), _BY_ID))


class Versioned(NamedTuple):
    version: int
    step: Step


STEPS: tuple[Versioned, ...] = (
    # The poller's claim: active schedules in next_schedule_time order, the slice and the lease
    # checked in the index. A claim from a window of slices reads the keys in due order and
    # passes over the other windows' (about a window's share of keys per claimed schedule),
    # where a slice before the time would need a sort of the window's due.
    Versioned(
        1,
        Index(
            "schedules",
            (
                ("status", ASCENDING),
                ("next_schedule_time", ASCENDING),
                ("slice", ASCENDING),
                ("lease_until", ASCENDING),
            ),
        ),
    ),
    # Listing a tenant's schedules in schedule_id order; the key of a schedule.
    Versioned(2, Index("schedules", (("tenant", ASCENDING), _BY_ID), unique=True)),
    # By status; and the quota check of every create, a count of the tenant's live schedules
    # from the index alone (COUNT_SCAN).
    Versioned(3, _listing("status")),
    Versioned(4, _listing("tags")),
    Versioned(5, _listing("target")),
    # By a name prefix (the API's ?name=); and listing in the other orders
    # (shared.schedule_listing), either direction, next time's serving its window too.
    Versioned(6, _listing("name")),
    Versioned(7, _listing("name_key")),
    Versioned(8, _listing("next_schedule_time")),
    Versioned(9, _listing("created_at")),
    # Indexes once made, each now a prefix of one made in its place.
    Versioned(10, DropIndexes("schedules", (("tenant", "name"), ("tenant", "next_schedule_time")))),
    Versioned(11, FillSearchFields()),
    # A schedule's executions, newest first, in the order the history is served; and those of
    # one status (the history's ?status=), in the same order.
    Versioned(
        12,
        Index(
            "executions",
            (
                ("tenant", ASCENDING),
                ("schedule_id", ASCENDING),
                ("scheduled_time", DESCENDING),
                ("occurrence_id", DESCENDING),
            ),
        ),
    ),
    Versioned(
        13,
        Index(
            "executions",
            (
                ("tenant", ASCENDING),
                ("schedule_id", ASCENDING),
                ("status", ASCENDING),
                ("scheduled_time", DESCENDING),
                ("occurrence_id", DESCENDING),
            ),
        ),
    ),
    Versioned(14, Index("api_keys", (("tenant", ASCENDING),))),
    # A tenant's dead letters, the latest failure first.
    Versioned(
        15,
        Index(
            "executions",
            (("tenant", ASCENDING), ("status", ASCENDING), ("finished_at", DESCENDING)),
        ),
    ),
    # Retention (purge_expired): completed and deleted schedules, oldest first.
    Versioned(16, Index("schedules", (("status", ASCENDING), ("updated_at", ASCENDING)))),
    # MongoDB drops expired idempotency records itself; reads check ``expires_at`` anyway.
    Versioned(17, Index("idempotency_keys", (("expires_at", ASCENDING),), expire_after_seconds=0)),
    # The lateness checks (shared.lateness): the schedules whose cursor is due. Those without
    # an alert keep null there, which a range of dates never reads.
    Versioned(18, Index("schedules", (("late_check_at", ASCENDING),))),
    # The poller's claim by priority (shared.claim_rules.BY_PRIORITY; issue 27 item 4): the
    # due of each priority in time order, the highest first; the slice and lease checked in
    # the index, as step 1's. The schedules stored before carry their priority first.
    Versioned(19, FillPriorities()),
    Versioned(
        20,
        Index(
            "schedules",
            (
                ("status", ASCENDING),
                ("priority", DESCENDING),
                ("next_schedule_time", ASCENDING),
                ("slice", ASCENDING),
                ("lease_until", ASCENDING),
            ),
        ),
    ),
    # A tenant's business calendars by name.
    Versioned(21, Index("calendars", (("tenant", ASCENDING), ("name", ASCENDING)))),
    # The schedules naming a calendar (its change and delete look for them).
    Versioned(22, _listing("calendars")),
    # The pauses that ended (``shared.store_rules.PAUSE_ENDED``), which the poller resumes.
    Versioned(23, Index("schedules", (("status", ASCENDING), ("paused_until", ASCENDING)))),
    # A schedule's change history, newest first.
    Versioned(
        24,
        Index(
            "changes",
            (("tenant", ASCENDING), ("schedule_id", ASCENDING), ("seq", DESCENDING)),
        ),
    ),
)


def indexes_version(database: Database[Document]) -> int:
    """The last step applied to the database (0: none, or a database made before versions)."""
    document = database["migrations"].find_one({"_id": _VERSION_ID})
    return int(document["version"]) if document is not None else 0


def ensure_indexes(
    database: Database[Document], target_of: TargetOf, steps: Sequence[Versioned] = STEPS
) -> int:
    """Apply the steps the database lacks; returns its version after."""
    latest = steps[-1].version if steps else 0
    if [item.version for item in steps] != list(range(1, latest + 1)):
        raise ConfigurationError("MongoDB index steps must be numbered 1, 2, 3 … in order")
    current = indexes_version(database)
    if current >= latest:
        return current
    for item in steps[current:]:
        item.step.apply(database, target_of)
    # Another process may have recorded this version, or a later one, first.
    with suppress(DuplicateKeyError):
        database["migrations"].update_one(
            {"_id": _VERSION_ID, "version": {"$lt": latest}},
            {"$set": {"version": latest}},
            upsert=True,
        )
    return latest


def expire_executions(database: Database[Document], seconds: int) -> None:
    """Final and skipped records expire ``seconds`` after ``final_at`` (a TTL index), which
    only they carry: a record in flight or retrying has none and never expires
    (``expire_after``)."""
    expire_after(database, "executions", "final_at", seconds)


def expire_changes(database: Database[Document], seconds: int) -> None:
    """A schedule's changes expire ``seconds`` after they were made: as long as its runs are
    kept (``expire_after``)."""
    expire_after(database, "changes", "at", seconds)


def expire_after(database: Database[Document], name: str, field: str, seconds: int) -> None:
    """The documents of collection ``name`` expire ``seconds`` after the date in ``field`` (a
    TTL index).

    A change of the retention setting changes the index in place (``collMod``), never a
    rebuild. nx-27017 (a wire server we test against) answers ``collMod`` without changing the
    index and never expires documents; MongoDB does both.
    """
    collection = database[name]
    for index in collection.index_information().values():
        # Found by its key, not its name: nx-27017 names indexes its own way.
        if [key for key, _ in index["key"]] == [field]:
            if index.get("expireAfterSeconds") != seconds:
                database.command(
                    "collMod",
                    collection.name,
                    index={"keyPattern": {field: 1}, "expireAfterSeconds": seconds},
                )
            return
    collection.create_index([(field, ASCENDING)], expireAfterSeconds=seconds)
