"""The SQLite store's schema, as numbered migrations.

A database file records each migration applied to it in ``store_migrations``; opening it
applies the ones it lacks, in order, each in one write transaction with its record, so that
processes opening a file together apply each migration once (the write lock decides, then each
reads the version again). A file made by a newer version keeps its migrations: this one applies
none it does not know.

Migration 1 is the schema as it stood when versions began. A file made before then holds the
same tables, perhaps without the columns added later: migration 1 adds those and fills the
search columns of the schedules it finds (their target host is in the sealed definition). Each
change since is a migration of its own: a new step at the end of ``_STEPS`` (its place is its
version), never an edit of one applied before.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shared.adapters.sqlite.db import SqliteDatabase
from shared.errors import ConfigurationError
from shared.schedule_listing import name_key

# What a migration's Python step gets: the stored target host of a definition's JSON text
# (``shared.schedule_listing.target_of`` of its opened URL).
TargetOf = Callable[[str], str]
# A migration's step, run inside the write transaction that records it.
Step = Callable[[sqlite3.Connection, TargetOf], None]

_TABLES = (
    """CREATE TABLE IF NOT EXISTS schedules (
        tenant TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        state_revision INTEGER NOT NULL,
        status TEXT NOT NULL,
        definition TEXT,
        name TEXT NOT NULL DEFAULT '',
        tags TEXT NOT NULL DEFAULT '[]',
        next_ms INTEGER,
        accepted_ms INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        occurrence_count INTEGER NOT NULL DEFAULT 0,
        run_count INTEGER NOT NULL DEFAULT 0,
        superseded_count INTEGER NOT NULL DEFAULT 0,
        failure_count INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        last_run_ms INTEGER,
        last_status TEXT,
        lease_owner TEXT,
        lease_until_ms INTEGER,
        pause_after_failures INTEGER,
        paused_by TEXT,
        paused_ms INTEGER,
        -- For search and order (shared.schedule_listing): the payload URL's host, unsealed,
        -- and the name case folded.
        target TEXT NOT NULL DEFAULT '',
        name_key TEXT NOT NULL DEFAULT '',
        sent_ahead TEXT,
        PRIMARY KEY (tenant, schedule_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS executions (
        tenant TEXT NOT NULL,
        occurrence_id TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        scheduled_ms INTEGER NOT NULL,
        status TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        started_ms INTEGER,
        finished_ms INTEGER,
        http_status INTEGER,
        duration_ms REAL,
        lateness_ms REAL,
        error TEXT,
        next_attempt_ms INTEGER,
        lease_owner TEXT,
        lease_until_ms INTEGER,
        manual INTEGER NOT NULL DEFAULT 0,
        discarded_ms INTEGER,
        attempt_log TEXT,
        superseded INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (tenant, occurrence_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS idempotency_keys (
        tenant TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        next_ms INTEGER,
        timezone TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, key)
    ) WITHOUT ROWID""",
    # Quota reservations: creates accepted and not yet applied (shared.ports.SlotReservation).
    """CREATE TABLE IF NOT EXISTS schedule_slots (
        tenant TEXT NOT NULL,
        schedule_id TEXT NOT NULL,
        revision INTEGER NOT NULL,
        expires_ms INTEGER NOT NULL,
        PRIMARY KEY (tenant, schedule_id, revision)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS api_keys (
        key_hash TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        name TEXT NOT NULL,
        created_ms INTEGER NOT NULL
    ) WITHOUT ROWID""",
)

# The columns a file made before versions may lack, by table, in the order they came.
_LATER_COLUMNS = {
    "executions": (
        ("discarded_ms", "INTEGER"),
        ("attempt_log", "TEXT"),
        ("superseded", "INTEGER NOT NULL DEFAULT 0"),
    ),
    "schedules": (
        ("pause_after_failures", "INTEGER"),
        ("paused_by", "TEXT"),
        ("paused_ms", "INTEGER"),
        ("superseded_count", "INTEGER NOT NULL DEFAULT 0"),
        ("sent_ahead", "TEXT"),
        ("target", "TEXT NOT NULL DEFAULT ''"),
        ("name_key", "TEXT NOT NULL DEFAULT ''"),
    ),
}

_INDEXES = (
    # The poller's claim reads only active schedules in time order: it costs what is due, not
    # what is stored.
    "CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_ms) WHERE status = 'active'",
    # The quota check of every create counts a tenant's live schedules: from this narrow index
    # alone, not from the (wide) rows; about six times faster.
    "CREATE INDEX IF NOT EXISTS schedules_by_tenant_status ON schedules (tenant, status)",
    # A tenant's listing by creation and by name, a page at a time. By next time it is sorted
    # instead: next_ms changes at every advance, which an index would make dearer.
    "CREATE INDEX IF NOT EXISTS schedules_by_creation"
    " ON schedules (tenant, created_ms, schedule_id)",
    "CREATE INDEX IF NOT EXISTS schedules_by_name_key ON schedules (tenant, name_key, schedule_id)",
    # Retention: what purge_expired deletes, oldest first.
    "CREATE INDEX IF NOT EXISTS executions_finished ON executions (finished_ms)"
    " WHERE status IN ('succeeded', 'failed', 'skipped')",
    "CREATE INDEX IF NOT EXISTS schedules_finished ON schedules (updated_ms)"
    " WHERE status IN ('completed', 'deleted')",
    # A schedule's records, newest first; and those in one status (the history's ?status=).
    "CREATE INDEX IF NOT EXISTS executions_by_schedule"
    " ON executions (tenant, schedule_id, scheduled_ms DESC, occurrence_id DESC)",
    "CREATE INDEX IF NOT EXISTS executions_by_status"
    " ON executions (tenant, schedule_id, status, scheduled_ms DESC, occurrence_id DESC)",
    # The dead letters of a tenant, the latest failure first.
    "CREATE INDEX IF NOT EXISTS executions_dead_letters"
    " ON executions (tenant, finished_ms DESC, occurrence_id DESC)"
    " WHERE status = 'failed' AND discarded_ms IS NULL",
    "CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_ms)",
)


def _schema_when_versions_began(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    for statement in _TABLES:
        connection.execute(statement)
    added: set[str] = set()
    for table, columns in _LATER_COLUMNS.items():
        added |= _add_missing_columns(connection, table, columns)
    if {"target", "name_key"} & added:
        _fill_search_columns(connection, target_of)
    for statement in _INDEXES:
        connection.execute(statement)


def _fill_search_columns(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    rows = connection.execute(
        "SELECT tenant, schedule_id, name, definition FROM schedules WHERE definition IS NOT NULL"
    ).fetchall()
    connection.executemany(
        "UPDATE schedules SET target = ?, name_key = ? WHERE tenant = ? AND schedule_id = ?",
        [
            (target_of(row["definition"]), name_key(row["name"]), row["tenant"], row["schedule_id"])
            for row in rows
        ],
    )


def _signing_secrets(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # A tenant's signing secrets, whole (JSON: each sealed), changed by compare-and-set on
    # ``version`` (shared.adapters.sqlite.signing_secrets).
    connection.execute(
        """CREATE TABLE IF NOT EXISTS signing_secrets (
            tenant TEXT PRIMARY KEY,
            version INTEGER NOT NULL,
            secrets TEXT NOT NULL
        ) WITHOUT ROWID"""
    )


def _key_roles(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # Each key's role (shared.ports.keys.Role); a key made before roles could do everything.
    _add_missing_columns(connection, "api_keys", (("role", "TEXT NOT NULL DEFAULT 'admin'"),))


def _add_missing_columns(
    connection: sqlite3.Connection, table: str, columns: Sequence[tuple[str, str]]
) -> set[str]:
    """Each column the table lacks (a file whose record of versions was lost runs every step
    again, so it may have them); the names of those it added."""
    present = {row["name"] for row in connection.execute(f"PRAGMA table_info({table})")}
    added = set()
    for column, kind in columns:
        if column not in present:
            connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            added.add(column)
    return added


def _overlap_marker(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # A schedule's overlap marker (``shared.overlap_rules.HOLD_OVERLAP``): the occurrence in
    # progress and the one waiting for it, each with the end of its hold.
    _add_missing_columns(
        connection,
        "schedules",
        (
            ("overlap_holder", "TEXT"),
            ("overlap_until_ms", "INTEGER"),
            ("overlap_waiting", "TEXT"),
            ("overlap_waiting_until_ms", "INTEGER"),
        ),
    )


def _pause_with_intent(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # A pause's end, note and author (``shared.store_rules.RESUME_AT_UNTIL``), and the index
    # the poller finds the pauses that ended by.
    _add_missing_columns(
        connection,
        "schedules",
        (("paused_until_ms", "INTEGER"), ("pause_note", "TEXT"), ("pause_set_by", "TEXT")),
    )
    connection.execute(
        "CREATE INDEX IF NOT EXISTS schedules_pause_ends ON schedules (paused_until_ms)"
        " WHERE status = 'paused'"
    )


def _late_checks(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # A schedule's lateness cursor (shared.lateness), and the checks' search of the few
    # schedules that have one.
    _add_missing_columns(connection, "schedules", (("late_check_ms", "INTEGER"),))
    connection.execute(
        "CREATE INDEX IF NOT EXISTS schedules_late_check ON schedules (late_check_ms)"
        " WHERE late_check_ms IS NOT NULL"
    )


def _priorities(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # Each schedule's priority beside its definition, for the claim's order (BY_PRIORITY of
    # shared.store_rules), filled from the definition (where priority is never sealed).
    priority = ("priority", "INTEGER NOT NULL DEFAULT 5")
    if _add_missing_columns(connection, "schedules", (priority,)):
        connection.execute(
            "UPDATE schedules SET priority = coalesce(json_extract(definition, '$.priority'), 5)"
            " WHERE definition IS NOT NULL"
        )


def _bulk_answers(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # What a bulk operation's page answered (shared.ports.IdempotencyRecord.answer), JSON text.
    _add_missing_columns(connection, "idempotency_keys", (("answer", "TEXT"),))


def _calendars(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # Each tenant's business calendars (shared.adapters.sqlite.calendars): the dates as JSON.
    connection.execute(
        """CREATE TABLE IF NOT EXISTS calendars (
            tenant TEXT NOT NULL,
            name TEXT NOT NULL,
            revision INTEGER NOT NULL,
            description TEXT NOT NULL DEFAULT '',
            dates TEXT NOT NULL,
            updated_ms INTEGER NOT NULL,
            PRIMARY KEY (tenant, name)
        ) WITHOUT ROWID"""
    )


def _schedule_calendars(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # The calendars a schedule names (JSON, as its tags), which a calendar's change and delete
    # look for; a schedule stored before names none.
    _add_missing_columns(connection, "schedules", (("calendars", "TEXT NOT NULL DEFAULT '[]'"),))


def _skips(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # The occurrences a schedule's owner asked to skip (``shared.store_rules.SET_SKIPS``).
    _add_missing_columns(connection, "schedules", (("skips", "TEXT"), ("skips_version", "INTEGER")))


def _schedule_changes(connection: sqlite3.Connection, target_of: TargetOf) -> None:
    # Each schedule's change history (shared.adapters.sqlite.changes), newest first by its key;
    # retention deletes the oldest first (at_ms).
    connection.execute(
        """CREATE TABLE IF NOT EXISTS schedule_changes (
            tenant TEXT NOT NULL,
            schedule_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            revision INTEGER,
            at_ms INTEGER NOT NULL,
            action TEXT NOT NULL,
            actor TEXT NOT NULL,
            fields TEXT NOT NULL,
            PRIMARY KEY (tenant, schedule_id, seq)
        )"""
    )
    connection.execute(
        "CREATE INDEX IF NOT EXISTS schedule_changes_made ON schedule_changes (at_ms)"
    )


@dataclass(frozen=True)
class Migration:
    """One step of the schema: ``apply`` runs inside the write transaction that records it."""

    version: int
    name: str
    apply: Step


# The steps in order, the first applied first: a step's version is its place here (from 1).
_STEPS: tuple[tuple[str, Step], ...] = (
    ("the schema when versions began", _schema_when_versions_began),
    ("each tenant's signing secrets", _signing_secrets),
    ("each API key's role", _key_roles),
    ("a schedule's overlap marker", _overlap_marker),
    ("each schedule's lateness cursor", _late_checks),
    ("each schedule's priority beside its definition", _priorities),
    ("the answers of bulk operations", _bulk_answers),
    ("each tenant's business calendars", _calendars),
    ("the calendars each schedule names", _schedule_calendars),
    ("a pause's end, note and author", _pause_with_intent),
    ("the occurrences a schedule skips", _skips),
    ("each schedule's change history", _schedule_changes),
)

MIGRATIONS = tuple(
    Migration(version, name, apply) for version, (name, apply) in enumerate(_STEPS, start=1)
)

_RECORD_TABLE = """CREATE TABLE IF NOT EXISTS store_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_ms INTEGER NOT NULL
)"""


def schema_version(connection: sqlite3.Connection) -> int:
    """The last migration applied to the file (0: none, or a file made before versions)."""
    try:
        row = connection.execute("SELECT max(version) AS version FROM store_migrations").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return 0
    return int(row["version"] or 0)


def migrate(
    database: SqliteDatabase,
    target_of: TargetOf,
    migrations: Sequence[Migration] = MIGRATIONS,
) -> int:
    """Apply the migrations the file lacks; returns the file's version after.

    Reads the version first without the write lock: a file that is up to date costs one read.
    """
    latest = migrations[-1].version if migrations else 0
    if [migration.version for migration in migrations] != list(range(1, latest + 1)):
        raise ConfigurationError("store migrations must be numbered 1, 2, 3 … in order")
    if schema_version(database.connection()) >= latest:
        return schema_version(database.connection())
    with database.write() as connection:
        connection.execute(_RECORD_TABLE)
        current = schema_version(connection)
        for migration in migrations[current:]:
            migration.apply(connection, target_of)
            connection.execute(
                "INSERT INTO store_migrations (version, name, applied_ms) VALUES (?, ?, ?)",
                (migration.version, migration.name, int(time.time() * 1000)),
            )
        return max(current, latest)
