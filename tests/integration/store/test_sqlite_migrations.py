"""The SQLite store's numbered migrations: files made by earlier versions open with their records,
processes opening a file together migrate it once, and an up-to-date file costs one read."""

from __future__ import annotations

import sqlite3
from multiprocessing import get_context
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from shared.adapters.sqlite import migrations
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.migrations import MIGRATIONS, Migration, migrate, schema_version
from shared.adapters.sqlite.store import SqliteStore
from shared.definition_codec import DefinitionCodec
from shared.errors import ConfigurationError, Transient
from shared.model import Answer, AttemptOutcome, ExecutionStatus, ScheduleStatus
from shared.ports import (
    ClaimRequest,
    DeadLetterRequest,
    Role,
    ScheduleFilter,
    SlotReservation,
    StateChange,
)
from shared.timeutil import to_epoch_ms
from tests.integration.store.test_store_contract import (
    MINUTE,
    SECOND,
    T0,
    TENANT,
    definition,
    occurrence,
)
from tests.support.harness import TEST_SECRETS
from tests.support.sqlite_before_versions import OLDEST_SCHEMA, PREVIOUS_SCHEMA

LATEST = MIGRATIONS[-1].version


def old_file(path: Path, schema: str) -> None:
    """A file as the earlier code made it, with a schedule and a running attempt in it."""
    connection = sqlite3.connect(path)
    connection.executescript(schema)
    sealed = DefinitionCodec(TEST_SECRETS).encode(definition(name="Legacy Job"))
    ms = to_epoch_ms(T0)
    connection.execute(
        "INSERT INTO schedules (tenant, schedule_id, revision, state_revision, status,"
        " definition, name, tags, next_ms, accepted_ms, created_ms, updated_ms)"
        " VALUES (?, 'old', 1, 0, 'active', ?, 'Legacy Job', '[]', ?, ?, ?, ?)",
        (TENANT, sealed, ms, ms, ms, ms),
    )
    if schema is PREVIOUS_SCHEMA:
        # That version wrote the search columns with the schedule.
        connection.execute(
            "UPDATE schedules SET target = 'hooks.example.com', name_key = 'legacy job'"
        )
    connection.execute(
        "INSERT INTO executions (tenant, occurrence_id, schedule_id, scheduled_ms, status,"
        " attempts, revision, started_ms, lease_owner, lease_until_ms)"
        " VALUES (?, ?, 'old', ?, 'running', 1, 1, ?, 'executor-1', ?)",
        (TENANT, occurrence("old").occurrence_id, ms, ms, ms + 60_000),
    )
    connection.execute(
        "INSERT INTO api_keys (key_hash, tenant, name, created_ms) VALUES (?, ?, 'ci', ?)",
        ("ab" * 32, TENANT, ms),
    )
    connection.commit()
    connection.close()


