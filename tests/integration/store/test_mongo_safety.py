"""The MongoDB store is safe on a replica set by default; the URL can say otherwise."""

from __future__ import annotations

from pymongo import ReadPreference

from shared.adapters.mongo.store import MongoStore
from tests.support.harness import TEST_SECRETS


def test_writes_wait_for_a_majority_and_reads_go_to_the_primary_by_default() -> None:
    store = MongoStore.from_url(
        "mongodb://127.0.0.1:9/?replicaSet=rs0", "scheduler", secrets=TEST_SECRETS
    )
    try:
        assert store.schedules.write_concern.document == {"w": "majority"}
        assert store.executions.read_preference == ReadPreference.PRIMARY
    finally:
        store.close()


def test_the_url_overrides_the_write_concern_and_the_read_preference() -> None:
    url = "mongodb://127.0.0.1:9/?w=1&readPreference=primaryPreferred&serverSelectionTimeoutMS=50"
    store = MongoStore.from_url(url, "scheduler", secrets=TEST_SECRETS)
    try:
        assert store.schedules.write_concern.document == {"w": 1}
        assert store.executions.read_preference == ReadPreference.PRIMARY_PREFERRED
        assert store.client.options.server_selection_timeout == 0.05
    finally:
        store.close()
