"""The MongoDB store's attempts: begun under a lease, finished and counted, skipped. Each is a
rule of ``shared.store_rules`` applied to a batch in a constant number of commands."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pymongo import UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError

from shared.adapters.guarded import Outcome
from shared.adapters.mongo import documents as codec
from shared.adapters.mongo.base import MongoBacked, write_cases_of
from shared.adapters.mongo.filters import Filters
from shared.adapters.mongo.schedules import duplicates, run_updates
from shared.adapters.mongo.transient import transient
from shared.execution_rules import (
    BEGIN,
    FINISH,
    SKIP,
    TAKES_ATTEMPT,
    begin_params,
    finish_params,
    settled_runs,
    skip_params,
)
from shared.guards import holds
from shared.model import AttemptOutcome, Execution, Occurrence
from shared.ports import Store
from shared.store_rules import COUNT_SUPERSEDED
from shared.timeutil import utc_ms


class MongoExecutions(MongoBacked, Store):
    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        # One insert_many for the batch: the first delivery of an occurrence, the common case.
        # The records that exist already (duplicates, sorted out after) get BEGIN's cases as one
        # bulk_write each, stamped with a token of this call, and one read says which of them
        # this call took. A batch of one: BEGIN's guarded upsert alone.
        params = [begin_params(o, owner, now, lease_until) for o in occurrences]
        if len(params) <= 1:
            return [self._begin_one(one) for one in params]
        token = uuid.uuid4().hex
        records = [{**self.new_document(BEGIN, one), "begin_token": token} for one in params]
        began: list[Execution | None] = [None] * len(records)
        with transient("begin_attempts"):
            try:
                self.executions.insert_many(records, ordered=False)
                taken: set[int] = set()
            except BulkWriteError as exc:
                taken = duplicates(exc)
            for index, record in enumerate(records):
                if index not in taken:
                    began[index] = self.execution_from(record)
            if not taken:
                return began
            # The first delivery of each taken key in the batch, with its revision.
            firsts = {records[index]["_id"]: index for index in sorted(taken, reverse=True)}
            for case in write_cases_of(BEGIN):
                updates = []
                for index in firsts.values():
                    selector, update = self.guarded(BEGIN, case, params[index])
                    update["$set"]["begin_token"] = token
                    updates.append(UpdateOne(selector, update))
                self.executions.bulk_write(updates, ordered=False)
            current = {
                document["_id"]: document
                for document in self.executions.find({"_id": {"$in": list(firsts)}})
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
                began[index] = self.execution_from(document)
            elif document is None or holds(
                TAKES_ATTEMPT, self.fields("executions", document), params[index]
            ):
                # It changed state between the update and the read (or vanished): one at a time.
                began[index] = self._begin_one(params[index])
        return began

    def _begin_one(self, params: Mapping[str, Any]) -> Execution | None:
        """BEGIN of one: the first delivery, the common case, a new record (one insert); else
        BEGIN's cases of the record that exists, the record as begun read back."""
        record = self.new_document(BEGIN, params)
        with transient("begin_attempt"):
            try:
                self.executions.insert_one(record)
                return self.execution_from(record)
            except DuplicateKeyError:
                pass
        _, document = self.applied(BEGIN, params, returning=True, make=False)
        return None if document is None else self.execution_from(document)

    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        return self.write(FINISH, finish_params(execution, owner, outcome)) is Outcome.CHANGED

    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        # Two bulk_writes per batch: the outcomes, each under FINISH's guard, then the run counts
        # of the final ones that were recorded, in order, with the pause of each schedule whose
        # last outcome failed (``run_updates``). Which guards matched: all when the matched count
        # says so; otherwise one read of the tokens. A token names the attempt, so a settle tried
        # again after a failure between the two writes finds the outcomes its first try
        # recorded, and counts them: once, as each count is guarded by its occurrence.
        if not settled:
            return []
        [case] = write_cases_of(FINISH)
        keys = [codec.key_of(execution.tenant, execution.occurrence_id) for execution, _ in settled]
        tokens = [_attempt_token(execution, owner) for execution, _ in settled]
        updates = []
        for (execution, outcome), token in zip(settled, tokens, strict=True):
            selector, update = self.guarded(FINISH, case, finish_params(execution, owner, outcome))
            update["$set"]["finish_token"] = token
            updates.append(UpdateOne(selector, update))
        with transient("settle_attempts"):
            result = self.executions.bulk_write(updates, ordered=False)
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
            runs = settled_runs(settled, recorded)
            if runs:
                self.schedules.bulk_write(run_updates(self, runs))
        return recorded

    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        # Two unordered bulk_writes at most, whatever the number of skips (a burst of them
        # follows an outage): SKIP's first case, an upsert, makes a record or skips a retrying
        # one; the records it found in another state (duplicate keys) get its other case, a run
        # whose lease ran out (its executor died). A live run, or a succeeded, failed or skipped
        # record, stays as it is. Superseded ones: one more, the schedules' counts of the
        # records made.
        if not skips:
            return 0
        params = [skip_params(occurrence, reason, now, superseded) for occurrence, reason in skips]
        first, *others = write_cases_of(SKIP)
        upserts = []
        for one in params:
            selector, update = self.guarded(SKIP, first, one)
            update["$setOnInsert"] = Filters(SKIP.table, one).created(SKIP)
            upserts.append(UpdateOne(selector, update, upsert=True))
        with transient("record_skips"):
            try:
                done = self.executions.bulk_write(upserts, ordered=False)
                written = done.upserted_count + done.matched_count
                made = list(done.upserted_ids or {})
                taken: set[int] = set()
            except BulkWriteError as exc:
                taken = duplicates(exc)
                written = int(exc.details.get("nUpserted", 0)) + int(exc.details.get("nMatched", 0))
                made = [upserted["index"] for upserted in exc.details.get("upserted", [])]
            if superseded and made:
                self._count_superseded([skips[index][0] for index in made])
            # The first skip of each record found in another state, with its reason.
            keys = [codec.key_of(one["tenant"], one["occurrence_id"]) for one in params]
            firsts = {keys[index]: index for index in sorted(taken, reverse=True)}
            for case in others:
                if firsts:
                    written += self.executions.bulk_write(
                        [UpdateOne(*self.guarded(SKIP, case, params[i])) for i in firsts.values()],
                        ordered=False,
                    ).matched_count
        return written

    def _count_superseded(self, occurrences: Sequence[Occurrence]) -> None:
        """One bulk_write: each schedule's ``superseded_count`` grows by its records made."""
        counts = Counter((item.tenant, item.schedule_id) for item in occurrences)
        [case] = write_cases_of(COUNT_SUPERSEDED)
        self.schedules.bulk_write(
            [
                UpdateOne(
                    *self.guarded(
                        COUNT_SUPERSEDED,
                        case,
                        {"tenant": tenant, "schedule_id": schedule_id, "count": count},
                    )
                )
                for (tenant, schedule_id), count in counts.items()
            ],
            ordered=False,
        )


def _attempt_token(execution: Execution, owner: str) -> str:
    """Names one attempt of one occurrence: the same in every try of its settle."""
    started = execution.started_at
    return f"{owner}|{execution.attempts}|{'' if started is None else utc_ms(started).isoformat()}"
