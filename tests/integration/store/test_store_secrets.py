"""Every store adapter seals a payload's secrets in what it writes, reads plain rows written
before sealing existed, and rotates keys: the first key seals, every key opens."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock_ng
import pymongo
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.errors import ConfigurationError
from shared.model import Every, Payload, ScheduleDefinition, Timing, Unit
from shared.ports import ClaimRequest, Store
from shared.secrets import SecretBox, new_secret_key
from shared.timeutil import UTC
from tests.support.peers import MONGO_URL, mongo_url_for

T0 = datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
OLD_KEY, NEW_KEY = new_secret_key(), new_secret_key()
SECRET_HEADER = "Bearer header-secret-1"
SECRET_QUERY = "query-secret-2"
SECRET_URL = "url-secret-3"
SECRET_BODY = "body-secret-4"


def definition(name: str = "report") -> ScheduleDefinition:
    return ScheduleDefinition(
        timing=Timing(timezone="UTC", interval=Every(5, Unit.MINUTE)),
        payload=Payload(
            "POST",
            f"https://hooks.example.com/run?sig={SECRET_URL}",
            headers={"Authorization": SECRET_HEADER},
            query={"token": SECRET_QUERY},
            body={"password": SECRET_BODY},
        ),
        name=name,
    )


@dataclass
class Stored:
    """One database seen through stores with different keys, and its raw definitions."""

    open: Any  # (SecretBox) -> Store
    raw: Any  # () -> the stored definition text of schedule s1
    overwrite: Any  # (text) -> None: replace that text, as an older version wrote it


def sqlite_stored(path: Path) -> Iterator[Stored]:
    database = SqliteDatabase(path)
    store = SqliteStore(database, secrets=SecretBox([OLD_KEY]))
    store.ensure_indexes()

    def raw() -> str:
        row = database.connection().execute("SELECT definition FROM schedules").fetchone()
        return str(row["definition"])

    def overwrite(text: str) -> None:
        with database.write() as connection:
            connection.execute("UPDATE schedules SET definition = ?", (text,))

    try:
        yield Stored(lambda box: SqliteStore(database, secrets=box), raw, overwrite)
    finally:
        database.close()


def mongo_stored(client: Any, database_name: str) -> Iterator[Stored]:
    MongoStore(client, database_name, secrets=SecretBox([OLD_KEY])).ensure_indexes()
    schedules = client[database_name]["schedules"]

    def raw() -> str:
        return str(schedules.find_one({})["definition"])

    def overwrite(text: str) -> None:
        schedules.update_many({}, {"$set": {"definition": text}})

    yield Stored(lambda box: MongoStore(client, database_name, secrets=box), raw, overwrite)


@pytest.fixture(params=["sqlite", "mongomock", "nx-27017", *(["mongo-url"] if MONGO_URL else [])])
def stored(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stored]:
    if request.param == "sqlite":
        yield from sqlite_stored(tmp_path / "store.db")
    elif request.param == "mongomock":
        yield from mongo_stored(mongomock_ng.MongoClient(tz_aware=True), "scheduler_test")
    else:
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            mongo_url_for(request, request.param), tz_aware=True, serverSelectionTimeoutMS=3000
        )
        database_name = f"scheduler_test_{uuid.uuid4().hex[:12]}"
        try:
            yield from mongo_stored(client, database_name)
        finally:
            client.drop_database(database_name)
            client.close()


def write(store: Store, revision: int, name: str = "report") -> None:
    assert store.apply_definition(
        ("acme", "s1", revision, definition(name), T0, T0 - timedelta(minutes=1))
    )


def read(store: Store) -> ScheduleDefinition:
    schedule = store.get_schedule("acme", "s1")
    assert schedule is not None
    return schedule.live_definition


def test_what_the_store_writes_holds_no_secret_and_reads_back_whole(stored: Stored) -> None:
    store = stored.open(SecretBox([OLD_KEY]))
    write(store, 1)
    text = stored.raw()
    for secret in (SECRET_HEADER, SECRET_QUERY, SECRET_URL, SECRET_BODY, "hooks.example.com"):
        assert secret not in text
    assert json.loads(text)["name"] == "report"  # the rest stays readable
    assert read(store) == definition()
    claimed = store.claim_due_schedules(
        ClaimRequest(T0, T0, 10, "poller", T0 + timedelta(minutes=1))
    )
    assert [schedule.live_definition for schedule in claimed] == [definition()]


def test_a_plain_definition_from_before_sealing_reads_and_is_sealed_when_rewritten(
    stored: Stored,
) -> None:
    store = stored.open(SecretBox([OLD_KEY]))
    write(store, 1)
    stored.overwrite(json.dumps(definition().to_document()))
    assert read(store) == definition()
    write(store, 2, "replaced")
    assert SECRET_HEADER not in stored.raw()
    assert read(store) == definition("replaced")


def test_a_new_key_seals_while_the_old_one_still_opens(stored: Stored) -> None:
    write(stored.open(SecretBox([OLD_KEY])), 1)
    rotated = stored.open(SecretBox([NEW_KEY, OLD_KEY]))
    assert read(rotated) == definition()
    write(rotated, 2, "resealed")
    assert read(stored.open(SecretBox([NEW_KEY]))) == definition("resealed")
    with pytest.raises(ConfigurationError, match="SCHEDULER_SECRET_KEYS"):
        read(stored.open(SecretBox([OLD_KEY])))


def test_reseal_rewrites_what_another_key_or_no_key_sealed_so_the_old_key_can_go(
    stored: Stored,
) -> None:
    write(stored.open(SecretBox([OLD_KEY])), 1)
    rotated = stored.open(SecretBox([NEW_KEY, OLD_KEY]))
    assert rotated.reseal_definitions() == 1
    assert read(stored.open(SecretBox([NEW_KEY]))) == definition()
    assert rotated.reseal_definitions() == 0
    stored.overwrite(json.dumps(definition().to_document()))
    assert rotated.reseal_definitions() == 1
    assert SECRET_HEADER not in stored.raw()
    assert read(stored.open(SecretBox([NEW_KEY]))) == definition()
