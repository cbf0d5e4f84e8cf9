"""The executor's signers (``shared.tenant_signers``): one read per batch of stale tenants at
most, a secret retired at its time from what was read, the deployment's secret for a tenant
that never rotated."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook

from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.ports import SigningSecretSet
from shared.signing import SigningSecrets
from shared.tenant_signers import TenantSigners
from shared.timeutil import UTC
from tests.support.clocks import FixedClock
from tests.support.harness import TEST_SECRETS

T0 = datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
DEPLOYMENT_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class CountingStore(SqliteStore):
    reads = 0

    def get_signing_secrets(self, tenants: Collection[str]) -> dict[str, SigningSecretSet]:
        self.reads += 1
        return super().get_signing_secrets(tenants)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CountingStore]:
    store = CountingStore(SqliteDatabase(tmp_path / "store.db"), secrets=TEST_SECRETS)
    store.ensure_indexes()
    yield store
    store.close()


def verifies(secret: str, signature: str, now: datetime) -> bool:
    headers = {"webhook-id": "m", "webhook-timestamp": str(int(now.timestamp()))}
    try:
        Webhook(secret).verify("{}", {**headers, "webhook-signature": signature})
    except Exception:
        return False
    return True


def test_a_batch_costs_one_read_and_none_until_the_bound(store: CountingStore) -> None:
    signers = TenantSigners(store, TEST_SECRETS, DEPLOYMENT_SECRET, FixedClock(T0), 0.2)
    signers.refresh(["a", "b", "c", "a"])
    signers.refresh(["a", "b"])
    assert store.reads == 1
    time.sleep(0.25)
    signers.refresh(["a", "b", "d"])
    assert store.reads == 2


def test_the_overlap_signs_with_both_then_the_new_alone(store: CountingStore) -> None:
    clock = FixedClock(T0)
    rotation = SigningSecrets(
        store, TEST_SECRETS, clock, deployment_signs=True, overlap=timedelta(minutes=5)
    ).rotate("acme")
    store.reads = 0
    signers = TenantSigners(store, TEST_SECRETS, DEPLOYMENT_SECRET, clock, 60.0)
    signers.refresh(["acme", "globex"])
    now = datetime.now(UTC)
    signature = signers.signer("acme").sign("m", now, "{}")  # type: ignore[union-attr]
    assert verifies(DEPLOYMENT_SECRET, signature, now) and verifies(rotation.secret, signature, now)
    clock.current = T0 + timedelta(minutes=5)
    signature = signers.signer("acme").sign("m", now, "{}")  # type: ignore[union-attr]
    assert verifies(rotation.secret, signature, now)
    assert not verifies(DEPLOYMENT_SECRET, signature, now)
    # No read was needed to retire the old one; the other tenant keeps the deployment's.
    assert store.reads == 1
    other = signers.signer("globex").sign("m", now, "{}")  # type: ignore[union-attr]
    assert verifies(DEPLOYMENT_SECRET, other, now) and not verifies(rotation.secret, other, now)


def test_without_any_secret_calls_go_unsigned(store: CountingStore) -> None:
    signers = TenantSigners(store, TEST_SECRETS, "", FixedClock(T0), 60.0)
    signers.refresh(["acme"])
    assert signers.signer("acme") is None
