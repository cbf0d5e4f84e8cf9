"""The SQLite store's change history: table ``schedule_changes``, one row a change keyed by its
tenant, schedule and ``seq`` (``shared.ports.ChangeStore``); the actor and the fields as JSON."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from shared.adapters.sqlite.db import SqliteDatabase
from shared.changes import Actor, Change, ChangeAction, fields_of
from shared.formats import change_cursor, parse_change_cursor
from shared.ports import ChangeStore, Page
from shared.timeutil import from_epoch_ms, to_epoch_ms

_INSERT = (
    "INSERT INTO schedule_changes"
    " (tenant, schedule_id, seq, revision, at_ms, action, actor, fields)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, schedule_id, seq) DO NOTHING"
)
_COLUMNS = "tenant, schedule_id, seq, revision, at_ms, action, actor, fields"


class SqliteChanges(ChangeStore):
    db: SqliteDatabase

    def record_changes(self, changes: Sequence[Change]) -> None:
        if not changes:
            return
        with self.db.write() as connection:
            connection.executemany(_INSERT, [_row(change) for change in changes])

    def list_changes(
        self, tenant: str, schedule_id: str, limit: int, cursor: str | None
    ) -> Page[Change]:
        before = parse_change_cursor(cursor) if cursor is not None else None
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_COLUMNS} FROM schedule_changes WHERE tenant = ? AND schedule_id = ?"
                " AND (? IS NULL OR seq < ?) ORDER BY seq DESC LIMIT ?",
                (tenant, schedule_id, before, before, limit + 1),
            )
            .fetchall()
        )
        items = [_change(row) for row in rows[:limit]]
        more = len(rows) > limit
        return Page(items, change_cursor(items[-1].seq) if more else None)

    def purge_changes(self, before: datetime, limit: int) -> int:
        with self.db.write() as connection:
            return connection.execute(
                "DELETE FROM schedule_changes WHERE rowid IN (SELECT rowid FROM schedule_changes"
                " WHERE at_ms < ? ORDER BY at_ms LIMIT ?)",
                (to_epoch_ms(before), limit),
            ).rowcount


def _row(change: Change) -> tuple[object, ...]:
    return (
        change.tenant,
        change.schedule_id,
        change.seq,
        change.revision,
        to_epoch_ms(change.at),
        change.action.value,
        json.dumps(change.actor.to_document(), separators=(",", ":")),
        json.dumps([item.to_document() for item in change.fields], separators=(",", ":")),
    )


def _change(row: sqlite3.Row) -> Change:
    return Change(
        row["tenant"],
        row["schedule_id"],
        row["seq"],
        row["revision"],
        from_epoch_ms(row["at_ms"]),
        ChangeAction(row["action"]),
        Actor.from_document(json.loads(row["actor"])),
        fields_of(json.loads(row["fields"])),
    )