def opened(path: Path) -> tuple[SqliteDatabase, SqliteStore]:
    database = SqliteDatabase(path)
    store = SqliteStore(database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    return database, store


@pytest.mark.parametrize("schema", [PREVIOUS_SCHEMA, OLDEST_SCHEMA], ids=["previous", "oldest"])
def test_a_file_made_before_versions_opens_migrated_with_its_records(
    tmp_path: Path, schema: str
) -> None:
    old_file(tmp_path / "store.db", schema)
    database, store = opened(tmp_path / "store.db")
    try:
        assert schema_version(database.connection()) == LATEST
        stored = store.get_schedule(TENANT, "old")
        assert stored is not None and stored.definition == definition(name="Legacy Job")
        assert stored.sent_ahead == () and stored.superseded_count == 0
        # The search columns, filled from the sealed definition where the file lacked them.
        for search in ("legacy job", "hooks.example.com"):
            found = store.list_schedules(TENANT, ScheduleFilter(search=search), 10, None)
            assert [item.schedule_id for item in found.items] == ["old"], search
        # A key made before roles could do everything: it keeps doing so, as an admin key.
        old_key = store.find_api_key("ab" * 32)
        assert old_key is not None and old_key.role is Role.ADMIN
        # The attempt begun before the file had attempt logs ends into one.
        running = store.get_execution(TENANT, occurrence("old").occurrence_id)
        assert running is not None and running.status is ExecutionStatus.RUNNING
        failed = AttemptOutcome(ExecutionStatus.FAILED, T0 + SECOND, answer=Answer(500))
        assert store.finish_attempt(running, "executor-1", failed)
        record = store.get_execution(TENANT, occurrence("old").occurrence_id)
        assert record is not None
        assert [(a.number, a.status) for a in record.attempt_log] == [(1, ExecutionStatus.FAILED)]
        assert [
            item.occurrence_id
            for item in store.list_dead_letters(DeadLetterRequest(TENANT, 10, None)).items
        ] == [occurrence("old").occurrence_id]
        # What later versions added works on it: what was sent ahead, pauses, quota slots.
        [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
        assert store.advance_schedule(claimed, "poller-1", T0 + MINUTE, 1, T0, (T0 + SECOND,))
        assert store.apply_state(StateChange(TENANT, "old", 5, ScheduleStatus.PAUSED, None, T0))
        slot = SlotReservation(TENANT, "new", 1, T0 + MINUTE)
        assert store.reserve_schedule_slot(slot, 2, T0) is None
        again = store.get_schedule(TENANT, "old")
        assert again is not None and again.sent_ahead == (T0 + SECOND,)
    finally:
        database.close()
    # Opened again: nothing more to do, the records as they were.
    database, store = opened(tmp_path / "store.db")
    try:
        rows = database.connection().execute("SELECT version FROM store_migrations").fetchall()
        assert [row["version"] for row in rows] == list(range(1, LATEST + 1))
        assert store.get_schedule(TENANT, "old") is not None
    finally:
        database.close()


def _open_at_once(path: str, barrier: Barrier) -> int:
    barrier.wait()
    database, _ = opened(Path(path))
    try:
        return schema_version(database.connection())
    finally:
        database.close()


def test_processes_opening_a_new_file_together_apply_each_migration_once(tmp_path: Path) -> None:
    context = get_context("spawn")
    path = str(tmp_path / "store.db")
    with context.Manager() as manager:
        barrier = manager.Barrier(4)
        with context.Pool(4) as pool:
            versions = pool.starmap(_open_at_once, [(path, barrier)] * 4)
    assert versions == [LATEST] * 4
    database = SqliteDatabase(Path(path))
    try:
        rows = database.connection().execute("SELECT version FROM store_migrations").fetchall()
        assert [row["version"] for row in rows] == list(range(1, LATEST + 1))
    finally:
        database.close()


def _add_note(connection: sqlite3.Connection, _: object) -> None:
    connection.execute("ALTER TABLE api_keys ADD COLUMN note TEXT")


def test_a_new_migration_applies_once_and_an_older_version_leaves_a_newer_file(
    tmp_path: Path,
) -> None:
    database, _ = opened(tmp_path / "store.db")
    later = (*MIGRATIONS, Migration(LATEST + 1, "a note beside each key", _add_note))
    try:
        assert migrate(database, str, later) == LATEST + 1
        assert migrate(database, str, later) == LATEST + 1
        columns = {
            row["name"] for row in database.connection().execute("PRAGMA table_info(api_keys)")
        }
        assert "note" in columns
        # The version before that one opens the file as it is.
        assert migrate(database, str, MIGRATIONS) == LATEST + 1
    finally:
        database.close()
    with pytest.raises(ConfigurationError, match="numbered"):
        migrate(database, str, (MIGRATIONS[0], Migration(LATEST + 2, "a gap", _add_note)))


def test_an_up_to_date_file_is_opened_without_the_write_lock(tmp_path: Path) -> None:
    database, _ = opened(tmp_path / "store.db")
    database.close()
    holder = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        busy = SqliteDatabase(tmp_path / "store.db", busy_timeout_seconds=0.3)
        try:
            assert migrate(busy, str) == LATEST
            with pytest.raises(Transient), busy.write():
                pass
        finally:
            busy.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_the_migration_of_priorities_gives_the_schedules_stored_before_theirs(
    tmp_path: Path,
) -> None:
    """The claim takes the highest priority first (issue 27 item 4): schedules stored before
    the priority was kept beside the definition get theirs from it."""
    [before] = [m.version - 1 for m in MIGRATIONS if m.apply is migrations._priorities]
    database = SqliteDatabase(tmp_path / "store.db")
    try:
        assert migrate(database, str, MIGRATIONS[:before]) == before
        codec = DefinitionCodec(TEST_SECRETS)
        ms = to_epoch_ms(T0)
        with database.write() as connection:
            for schedule_id, priority, due in (("low", 2, ms - 60_000), ("high", 8, ms)):
                connection.execute(
                    "INSERT INTO schedules (tenant, schedule_id, revision, state_revision,"
                    " status, definition, name, tags, next_ms, accepted_ms, created_ms,"
                    " updated_ms) VALUES (?, ?, 1, 0, 'active', ?, '', '[]', ?, ?, ?, ?)",
                    (
                        TENANT,
                        schedule_id,
                        codec.encode(definition(priority=priority)),
                        due,
                        ms,
                        ms,
                        ms,
                    ),
                )
        store = SqliteStore(database, secrets=TEST_SECRETS)
        store.ensure_indexes()
        claimed = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
        assert [schedule.schedule_id for schedule in claimed] == ["high", "low"]
    finally:
        database.close()
