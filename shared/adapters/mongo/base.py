"""What the parts of the MongoDB store share: the client and its collections, how definitions
are sealed, and a rule applied to one document
(``shared.adapters.guarded``)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any, Self
from urllib.parse import urlsplit

import pymongo
from pymongo import ReturnDocument, UpdateOne
from pymongo.collection import Collection
from pymongo.errors import (
    DuplicateKeyError,
)

from shared.adapters.guarded import GuardedWrites, Outcome
from shared.adapters.mongo.documents import fields_of, key_of, schedule_slice
from shared.adapters.mongo.filters import Case, Filters, find_of, keyed, write_cases
from shared.adapters.mongo.indexes import ensure_indexes, expire_changes, expire_executions
from shared.adapters.mongo.transient import transient
from shared.adapters.reads import Reads
from shared.adapters.records import TABLES, Fields
from shared.definition_codec import DefinitionCodec
from shared.errors import Transient
from shared.execution_rules import BEGIN, FINISH, SKIP
from shared.guards import Remove, Write, holds
from shared.model import ExecutionStatus
from shared.secrets import SecretBox
from shared.store_queries import Query
from shared.store_rules import LAND_DEFINITION
from shared.timeutil import utc_ms

Document = dict[str, Any]
DUPLICATE_KEY = 11000


# How often a guarded write goes round its cases when the document changes between them (each
# round either applies it or finds it refused; a livelock needs endless concurrent mutations).
ROUNDS = 8
# Each write's cases, made once: rules are constants of shared.store_rules.
_CASES: dict[int, list[Case]] = {}


def write_cases_of(rule: Write) -> list[Case]:
    found = _CASES.get(id(rule))
    if found is None:
        found = _CASES[id(rule)] = write_cases(rule)
    return found


class MongoBacked(GuardedWrites, Reads):
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
        ``execution_retention``: finished records expire that long after they became final,
        and changes that long after they were made (TTL indexes, made or changed by
        ``ensure_indexes``); ``None`` keeps them."""
        self.client = client
        self.definitions = DefinitionCodec(secrets)
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
        self.calendars: Collection[Document] = database["calendars"]
        self.changes: Collection[Document] = database["changes"]

    @classmethod
    def from_url(
        cls,
        url: str,
        database_name: str,
        *,
        secrets: SecretBox,
        execution_retention: timedelta | None = None,
    ) -> Self:
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
        with transient("ensure_indexes"):
            ensure_indexes(self.schedules.database, self.definitions.target)
            if self.execution_retention is not None:
                seconds = int(self.execution_retention.total_seconds())
                expire_executions(self.schedules.database, seconds)
                expire_changes(self.schedules.database, seconds)

    def close(self) -> None:
        if self.owns_client:
            self.client.close()

    def ping(self) -> None:
        with transient("ping"):
            self.client.admin.command("ping")

    def extra(self, rule: Write, params: Mapping[str, Any]) -> Document:
        """What MongoDB keeps beside a rule's changes: a schedule's slice (its claims go by
        slices), and ``final_at``, which only a record that is done carries (the TTL index of
        retention counts from it)."""
        if rule is LAND_DEFINITION:
            return {"slice": schedule_slice(key_of(params["tenant"], params["schedule_id"]))}
        if rule is FINISH:
            final = ExecutionStatus(params["status"]).is_final
            return {"final_at": utc_ms(params["finished_at"]) if final else None}
        if rule is SKIP:
            return {"final_at": utc_ms(params["now"])}
        if rule is BEGIN:
            return {"final_at": None}
        return {}

    def update_of(self, rule: Write, case: Case, params: Mapping[str, Any]) -> Document:
        """A case's update, with what MongoDB keeps beside it."""
        update = Filters(rule.table, params).update(case.changes)
        extra = self.extra(rule, params)
        if extra:
            update.setdefault("$set", {}).update(extra)
        return update

    def guarded(
        self, rule: Write, case: Case, params: Mapping[str, Any]
    ) -> tuple[Document, Document]:
        """A case's filter (the record's key and the case's guard) and its update."""
        selector = {**keyed(rule, params), **Filters(rule.table, params).filter(case.guard)}
        return selector, self.update_of(rule, case, params)

    def new_document(self, rule: Write, params: Mapping[str, Any]) -> Document:
        """The document a write makes where there is none: what an upsert of its first case
        would insert."""
        filters = Filters(rule.table, params)
        update = self.update_of(rule, write_cases_of(rule)[0], params)
        return {
            **keyed(rule, params),
            **filters.created(rule),
            **update.get("$inc", {}),
            **update.get("$set", {}),
        }

    def write(self, rule: Write, params: Mapping[str, Any]) -> Outcome:
        return self.applied(rule, params)[0]

    def applied(
        self,
        rule: Write,
        params: Mapping[str, Any],
        returning: bool = False,
        make: bool = True,
    ) -> tuple[Outcome, Document | None]:
        """``write``, and with ``returning`` the document as changed (one command, the same);
        without ``make``, of a record that exists only (its making already tried)."""
        makes = rule.makes_record and make
        collection = self.schedules.database[rule.table]
        filters = Filters(rule.table, params)
        key = keyed(rule, params)
        cases = write_cases_of(rule)
        with transient(f"write {rule.table}"):
            for _ in range(ROUNDS):
                for index, case in enumerate(cases):
                    selector, update = self.guarded(rule, case, params)
                    upsert = index == 0 and makes
                    if upsert:
                        # Where the document does not exist MongoDB inserts it; where it exists
                        # and the guard refuses, the insert fails on the _id.
                        update["$setOnInsert"] = filters.created(rule)
                    try:
                        outcome, document = _update(collection, selector, update, upsert, returning)
                    except DuplicateKeyError:
                        continue
                    if outcome is not Outcome.REFUSED:
                        return outcome, document
                if len(cases) == 1:
                    # One guarded update (or upsert) refused, atomically: by the guard.
                    return Outcome.REFUSED, None
                # Refused by every case: by the guard, or the document moved between cases.
                current = collection.find_one(key)
                if current is not None and not holds(
                    rule.guard, self.fields(rule.table, current), params
                ):
                    return Outcome.REFUSED, None
                if current is None and not makes:
                    return Outcome.REFUSED, None
        raise Transient(f"{rule.table} {key['_id']}: changed by other writers, try again")

    def write_many(self, writes: Sequence[tuple[Write, Mapping[str, Any]]]) -> list[Outcome]:
        # One unordered bulk_write, each update under its rule's guard. Which guards matched:
        # all of them when the matched count says so (the common case); otherwise one read of
        # the token that only the updates of this call wrote.
        if not writes:
            return []
        token = uuid.uuid4().hex
        [table] = {rule.table for rule, _ in writes}
        updates, keys = [], []
        for rule, params in writes:
            [case] = write_cases_of(rule)
            selector, update = self.guarded(rule, case, params)
            update.setdefault("$set", {})["write_token"] = token
            updates.append(UpdateOne(selector, update))
            keys.append(selector["_id"])
        collection = self.schedules.database[table]
        with transient(f"write {table}"):
            if collection.bulk_write(updates, ordered=False).matched_count == len(keys):
                return [Outcome.CHANGED] * len(keys)
            found = collection.find({"_id": {"$in": keys}, "write_token": token}, {"_id": 1})
            changed = {document["_id"] for document in found}
        return [Outcome.CHANGED if key in changed else Outcome.REFUSED for key in keys]

    def count(self, query: Query) -> int:
        selector, _ = find_of(query)
        with transient(f"count {query.table}"):
            return self.schedules.database[query.table].count_documents(selector)

    def write_back(self, rule: Write, params: Mapping[str, Any]) -> Fields | None:
        _, document = self.applied(rule, params, returning=True)
        return None if document is None else self.fields(rule.table, document)

    def remove(self, rule: Remove, params: Mapping[str, Any]) -> bool:
        selector = {**keyed(rule, params), **Filters(rule.table, params).filter(rule.guard)}
        with transient(f"remove {rule.table}"):
            return self.schedules.database[rule.table].delete_one(selector).deleted_count == 1

    def fields(self, table: str, stored: Any) -> Fields:
        fields = fields_of(stored, TABLES[table])
        if table == "api_keys":
            # An API key's _id is its hash (``shared.adapters.mongo.documents``).
            fields["key_hash"] = stored["_id"]
        return fields

    def read(self, table: str, key: Mapping[str, Any]) -> Fields | None:
        tenant, name = key.values()
        with transient(f"read {table}"):
            document = self.schedules.database[table].find_one({"_id": key_of(tenant, name)})
        return None if document is None else self.fields(table, document)

    def select(self, query: Query) -> list[Fields]:
        selector, order = find_of(query)
        collection = self.schedules.database[query.table]
        with transient(f"list {query.table}"):
            found = list(collection.find(selector).sort(order).limit(query.limit))
        return [self.fields(query.table, document) for document in found]

    def stored_definitions(self) -> Iterator[tuple[str, str, str]]:
        fields = {"definition": 1, "tenant": 1, "schedule_id": 1}
        with transient("stored definitions"):
            for document in self.schedules.find({"definition": {"$ne": None}}, fields):
                yield document["tenant"], document["schedule_id"], document["definition"]


def _update(
    collection: Collection[Document],
    selector: Document,
    update: Document,
    upsert: bool,
    returning: bool,
) -> tuple[Outcome, Document | None]:
    """One guarded update (an upsert): how it went, and with ``returning`` the document after."""
    if returning:
        document = collection.find_one_and_update(
            selector, update, upsert=upsert, return_document=ReturnDocument.AFTER
        )
        # Made or changed, the caller reads which from the document.
        return (Outcome.REFUSED if document is None else Outcome.CHANGED), document
    result = collection.update_one(selector, update, upsert=upsert)
    if result.upserted_id is not None:
        return Outcome.MADE, None
    return (Outcome.CHANGED if result.matched_count else Outcome.REFUSED), None
