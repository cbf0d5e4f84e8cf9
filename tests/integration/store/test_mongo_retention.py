"""MongoDB: execution records expire by a TTL index that follows the retention setting.

Only records that are done (succeeded, failed, skipped) carry ``final_at``, the field the index
counts from, so a record in flight or retrying never expires. A change of the setting changes
the index in place with ``collMod``: on nx-27017, which answers ``collMod`` without applying it,
the command sent is what is checked.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import mongomock_ng
import pymongo
import pytest
from pymongo import monitoring

from shared.adapters.mongo.store import MongoStore
from shared.model import Answer, AttemptOutcome, ExecutionStatus
from tests.integration.store.test_store_contract import MINUTE, SECOND, T0, TENANT, occurrence
from tests.support.harness import TEST_SECRETS
from tests.support.peers import mongo_url_for


def ttl_of(store: MongoStore) -> int | None:
    for index in store.executions.index_information().values():
        if [field for field, _ in index["key"]] == ["final_at"]:
            return int(index["expireAfterSeconds"])
    return None


def test_records_that_are_done_expire_after_retention_and_records_in_flight_stay() -> None:
    # mongomock applies TTL indexes when it reads; the records below finished months ago.
    client: Any = mongomock_ng.MongoClient(tz_aware=True)
    store = MongoStore(
        client, "retention", secrets=TEST_SECRETS, execution_retention=timedelta(days=30)
    )
    store.ensure_indexes()
    assert ttl_of(store) == 30 * 86400
    outcomes = {
        "succeeded": AttemptOutcome(ExecutionStatus.SUCCEEDED, T0 + SECOND, Answer(200), 1.0),
        "failed": AttemptOutcome(ExecutionStatus.FAILED, T0 + SECOND, Answer(404), 1.0),
        "retrying": AttemptOutcome(
            ExecutionStatus.RETRYING, T0 + SECOND, Answer(503), 1.0, None, T0 + MINUTE
        ),
    }
    names = [*outcomes, "running", "skipped", "skipped-then-run"]
    began = store.begin_attempts([occurrence(name) for name in names[:4]], "e", T0, T0 + MINUTE)
    settled = [
        (execution, outcomes[name])
        for name, execution in zip(outcomes, began, strict=False)
        if execution
    ]
    assert store.settle_attempts(settled, "e") == [True] * 3
    store.record_skips(
        [(occurrence("skipped"), "paused"), (occurrence("skipped-then-run"), "paused")], T0
    )
    # A skipped occurrence that runs after all is in flight again: it must not expire.
    assert store.begin_attempts([occurrence("skipped-then-run")], "e", T0, T0 + MINUTE)[0]
    kept = {
        name
        for name in names
        if store.get_execution(TENANT, occurrence(name).occurrence_id) is not None
    }
    assert kept == {"retrying", "running", "skipped-then-run"}
    client.close()


class CollMods(monitoring.CommandListener):
    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == "collMod":
            self.commands.append(dict(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def wire_client(request: pytest.FixtureRequest) -> Iterator[tuple[Any, CollMods, str]]:
    listener = CollMods()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        mongo_url_for(request, "nx-27017"), tz_aware=True, event_listeners=[listener]
    )
    database = f"scheduler_test_{uuid.uuid4().hex[:12]}"
    try:
        yield client, listener, database
    finally:
        client.drop_database(database)
        client.close()


def test_a_changed_retention_changes_the_ttl_index_in_place(
    wire_client: tuple[Any, CollMods, str],
) -> None:
    client, listener, database = wire_client
    MongoStore(
        client, database, secrets=TEST_SECRETS, execution_retention=timedelta(days=30)
    ).ensure_indexes()
    first = MongoStore(
        client, database, secrets=TEST_SECRETS, execution_retention=timedelta(days=30)
    )
    assert ttl_of(first) == 30 * 86400
    first.ensure_indexes()
    assert listener.commands == []  # unchanged: nothing to do
    MongoStore(
        client, database, secrets=TEST_SECRETS, execution_retention=timedelta(days=7)
    ).ensure_indexes()
    # The execution records' index, and the change history's (kept as long as the runs).
    assert [(command["collMod"], command["index"]) for command in listener.commands] == [
        ("executions", {"keyPattern": {"final_at": 1}, "expireAfterSeconds": 7 * 86400}),
        ("changes", {"keyPattern": {"at": 1}, "expireAfterSeconds": 7 * 86400}),
    ]
