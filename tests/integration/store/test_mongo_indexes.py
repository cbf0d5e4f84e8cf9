"""The MongoDB store's versioned indexes: a new database gets each once, an up-to-date one costs
one read, one made before versions is brought up to date, and processes starting together on
one database each start without error, leaving each index once."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from multiprocessing import get_context
from multiprocessing.synchronize import Barrier
from typing import Any

import mongomock_ng
import pymongo
import pytest
from pymongo import ASCENDING, monitoring

from shared.adapters.mongo.indexes import (
    STEPS,
    DropIndexes,
    FillPriorities,
    Index,
    Versioned,
    ensure_indexes,
    indexes_version,
)
from shared.adapters.mongo.store import MongoStore
from shared.ports import ClaimRequest
from tests.integration.store.test_store_contract import MINUTE, T0, TENANT, definition
from tests.support.harness import TEST_SECRETS
from tests.support.peers import MONGO_URL, mongo_url_for

LATEST = STEPS[-1].version


class Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names[event.command_name] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture(params=["mongomock", "nx-27017", *(["mongo-url"] if MONGO_URL else [])])
def database(request: pytest.FixtureRequest) -> Iterator[tuple[Any, str, Commands]]:
    commands = Commands()
    name = f"scheduler_test_{uuid.uuid4().hex[:12]}"
    client: Any
    if request.param == "mongomock":
        client = mongomock_ng.MongoClient(tz_aware=True)
    else:
        url = mongo_url_for(request, request.param)
        client = pymongo.MongoClient(url, tz_aware=True, event_listeners=[commands])
    try:
        yield client, name, commands
    finally:
        client.drop_database(name)
        client.close()


def index_keys(client: Any, name: str, collection: str) -> list[list[str]]:
    indexes = client[name][collection].index_information().values()
    return [[key for key, _ in index["key"]] for index in indexes]


def listed_indexes() -> list[tuple[str, list[str]]]:
    return [
        (item.step.collection, [key for key, _ in item.step.keys])
        for item in STEPS
        if isinstance(item.step, Index)
    ]


def test_a_new_database_gets_every_index_of_the_list_once(
    database: tuple[Any, str, Commands],
) -> None:
    client, name, _ = database
    MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
    assert indexes_version(client[name]) == LATEST
    for collection, keys in listed_indexes():
        assert index_keys(client, name, collection).count(keys) == 1, (collection, keys)
    [dropped] = [item.step for item in STEPS if isinstance(item.step, DropIndexes)]
    for keys in dropped.keys:
        assert list(keys) not in index_keys(client, name, dropped.collection)


def test_a_store_started_on_an_up_to_date_database_sends_one_read(
    database: tuple[Any, str, Commands],
) -> None:
    client, name, commands = database
    MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
    commands.names.clear()
    MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
    if isinstance(client, pymongo.MongoClient):
        assert commands.names == {"find": 1}
    assert indexes_version(client[name]) == LATEST


def test_a_database_made_before_versions_is_brought_up_to_date(
    database: tuple[Any, str, Commands],
) -> None:
    client, name, _ = database
    # As the version before made it: the same indexes, one since replaced, and its own mark
    # of the search fields filled; no version.
    for item in STEPS:
        if isinstance(item.step, Index):
            item.step.apply(client[name], str)
    client[name]["schedules"].create_index([("tenant", ASCENDING), ("name", ASCENDING)])
    client[name]["migrations"].insert_one({"_id": "schedules.search_fields", "done": True})
    MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
    assert indexes_version(client[name]) == LATEST
    assert ["tenant", "name"] not in index_keys(client, name, "schedules")
    for collection, keys in listed_indexes():
        assert index_keys(client, name, collection).count(keys) == 1, (collection, keys)


def test_a_step_added_later_applies_once_and_an_older_list_leaves_the_database(
    database: tuple[Any, str, Commands],
) -> None:
    client, name, _ = database
    later = (*STEPS, Versioned(LATEST + 1, Index("api_keys", (("name", ASCENDING),))))
    assert ensure_indexes(client[name], str, later) == LATEST + 1
    assert ensure_indexes(client[name], str, later) == LATEST + 1
    assert index_keys(client, name, "api_keys").count(["name"]) == 1
    assert ensure_indexes(client[name], str) == LATEST + 1
    assert indexes_version(client[name]) == LATEST + 1


def _start(url: str, name: str, barrier: Barrier) -> int:
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url, tz_aware=True)
    try:
        barrier.wait()
        MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
        return indexes_version(client[name])
    finally:
        client.close()


def test_processes_starting_together_leave_each_index_once(request: pytest.FixtureRequest) -> None:
    url = mongo_url_for(request, "nx-27017")
    name = f"scheduler_test_{uuid.uuid4().hex[:12]}"
    context = get_context("spawn")
    with context.Manager() as manager:
        barrier = manager.Barrier(4)
        with context.Pool(4) as pool:
            versions = pool.starmap(_start, [(url, name, barrier)] * 4)
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url, tz_aware=True)
    try:
        assert versions == [LATEST] * 4
        for collection, keys in listed_indexes():
            assert index_keys(client, name, collection).count(keys) == 1, (collection, keys)
    finally:
        client.drop_database(name)
        client.close()


def test_the_schedules_stored_before_priorities_were_kept_get_theirs(
    database: tuple[Any, str, Commands],
) -> None:
    """The claim takes the highest priority first (issue 27 item 4) by the priority kept
    beside the definition: a schedule stored before gets it from its definition."""
    client, name, _ = database
    store = MongoStore(client, name, secrets=TEST_SECRETS)
    store.ensure_indexes()
    for schedule_id, priority, due in (("low", 2, T0 - MINUTE), ("high", 8, T0)):
        store.apply_definition((TENANT, schedule_id, 1, definition(priority=priority), due, T0))
    client[name]["schedules"].update_many({}, {"$unset": {"priority": ""}})
    [fill] = [item.version for item in STEPS if isinstance(item.step, FillPriorities)]
    client[name]["migrations"].update_one({"_id": "indexes"}, {"$set": {"version": fill - 1}})
    MongoStore(client, name, secrets=TEST_SECRETS).ensure_indexes()
    priorities = {d["schedule_id"]: d["priority"] for d in client[name]["schedules"].find()}
    assert priorities == {"low": 2, "high": 8}
    claimed = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert [schedule.schedule_id for schedule in claimed] == ["high", "low"]
