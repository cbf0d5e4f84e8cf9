"""The SQLite store's signing secrets: one row a tenant, its set whole (each secret sealed),
changed by compare-and-set on ``version``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

from shared.adapters.sqlite.db import SqliteDatabase
from shared.ports import SigningSecretSet, SigningSecretStore, StoredSigningSecret
from shared.timeutil import from_epoch_ms, maybe, to_epoch_ms

# Tenants per statement at most (SQLite's bound parameters).
_CHUNK = 500


class SqliteSigningSecrets(SigningSecretStore):
    db: SqliteDatabase

    def get_signing_secrets(self, tenants: Collection[str]) -> dict[str, SigningSecretSet]:
        wanted = sorted(set(tenants))
        found: dict[str, SigningSecretSet] = {}
        connection = self.db.connection()
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            rows = connection.execute(
                "SELECT tenant, version, secrets FROM signing_secrets"
                f" WHERE tenant IN ({', '.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            for row in rows:
                found[row["tenant"]] = _secret_set(row)
        return found

    def put_signing_secrets(self, secrets: SigningSecretSet) -> bool:
        text = json.dumps([_fields(secret) for secret in secrets.secrets], separators=(",", ":"))
        with self.db.write() as connection:
            if secrets.version == 1:
                cursor = connection.execute(
                    "INSERT INTO signing_secrets (tenant, version, secrets) VALUES (?, 1, ?)"
                    " ON CONFLICT (tenant) DO NOTHING",
                    (secrets.tenant, text),
                )
            else:
                cursor = connection.execute(
                    "UPDATE signing_secrets SET version = ?, secrets = ?"
                    " WHERE tenant = ? AND version = ?",
                    (secrets.version, text, secrets.tenant, secrets.version - 1),
                )
            return cursor.rowcount == 1


def _fields(secret: StoredSigningSecret) -> dict[str, str | int | None]:
    return {
        "id": secret.secret_id,
        "sealed": secret.sealed,
        "created_ms": maybe(to_epoch_ms, secret.created_at),
        "retires_ms": maybe(to_epoch_ms, secret.retires_at),
    }


def _secret_set(row: sqlite3.Row) -> SigningSecretSet:
    return SigningSecretSet(
        row["tenant"],
        row["version"],
        tuple(
            StoredSigningSecret(
                item["id"],
                item["sealed"],
                maybe(from_epoch_ms, item["created_ms"]),
                maybe(from_epoch_ms, item["retires_ms"]),
            )
            for item in json.loads(row["secrets"])
        ),
    )
