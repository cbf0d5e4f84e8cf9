"""The signing secrets' port: each tenant's webhook signing secrets, kept whole and sealed."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class StoredSigningSecret:
    """One of a tenant's signing secrets as stored: ``sealed`` is the secret sealed for its
    tenant (``shared.signing``); ``retires_at`` is when it stops signing (``None``: not set).
    The deployment's secret (``SCHEDULER_WEBHOOK_SECRET``) stands in a set, while it retires, as
    ``shared.signing.DEPLOYMENT``: nothing sealed, no creation time."""

    secret_id: str
    sealed: str
    created_at: datetime | None
    retires_at: datetime | None = None


@dataclass(frozen=True)
class SigningSecretSet:
    """A tenant's signing secrets, oldest first, at ``version`` (1 for the first set stored,
    one more at each change)."""

    tenant: str
    version: int
    secrets: tuple[StoredSigningSecret, ...]


class SigningSecretStore(ABC):
    """Each tenant's webhook signing secrets (``shared.signing`` decides what they are; the
    store keeps a tenant's set whole, sealed, and changes it by compare-and-set)."""

    @abstractmethod
    def get_signing_secrets(self, tenants: Collection[str]) -> dict[str, SigningSecretSet]:
        """The stored sets of ``tenants`` by tenant, in one read; a tenant with none is
        absent. Never another tenant's."""

    @abstractmethod
    def put_signing_secrets(self, secrets: SigningSecretSet) -> bool:
        """Store ``secrets`` if the tenant's stored set is at ``secrets.version - 1`` (none
        stored counts as 0): of two writers of the same version, exactly one wins. Returns
        whether it was stored; nothing changes when not."""
