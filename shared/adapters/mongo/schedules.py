"""The MongoDB store's schedules: definitions, advances, run counts, retention. Each guarded
write is a rule of ``shared.store_rules`` (``shared.adapters.mongo.filters``)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, UpdateOne
from pymongo.errors import BulkWriteError

from shared.adapters.guarded import Outcome
from shared.adapters.mongo.base import DUPLICATE_KEY, MongoBacked, write_cases_of
from shared.adapters.mongo.documents import fields_of, key_of
from shared.adapters.mongo.filters import Filters, keyed
from shared.adapters.mongo.transient import transient
from shared.adapters.records import SCHEDULE_STATE, schedule_of
from shared.claim_rules import (
    ADVANCE,
    advance_params,
)
from shared.definition_cache import DefinitionCache
from shared.model import Schedule, ScheduleDefinition
from shared.ports import Advance, DefinitionToApply, ScheduleStore
from shared.store_rules import (
    CHANGED_BEFORE,
    DEFINITION_FIELDS,
    ENDED,
    LAND_DEFINITION,
    PAUSE_ON_FAILURES,
    SHOWN,
    Run,
    run_counts,
)

# How many of its latest counted occurrences a schedule remembers, so that a settle tried again
# never counts one twice: more than are settled while one settle is being retried.
_COUNTED = 16
# What the version check reads (``get_schedule_states``): no field of the definition.
_STATE = dict.fromkeys(DEFINITION_FIELDS, 0)


class MongoSchedules(MongoBacked, ScheduleStore):
    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        schedules = (self.schedule_from(document, cache) for document in self._found(keys))
        return {(schedule.tenant, schedule.schedule_id): schedule for schedule in schedules}

    def get_schedule_states(
        self,
        keys: Sequence[tuple[str, str]],
        known: Mapping[tuple[str, str, int], ScheduleDefinition],
    ) -> dict[tuple[str, str], Schedule]:
        schedules = (
            schedule_of(fields_of(document, SCHEDULE_STATE), self.definitions, known=known)
            # A copy: a driver may add to it (mongomock adds ``_id``).
            for document in self._found(keys, dict(_STATE))
        )
        return {(schedule.tenant, schedule.schedule_id): schedule for schedule in schedules}

    def _found(
        self, keys: Sequence[tuple[str, str]], projection: Mapping[str, int] | None = None
    ) -> list[Mapping[str, Any]]:
        """The documents of ``keys`` (``projection`` of them), in one ``find`` by ``_id``."""
        if not keys:
            return []
        ids = list(dict.fromkeys(key_of(tenant, schedule_id) for tenant, schedule_id in keys))
        with transient("get_schedules"):
            return list(self.schedules.find({"_id": {"$in": ids}}, projection))

    def apply_definition(self, landing: DefinitionToApply) -> bool:
        # LAND_DEFINITION's guarded upsert alone: one command, a new schedule or a replace.
        [params] = self.landings([landing])
        return self.write(LAND_DEFINITION, params) is not Outcome.REFUSED

    def apply_definitions(self, definitions: Sequence[DefinitionToApply]) -> list[bool]:
        # One insert_many for the batch, a batch of one too: new schedules, the common case (a
        # create, a seed). Those whose id is taken (duplicate keys) get LAND_DEFINITION's
        # guarded upsert, one at a time.
        params = self.landings(definitions)
        new = [self.new_document(LAND_DEFINITION, one) for one in params]
        keys = [document["_id"] for document in new]
        if len(set(keys)) < len(keys):
            return [self.write(LAND_DEFINITION, one) is not Outcome.REFUSED for one in params]
        taken: set[int] = set()
        with transient("apply_definitions"):
            try:
                if new:
                    self.schedules.insert_many(new, ordered=False)
            except BulkWriteError as exc:
                taken = duplicates(exc)
        return [
            index not in taken or self.write(LAND_DEFINITION, one) is not Outcome.REFUSED
            for index, one in enumerate(params)
        ]

    def advance_schedules(
        self, advances: Sequence[Advance], owner: str, now: datetime
    ) -> list[bool]:
        # One bulk_write, each update under ADVANCE's guard. Which guards matched: all of them
        # when the matched count says so (the common case); otherwise one read of the token
        # that only the updates of this call wrote.
        if not advances:
            return []
        token = uuid.uuid4().hex
        [case] = write_cases_of(ADVANCE)
        updates = []
        for advance in advances:
            selector, update = self.guarded(ADVANCE, case, advance_params(advance, owner, now))
            update["$set"]["advance_token"] = token
            updates.append(UpdateOne(selector, update))
        keys = [key_of(advance.claimed.tenant, advance.claimed.schedule_id) for advance in advances]
        with transient("advance_schedules"):
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
        with transient("record_run"):
            self.schedules.bulk_write(run_updates(self, [Run(tenant, schedule_id, succeeded, at)]))

    def count_schedules(self) -> Mapping[str, int]:
        with transient("count_schedules"):
            groups = self.schedules.aggregate(
                [
                    {"$match": Filters("schedules", {}).filter(SHOWN)},
                    {"$group": {"_id": "$status", "n": {"$sum": 1}}},
                ]
            )
            return {group["_id"]: group["n"] for group in groups}

    def purge_expired(
        self, executions_before: datetime, schedules_before: datetime, limit: int
    ) -> tuple[int, int]:
        # Execution records expire by the TTL index on final_at (``ensure_indexes``): MongoDB
        # deletes them as they age, which no sweep of bounded batches keeps up with at scale.
        # Schedules are purged here: EXPIRED_SCHEDULE one status at a time, by equality
        # (nx-27017 0.8.1 misses dates written by update operators when the same filter has
        # ``$in``). delete_many has no limit, so pick the oldest ids first; the status in the
        # delete keeps a schedule that changed meanwhile.
        deleted = 0
        changed = Filters("schedules", {"before": schedules_before}).filter(CHANGED_BEFORE)
        with transient("purge_expired"):
            for status in ENDED:
                ids = [
                    document["_id"]
                    for document in self.schedules.find({"status": status, **changed}, {"_id": 1})
                    .sort("updated_at", ASCENDING)
                    .limit(limit - deleted)
                ]
                if ids:
                    result = self.schedules.delete_many({"_id": {"$in": ids}, "status": status})
                    deleted += result.deleted_count
                if deleted >= limit:
                    break
        return 0, deleted


def run_updates(store: MongoBacked, runs: Sequence[Run]) -> list[UpdateOne]:
    """``record_run`` of each run, in order, as the updates of one ordered bulk_write: each
    count, then ``run_counts``'s pauses. With an occurrence id, a run is counted once: the
    schedule keeps the last ``_COUNTED`` occurrences it counted, and the count's filter passes
    over those (a settle tried again)."""
    counts, pauses = run_counts(runs)
    updates = []
    for run, rule, params in counts:
        [case] = write_cases_of(rule)
        selector = keyed(rule, params)
        update = store.update_of(rule, case, params)
        if run.occurrence_id is not None:
            # $nin rather than $ne: the same on MongoDB, and nx-27017 0.8.1 answers $ne on
            # an array field wrongly (and takes text that looks like a date for a date,
            # hence the whole occurrence id, not its time).
            selector["counted"] = {"$nin": [run.occurrence_id]}
            pushed = {"$each": [run.occurrence_id], "$slice": -_COUNTED}
            update.setdefault("$push", {})["counted"] = pushed
        updates.append(UpdateOne(selector, update))
    [pause] = write_cases_of(PAUSE_ON_FAILURES)
    for params in pauses:
        selector = {
            **keyed(PAUSE_ON_FAILURES, params),
            **Filters("schedules", params).filter(pause.guard),
        }
        updates.append(UpdateOne(selector, store.update_of(PAUSE_ON_FAILURES, pause, params)))
    return updates


def duplicates(exc: BulkWriteError) -> set[int]:
    """The positions an unordered insert refused as taken (duplicate keys); any other error
    is raised again."""
    errors = exc.details.get("writeErrors", [])
    if any(error.get("code") != DUPLICATE_KEY for error in errors):
        raise exc
    return {error["index"] for error in errors}
