"""The contract of ``ChangeStore`` (``shared.ports``) over every store adapter (SQLite, mongomock,
nx-27017, and ``SCHEDULER_TEST_MONGO_URL`` if set): kept once, newest first, a page at a time,
a tenant's own; and retention."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta
from typing import Any

import pymongo
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.changes import SYSTEM, Actor, ActorKind, Change, ChangeAction, FieldChange
from shared.ports import Store
from tests.integration.store.test_store_contract import T0, store
from tests.support.harness import TEST_SECRETS
from tests.support.peers import mongo_url_for

__all__ = ["store"]

KEY = Actor(ActorKind.API_KEY, "0123456789ab", "deploy-bot")
SECOND = timedelta(seconds=1)


def change(seq: int, schedule_id: str = "s1", tenant: str = "acme", **changed: Any) -> Change:
    """A pause by a key at ``seq`` seconds after T0, with ``changed`` fields instead."""
    made = Change(
        tenant,
        schedule_id,
        seq,
        seq,
        T0 + seq * SECOND,
        ChangeAction.PAUSE,
        KEY,
        (FieldChange("state", "active", "paused"),),
    )
    return dataclasses.replace(made, **changed)


def test_changes_read_back_newest_first_as_written(store: Store) -> None:
    written = [
        change(1, action=ChangeAction.CREATE, fields=(FieldChange("name", None, "n"),)),
        change(3, revision=None, action=ChangeAction.REPLAY, fields=()),
        change(
            2,
            action=ChangeAction.PATCH,
            fields=(
                FieldChange("payload.headers.Authorization", "********", "********", True),
                FieldChange("tags", ["a"], ["a", "b"]),
                FieldChange("metadata.depth", {"n": 1.5}, None),
            ),
        ),
        change(4, action=ChangeAction.AUTOMATIC_PAUSE, actor=SYSTEM),
    ]
    store.record_changes(written)
    page = store.list_changes("acme", "s1", 10, None)
    assert page.items == sorted(written, key=lambda item: item.seq, reverse=True)
    assert page.next_cursor is None
    assert store.list_changes("acme", "nobody", 10, None).items == []


def test_a_change_written_again_is_kept_once_as_first_written(store: Store) -> None:
    store.record_changes([change(1), change(2)])
    store.record_changes([change(2, action=ChangeAction.DELETE), change(3)])
    store.record_changes([])
    found = store.list_changes("acme", "s1", 10, None).items
    assert [(item.seq, item.action) for item in found] == [
        (3, ChangeAction.PAUSE),
        (2, ChangeAction.PAUSE),
        (1, ChangeAction.PAUSE),
    ]


def test_pages_follow_each_other_to_the_oldest(store: Store) -> None:
    store.record_changes([change(seq) for seq in range(1, 8)])
    seen: list[int] = []
    cursor = None
    while True:
        page = store.list_changes("acme", "s1", 3, cursor)
        seen.extend(item.seq for item in page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [7, 6, 5, 4, 3, 2, 1]
    # A page that ends exactly at the last change says there is no more.
    assert store.list_changes("acme", "s1", 7, None).next_cursor is None


def test_a_tenant_reads_only_its_own_schedules_changes(store: Store) -> None:
    store.record_changes(
        [change(1), change(2, tenant="globex"), change(3, schedule_id="s2"), change(4)]
    )
    assert [item.seq for item in store.list_changes("acme", "s1", 10, None).items] == [4, 1]
    assert [item.seq for item in store.list_changes("globex", "s1", 10, None).items] == [2]
    assert store.list_changes("globex", "s2", 10, None).items == []


def test_retention_removes_the_changes_made_before_it(store: Store) -> None:
    store.record_changes([change(seq) for seq in range(1, 6)])
    purged = store.purge_changes(T0 + 3 * SECOND, 2)
    if isinstance(store, MongoStore):
        # MongoDB expires them itself (a TTL index on ``at``: below).
        assert purged == 0
        return
    assert purged == 2
    assert store.purge_changes(T0 + 3 * SECOND, 2) == 0
    assert [item.seq for item in store.list_changes("acme", "s1", 10, None).items] == [5, 4, 3]


def test_mongodb_expires_changes_as_the_execution_records(request: pytest.FixtureRequest) -> None:
    """A TTL index on ``at`` of the execution retention, changed in place with it."""
    database = f"scheduler_test_{uuid.uuid4().hex[:12]}"
    url = mongo_url_for(request, "nx-27017")
    client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(url)
    try:
        for days in (30, 7):
            wire = MongoStore.from_url(
                url, database, secrets=TEST_SECRETS, execution_retention=timedelta(days=days)
            )
            wire.ensure_indexes()
            wire.close()
            indexes = client[database]["changes"].index_information().values()
            ttl = [index for index in indexes if [key for key, _ in index["key"]] == ["at"]]
            assert len(ttl) == 1
            # nx-27017 answers collMod without changing the index: the first setting stays.
            assert ttl[0]["expireAfterSeconds"] in (30 * 86400, days * 86400)
    finally:
        client.drop_database(database)
        client.close()


def test_a_change_keeps_its_time_to_the_millisecond(store: Store) -> None:
    at = datetime(2026, 3, 8, 7, 30, 0, 123_456, tzinfo=T0.tzinfo)
    store.record_changes([change(1, at=at)])
    [found] = store.list_changes("acme", "s1", 1, None).items
    assert found.at == at.replace(microsecond=123_000)
