"""The MongoDB store's answers to ``Idempotency-Key``s (a forgotten one: ``GuardedWrites``)."""

from __future__ import annotations

from datetime import datetime

from shared.adapters.guarded import Outcome
from shared.adapters.mongo.base import MongoBacked
from shared.adapters.mongo.documents import key_of
from shared.adapters.mongo.filters import Filters
from shared.adapters.mongo.transient import transient
from shared.adapters.records import idempotency_fields, idempotency_of
from shared.errors import Transient
from shared.execution_rules import LIVE_IDEMPOTENCY, SAVE_IDEMPOTENCY
from shared.ports import IdempotencyRecord, IdempotencyStore


class MongoIdempotency(MongoBacked, IdempotencyStore):
    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        # SAVE_IDEMPOTENCY is one guarded upsert: a new key is inserted and an expired record
        # replaced (of concurrent savers one gets through); a live record refuses it, and the
        # live one answers. MongoDB drops the expired ones itself (a TTL index).
        fields = idempotency_fields(record)
        key = key_of(record.tenant, record.key)
        # Twice at most: the live record can be deleted between the upsert and the read (its
        # create could not be enqueued).
        for _ in range(2):
            if self.write(SAVE_IDEMPOTENCY, {**fields, "now": now}) is not Outcome.REFUSED:
                return idempotency_of(fields), True
            with transient("save_idempotency_record"):
                current = self.idempotency_keys.find_one({"_id": key})
            if current is not None:
                return self.idempotency_from(current), False
        raise Transient(f"save_idempotency_record {key}: changed by another writer, try again")

    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        live = Filters("idempotency_keys", {"now": now}).filter(LIVE_IDEMPOTENCY)
        with transient("get_idempotency_record"):
            document = self.idempotency_keys.find_one({"_id": key_of(tenant, key), **live})
        return None if document is None else self.idempotency_from(document)
