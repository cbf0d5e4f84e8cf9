"""The SQLite store's calendars: one row a (tenant, name), its dates as a JSON list of ISO
dates, replaced by compare-and-set on ``revision``; and the schedules naming one (their
``calendars`` column, a JSON list as their tags)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from datetime import date, datetime

from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.sql import rows_in
from shared.ports import Calendar, CalendarStore
from shared.timeutil import from_epoch_ms, to_epoch_ms


class SqliteCalendars(CalendarStore):
    db: SqliteDatabase

    def get_calendars(self, tenant: str, names: Collection[str]) -> dict[str, Calendar]:
        rows = rows_in(
            self.db.connection(),
            "SELECT * FROM calendars WHERE tenant = ? AND name",
            sorted(set(names)),
            tenant,
        )
        return {row["name"]: _calendar(row) for row in rows}

    def list_calendars(self, tenant: str) -> list[Calendar]:
        rows = (
            self.db.connection()
            .execute("SELECT * FROM calendars WHERE tenant = ? ORDER BY name", (tenant,))
            .fetchall()
        )
        return [_calendar(row) for row in rows]

    def create_calendar(self, calendar: Calendar) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "INSERT INTO calendars (tenant, name, revision, description, dates, updated_ms)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO NOTHING",
                (calendar.tenant, calendar.name, *_columns(calendar)),
            )
            return cursor.rowcount == 1

    def replace_calendar(self, calendar: Calendar) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "UPDATE calendars SET revision = ?, description = ?, dates = ?, updated_ms = ?"
                " WHERE tenant = ? AND name = ? AND revision = ?",
                (*_columns(calendar), calendar.tenant, calendar.name, calendar.revision - 1),
            )
            return cursor.rowcount == 1

    def delete_calendar(self, tenant: str, name: str) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "DELETE FROM calendars WHERE tenant = ? AND name = ?", (tenant, name)
            )
            return cursor.rowcount == 1

    def schedules_naming(self, tenant: str, name: str, limit: int) -> list[str]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT schedule_id FROM schedules WHERE tenant = ?"
                " AND status IN ('active', 'paused')"
                " AND EXISTS (SELECT 1 FROM json_each(calendars) WHERE value = ?)"
                " ORDER BY schedule_id LIMIT ?",
                (tenant, name, limit),
            )
            .fetchall()
        )
        return [row["schedule_id"] for row in rows]

    def recheck_schedules(self, tenant: str, name: str, at: datetime) -> int:
        with self.db.write() as connection:
            cursor = connection.execute(
                "UPDATE schedules SET next_ms = ? WHERE tenant = ? AND status = 'active'"
                " AND next_ms > ?"
                " AND EXISTS (SELECT 1 FROM json_each(calendars) WHERE value = ?)",
                (to_epoch_ms(at), tenant, to_epoch_ms(at), name),
            )
            return cursor.rowcount


def _columns(calendar: Calendar) -> tuple[int, str, str, int]:
    dates = json.dumps([day.isoformat() for day in calendar.dates], separators=(",", ":"))
    return calendar.revision, calendar.description, dates, to_epoch_ms(calendar.updated_at)


def _calendar(row: sqlite3.Row) -> Calendar:
    return Calendar(
        tenant=row["tenant"],
        name=row["name"],
        dates=tuple(date.fromisoformat(day) for day in json.loads(row["dates"])),
        revision=row["revision"],
        updated_at=from_epoch_ms(row["updated_ms"]),
        description=row["description"],
    )
