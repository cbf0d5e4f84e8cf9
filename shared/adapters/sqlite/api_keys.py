"""The SQLite store's API keys (their hashes)."""

from __future__ import annotations

from shared.adapters.records import API_KEY, api_key_fields
from shared.adapters.sqlite import codec
from shared.adapters.sqlite.base import SqliteBacked
from shared.ports import ApiKey, ApiKeyStore
from shared.store_rules import is_key_id


class SqliteApiKeys(SqliteBacked, ApiKeyStore):
    def add_api_key(self, key: ApiKey) -> bool:
        row = codec.columns_of(api_key_fields(key), API_KEY)
        marks = ", ".join("?" * len(row))
        with self.db.write() as connection:
            cursor = connection.execute(
                f"INSERT INTO api_keys ({', '.join(row)}) VALUES ({marks})"
                " ON CONFLICT (key_hash) DO NOTHING",
                list(row.values()),
            )
            return cursor.rowcount == 1

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        row = (
            self.db.connection()
            .execute("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,))
            .fetchone()
        )
        return None if row is None else self.api_key_from(row)

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        where, params = ("WHERE tenant = ?", (tenant,)) if tenant is not None else ("", ())
        rows = (
            self.db.connection()
            .execute(f"SELECT * FROM api_keys {where} ORDER BY created_ms, key_hash", params)
            .fetchall()
        )
        return [self.api_key_from(row) for row in rows]

    def delete_api_key(self, key_id: str) -> int:
        if not is_key_id(key_id):
            return 0
        with self.db.write() as connection:
            cursor = connection.execute(
                "DELETE FROM api_keys WHERE substr(key_hash, 1, ?) = ?", (len(key_id), key_id)
            )
            return cursor.rowcount
