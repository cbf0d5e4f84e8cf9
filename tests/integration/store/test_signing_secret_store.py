"""The contract of ``SigningSecretStore`` (``shared.ports``) over every store adapter, and the
rotations of ``shared.signing`` over it: sealed at rest, a tenant's own, never lost to a race."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock_ng
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.ports import SigningSecretSet, Store, StoredSigningSecret
from shared.signing import DEPLOYMENT, RotationConflict, SecretState, SigningSecrets
from shared.timeutil import UTC
from tests.support.clocks import FixedClock
from tests.support.harness import TEST_SECRETS
from tests.support.peers import mongo_url_for

T0 = datetime(2026, 3, 8, 7, 30, 0, 123_000, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.fixture(params=["sqlite", "mongomock", "nx-27017"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    adapter: Store
    if request.param == "nx-27017":
        database_name = f"scheduler_test_{uuid.uuid4().hex[:12]}"
        wire = MongoStore.from_url(
            mongo_url_for(request, request.param), database_name, secrets=TEST_SECRETS
        )
        wire.ensure_indexes()
        yield wire
        wire.client.drop_database(database_name)
        wire.close()
    elif request.param == "sqlite":
        adapter = SqliteStore(SqliteDatabase(tmp_path / "store.db"), secrets=TEST_SECRETS)
        adapter.ensure_indexes()
        yield adapter
        adapter.close()
    else:
        client: Any = mongomock_ng.MongoClient(tz_aware=True)
        adapter = MongoStore(client, "scheduler_test", secrets=TEST_SECRETS)
        yield adapter
        client.close()


def threads_allowed(store: Store) -> None:
    if isinstance(store, MongoStore) and isinstance(store.client, mongomock_ng.MongoClient):
        pytest.skip("mongomock is not thread-safe; the wire-server run covers this")


def a_set(tenant: str, version: int, *ids: str) -> SigningSecretSet:
    return SigningSecretSet(
        tenant,
        version,
        tuple(
            StoredSigningSecret(secret_id, f"sealed-{secret_id}", T0, T0 + HOUR)
            for secret_id in ids
        ),
    )


def test_a_tenant_without_secrets_has_no_set(store: Store) -> None:
    assert store.get_signing_secrets(["acme"]) == {}
    assert store.get_signing_secrets([]) == {}


def test_a_set_reads_back_as_it_was_stored(store: Store) -> None:
    stored = SigningSecretSet(
        "acme",
        1,
        (
            StoredSigningSecret(DEPLOYMENT, "", None, T0 + HOUR),
            StoredSigningSecret("sec_1", "sealed-1", T0, None),
        ),
    )
    assert store.put_signing_secrets(stored)
    assert store.get_signing_secrets(["acme", "acme"]) == {"acme": stored}


def test_a_set_changes_only_from_the_version_before(store: Store) -> None:
    first = a_set("acme", 1, "sec_1")
    assert store.put_signing_secrets(first)
    assert not store.put_signing_secrets(a_set("acme", 1, "sec_other"))
    assert not store.put_signing_secrets(a_set("acme", 3, "sec_skipped"))
    assert store.get_signing_secrets(["acme"]) == {"acme": first}
    second = a_set("acme", 2, "sec_1", "sec_2")
    assert store.put_signing_secrets(second)
    assert store.get_signing_secrets(["acme"]) == {"acme": second}


def test_a_read_of_several_tenants_gives_each_its_own(store: Store) -> None:
    sets = {tenant: a_set(tenant, 1, f"sec_{tenant}") for tenant in ("acme", "globex", "initech")}
    for item in sets.values():
        assert store.put_signing_secrets(item)
    assert store.get_signing_secrets(["acme", "initech", "nobody"]) == {
        "acme": sets["acme"],
        "initech": sets["initech"],
    }
    assert store.get_signing_secrets(["globex"]) == {"globex": sets["globex"]}


def test_of_writers_racing_for_one_version_exactly_one_wins(store: Store) -> None:
    threads_allowed(store)
    assert store.put_signing_secrets(a_set("acme", 1, "sec_1"))
    with ThreadPoolExecutor(8) as threads:
        won = list(
            threads.map(
                lambda n: store.put_signing_secrets(a_set("acme", 2, "sec_1", f"sec_{n}")),
                range(8),
            )
        )
    assert won.count(True) == 1
    winner = won.index(True)
    assert store.get_signing_secrets(["acme"])["acme"] == a_set("acme", 2, "sec_1", f"sec_{winner}")


def rotations(store: Store, clock: FixedClock) -> SigningSecrets:
    return SigningSecrets(store, TEST_SECRETS, clock, deployment_signs=True, overlap=HOUR)


def test_a_rotation_overlaps_then_the_new_secret_is_the_current(store: Store) -> None:
    clock = FixedClock(T0)
    secrets = rotations(store, clock)
    [deployment] = secrets.list("acme")
    assert (deployment.secret_id, deployment.state) == (DEPLOYMENT, SecretState.CURRENT)
    rotation = secrets.rotate("acme")
    assert rotation.secret.startswith("whsec_")
    assert rotation.current_from == T0 + HOUR
    assert [(item.secret_id, item.state) for item in secrets.list("acme")] == [
        (DEPLOYMENT, SecretState.RETIRING),
        (rotation.secret_id, SecretState.NEXT),
    ]
    clock.current += HOUR
    [current] = secrets.list("acme")
    assert (current.secret_id, current.state, current.created_at) == (
        rotation.secret_id,
        SecretState.CURRENT,
        T0,
    )
    # The other tenant still signs with the deployment's secret.
    assert [item.secret_id for item in secrets.list("globex")] == [DEPLOYMENT]


def test_at_most_three_secrets_sign_at_once(store: Store) -> None:
    clock = FixedClock(T0)
    secrets = rotations(store, clock)
    secrets.rotate("acme")
    secrets.rotate("acme")
    with pytest.raises(RotationConflict, match="rotate again from"):
        secrets.rotate("acme")
    clock.current += HOUR
    secrets.rotate("acme")
    assert [item.state for item in secrets.list("acme")] == [
        SecretState.RETIRING,
        SecretState.NEXT,
    ]
    # Retired secrets are dropped from the stored set.
    assert len(store.get_signing_secrets(["acme"])["acme"].secrets) == 2


def test_an_overlap_of_zero_retires_the_old_secret_at_once(store: Store) -> None:
    secrets = rotations(store, FixedClock(T0))
    rotation = secrets.rotate("acme", timedelta(0))
    assert rotation.current_from is None
    assert [(item.secret_id, item.state) for item in secrets.list("acme")] == [
        (rotation.secret_id, SecretState.CURRENT)
    ]


def test_rotations_at_once_keep_every_new_secret(store: Store) -> None:
    threads_allowed(store)
    secrets = rotations(store, FixedClock(T0))
    with ThreadPoolExecutor(2) as threads:
        made = list(threads.map(lambda _: secrets.rotate("acme").secret_id, range(2)))
    stored = [item.secret_id for item in store.get_signing_secrets(["acme"])["acme"].secrets]
    assert sorted(stored) == sorted([DEPLOYMENT, *made])


def test_secrets_are_sealed_for_their_tenant(store: Store) -> None:
    secrets = rotations(store, FixedClock(T0))
    rotation = secrets.rotate("acme")
    [_, new] = store.get_signing_secrets(["acme"])["acme"].secrets
    assert rotation.secret not in json.dumps(new.__dict__, default=str)
    assert TEST_SECRETS.open_text(new.sealed, "signing secret of tenant acme") == rotation.secret
    # Copied into another tenant's set, it opens for none.
    assert TEST_SECRETS.open_text(new.sealed, "signing secret of tenant globex") is None


def test_no_secret_is_written_in_the_clear(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = SqliteStore(SqliteDatabase(path), secrets=TEST_SECRETS)
    store.ensure_indexes()
    made = [rotations(store, FixedClock(T0)).rotate(tenant).secret for tenant in ("a", "b")]
    store.close()
    with sqlite3.connect(path) as connection:
        text = json.dumps(connection.execute("SELECT * FROM signing_secrets").fetchall())
    assert len(text) > 100
    assert not any(secret.removeprefix("whsec_") in text for secret in made)
