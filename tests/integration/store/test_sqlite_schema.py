"""A database file made by an earlier version opens with the columns added since."""

from __future__ import annotations

from pathlib import Path

from shared.adapters.sqlite_db import SqliteDatabase
from shared.adapters.sqlite_store import SqliteStore
from tests.integration.store.test_store_contract import MINUTE, SECOND, T0, TENANT, create
from tests.support.harness import TEST_SECRETS


def test_a_file_without_sent_ahead_gains_it_and_keeps_its_schedules(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "store.db")
    store = SqliteStore(database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    create(store, "s1")
    with database.write() as connection:
        connection.execute("ALTER TABLE schedules DROP COLUMN sent_ahead")
    database.close()

    database = SqliteDatabase(tmp_path / "store.db")
    store = SqliteStore(database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    try:
        stored = store.get_schedule(TENANT, "s1")
        assert stored is not None
        assert (stored.next_schedule_time, stored.sent_ahead) == (T0, ())
        [claimed] = store.claim_due_schedules(T0, T0, 10, "poller-1", T0 + MINUTE)
        assert store.advance_schedule(claimed, "poller-1", T0 + MINUTE, 1, T0, (T0 + SECOND,))
        advanced = store.get_schedule(TENANT, "s1")
        assert advanced is not None
        assert advanced.sent_ahead == (T0 + SECOND,)
    finally:
        database.close()
