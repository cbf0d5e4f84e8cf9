"""The ports of what the API keeps by key: idempotency records and API keys."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

# The characters of a key's hash that name it in listings and the change history.
KEY_ID_LENGTH = 12


class Role(StrEnum):
    """What an API key may do, each role all the one before it may and more: ``read`` reads,
    ``write`` also changes schedules and runs, ``admin`` also manages what the whole tenant
    shares (signing secrets). Keys made before roles are ``admin``: they could do everything."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"

    def grants(self, needed: Role) -> bool:
        """Whether a key of this role may do what needs ``needed``."""
        order = list(Role)
        return order.index(self) >= order.index(needed)


# Who a caller without a key is, in what it changes (``pause_set_by``).
NO_KEY = "no key"


@dataclass(frozen=True)
class ApiKey:
    """An API key as stored: only its SHA-256 (``key_hash``, hex), never the key itself.

    ``key_id`` is the public handle of a key (for listing and revoking): a prefix of the hash.
    """

    key_hash: str
    tenant: str
    name: str
    created_at: datetime
    role: Role = Role.ADMIN

    @property
    def key_id(self) -> str:
        return self.key_hash[:KEY_ID_LENGTH]


@dataclass(frozen=True)
class IdempotencyRecord:
    """What a create answered for an ``Idempotency-Key``, kept until ``expires_at``.

    ``fingerprint`` identifies the request (method, path and body); a repeat with the same key and
    fingerprint gets the same answer, a repeat with another fingerprint is a conflict. A bulk
    operation's page (``POST /schedules/bulk``) names no schedule (``schedule_id`` empty): its
    answer is ``answer``, JSON text.
    """

    tenant: str
    key: str
    fingerprint: str
    schedule_id: str
    revision: int
    next_schedule_time: datetime | None
    timezone: str
    created_at: datetime
    expires_at: datetime
    answer: str | None = None


class IdempotencyStore(ABC):
    """What the API answered to each ``Idempotency-Key``, keyed by ``(tenant, key)`` and kept
    until the record's ``expires_at``: a repeated create gets the same answer."""

    @abstractmethod
    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        """Store ``record`` unless a live one (``expires_at > now``) has its ``(tenant, key)``.

        Atomic: of concurrent saves of one key, exactly one wins. Returns the record in force and
        whether it is the one given (``True``) or one stored before (``False``). An expired
        record is replaced as if absent.
        """

    @abstractmethod
    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        """The live record of ``(tenant, key)``; ``None`` if there is none or it expired."""

    @abstractmethod
    def delete_idempotency_record(self, tenant: str, key: str, fingerprint: str) -> bool:
        """Forget a record, only if it still has ``fingerprint`` (undo a save whose create
        could not be enqueued). Returns whether a record was deleted."""

    @abstractmethod
    def keep_idempotency_answer(
        self, tenant: str, key: str, fingerprint: str, answer: str, expires_at: datetime
    ) -> bool:
        """Give the record a request saved without an answer (its claim of the key, before its
        work) the work's ``answer``, kept until ``expires_at``; only if the record still has
        ``fingerprint`` and no answer. Returns whether it did (``False``: the claim expired, or
        was deleted)."""


class ApiKeyStore(ABC):
    """The API keys issued by ``scheduler keys create``, keyed by their SHA-256: the key itself
    is never stored."""

    @abstractmethod
    def add_api_key(self, key: ApiKey) -> bool:
        """Store a key; ``False`` (and nothing changes) if one with that hash exists."""

    @abstractmethod
    def find_api_key(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256, if it exists (revoked keys are deleted, so never found)."""

    @abstractmethod
    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every stored key, or the tenant's, oldest first."""

    @abstractmethod
    def delete_api_key(self, key_id: str) -> int:
        """Revoke the keys whose ``key_id`` (hash prefix) is ``key_id``; returns how many.

        Anything but 8 to 64 lowercase hex digits (``store_rules.is_key_id``) revokes nothing:
        never "every key" for an empty prefix."""
