"""The SQLite store's signing secrets: one row a tenant, its set whole (each secret sealed),
changed by compare-and-set on ``version``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection

from shared.adapters.records import SIGNING_SECRET, signing_secret_fields, signing_secret_of
from shared.adapters.sqlite import codec
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.sql import rows_in
from shared.ports import SigningSecretSet, SigningSecretStore


class SqliteSigningSecrets(SigningSecretStore):
    db: SqliteDatabase

    def get_signing_secrets(self, tenants: Collection[str]) -> dict[str, SigningSecretSet]:
        rows = rows_in(
            self.db.connection(),
            "SELECT tenant, version, secrets FROM signing_secrets WHERE tenant",
            sorted(set(tenants)),
        )
        return {row["tenant"]: _secret_set(row) for row in rows}

    def put_signing_secrets(self, secrets: SigningSecretSet) -> bool:
        entries = [
            codec.columns_of(signing_secret_fields(secret), SIGNING_SECRET)
            for secret in secrets.secrets
        ]
        text = json.dumps(entries, separators=(",", ":"))
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


def _secret_set(row: sqlite3.Row) -> SigningSecretSet:
    entries = json.loads(row["secrets"])
    return SigningSecretSet(
        row["tenant"],
        row["version"],
        tuple(signing_secret_of(codec.fields_of(entry, SIGNING_SECRET)) for entry in entries),
    )
