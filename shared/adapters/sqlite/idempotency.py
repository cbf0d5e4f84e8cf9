"""The SQLite store's answers to ``Idempotency-Key``s (a forgotten one: ``GuardedWrites``)."""

from __future__ import annotations

from datetime import datetime

from shared.adapters.guarded import Outcome
from shared.adapters.records import idempotency_fields, idempotency_of
from shared.adapters.sqlite import sql
from shared.adapters.sqlite.base import SqliteBacked, write_in
from shared.execution_rules import LIVE_IDEMPOTENCY, SAVE_IDEMPOTENCY
from shared.ports import IdempotencyRecord, IdempotencyStore
from shared.timeutil import to_epoch_ms

_LIVE = sql.Params(LIVE_IDEMPOTENCY, "idempotency_keys")
_FIND = (
    "SELECT * FROM idempotency_keys WHERE tenant = :tenant AND key = :key"
    f" AND {sql.where('idempotency_keys', LIVE_IDEMPOTENCY)}"
)


class SqliteIdempotency(SqliteBacked, IdempotencyStore):
    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        fields = idempotency_fields(record)
        with self.db.write() as connection:
            # Expired records go here, in passing (SQLite keeps no TTL): the index makes it cost
            # what has expired.
            connection.execute(
                "DELETE FROM idempotency_keys WHERE expires_ms <= ?", (to_epoch_ms(now),)
            )
            if (
                write_in(connection, SAVE_IDEMPOTENCY, {**fields, "now": now})
                is not Outcome.REFUSED
            ):
                return idempotency_of(fields), True
            stored = connection.execute(
                "SELECT * FROM idempotency_keys WHERE tenant = ? AND key = ?",
                (record.tenant, record.key),
            ).fetchone()
        return self.idempotency_from(stored), False

    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        bound = {"tenant": tenant, "key": key, **_LIVE.named({"now": now})}
        row = self.db.connection().execute(_FIND, bound).fetchone()
        return None if row is None else self.idempotency_from(row)
