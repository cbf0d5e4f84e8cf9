"""What the parts of the SQLite store share: the database file, how definitions are sealed, and
a rule applied to one row (``shared.adapters.guarded``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from shared.adapters.guarded import GuardedWrites, Outcome
from shared.adapters.reads import Reads
from shared.adapters.records import TABLES, Fields
from shared.adapters.sqlite.codec import column, fields_of
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.sql import Statements, count, select
from shared.definition_codec import DefinitionCodec
from shared.guards import Remove, Write
from shared.secrets import SecretBox
from shared.store_queries import Query

# Each rule's statements, made once: rules are constants of shared.store_rules.
_STATEMENTS: dict[int, Statements] = {}


def statements(rule: Write | Remove) -> Statements:
    found = _STATEMENTS.get(id(rule))
    if found is None:
        found = _STATEMENTS[id(rule)] = Statements(rule)
    return found


def write_in(connection: sqlite3.Connection, rule: Write, params: Mapping[str, Any]) -> Outcome:
    """``GuardedWrites.write`` in the transaction of ``connection``."""
    made = statements(rule)
    bound = made.params.named(params)
    if connection.execute(made.update, bound).rowcount:
        return Outcome.CHANGED
    if rule.makes_record and connection.execute(made.insert, bound).rowcount:
        return Outcome.MADE
    return Outcome.REFUSED


class SqliteBacked(GuardedWrites, Reads):
    def __init__(self, database: SqliteDatabase, *, secrets: SecretBox) -> None:
        """``secrets`` seals each payload's secret parts in the ``definition`` column."""
        self.db = database
        self.definitions = DefinitionCodec(secrets)

    def write(self, rule: Write, params: Mapping[str, Any]) -> Outcome:
        if not rule.makes_record:
            # One statement, a transaction of its own.
            made = statements(rule)
            changed = self.db.write_one(made.update + " RETURNING 1", made.params.named(params))
            return Outcome.CHANGED if changed else Outcome.REFUSED
        with self.db.write() as connection:
            return write_in(connection, rule, params)

    def write_back(self, rule: Write, params: Mapping[str, Any]) -> Fields | None:
        made = statements(rule)
        rows = self.db.write_one(made.update + " RETURNING *", made.params.named(params))
        return self.fields(rule.table, rows[0]) if rows else None

    def remove(self, rule: Remove, params: Mapping[str, Any]) -> bool:
        made = statements(rule)
        return bool(self.db.write_one(made.remove + " RETURNING 1", made.params.named(params)))

    def fields(self, table: str, stored: Any) -> Fields:
        return fields_of(stored, TABLES[table])

    def read(self, table: str, key: Mapping[str, Any]) -> Fields | None:
        found = " AND ".join(f"{column(name)} = :{name}" for name in key)
        statement = f"SELECT * FROM {table} WHERE {found}"
        row = self.db.connection().execute(statement, dict(key)).fetchone()
        return None if row is None else self.fields(table, row)

    def write_many(self, writes: Sequence[tuple[Write, Mapping[str, Any]]]) -> list[Outcome]:
        # One transaction, one UPDATE each: the write lock is held for the statements only.
        with self.db.write() as connection:
            return [
                Outcome.CHANGED
                if connection.execute(
                    statements(rule).update, statements(rule).params.named(params)
                ).rowcount
                else Outcome.REFUSED
                for rule, params in writes
            ]

    def count(self, query: Query) -> int:
        statement, params = count(query)
        return int(self.db.connection().execute(statement, params).fetchone()[0])

    def select(self, query: Query) -> list[Fields]:
        statement, params = select(query)
        rows = self.db.connection().execute(statement, params).fetchall()
        return [self.fields(query.table, row) for row in rows]

    def stored_definitions(self) -> Iterator[tuple[str, str, str]]:
        after = ("", "")
        while True:
            rows = (
                self.db.connection()
                .execute(
                    "SELECT tenant, schedule_id, definition FROM schedules"
                    " WHERE (tenant, schedule_id) > (?, ?) AND definition IS NOT NULL"
                    " ORDER BY tenant, schedule_id LIMIT 500",
                    after,
                )
                .fetchall()
            )
            if not rows:
                return
            for row in rows:
                yield row["tenant"], row["schedule_id"], row["definition"]
            after = (rows[-1]["tenant"], rows[-1]["schedule_id"])
