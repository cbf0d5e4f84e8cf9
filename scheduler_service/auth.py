"""API keys → callers: a tenant and a role.

A request names its key in ``X-API-Key`` or ``Authorization: Bearer <key>``. Keys come from
``SCHEDULER_API_KEYS`` or from the store (``scheduler keys create``); either way only their
SHA-256 is kept (a key is 32 random bytes, so a fast hash is as good as a slow one here). Every
read and write is then scoped to the key's tenant, and allowed by its role
(``scheduler_service.roles``).

``SCHEDULER_API_AUTH`` says when a key is needed: ``keys`` always, ``none`` never (everyone is
``SCHEDULER_DEFAULT_TENANT``; ``scheduler dev``), ``auto`` as soon as a key exists anywhere.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from flask import g

from shared.changes import Actor
from shared.ports import ApiKeyStore, Role
from shared.ports.keys import KEY_ID_LENGTH, NO_KEY
from shared.settings import Settings, key_entry

log = logging.getLogger(__name__)

KEY_PREFIX = "sk_"
MAX_KEY_LENGTH = 256
# The name a key given in SCHEDULER_API_KEYS goes by (it has none of its own).
CONFIGURED = "SCHEDULER_API_KEYS"
# While no key is stored, an "auto" API asks the store again this often.
AUTO_RECHECK_SECONDS = 2.0


class HeaderSource(Protocol):
    def get(self, name: str) -> str | None: ...


def new_api_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: the key's tenant and role, and its name as changes record it
    (a stored key's name and id, a configured key's id). Without a key (where none is needed)
    the default tenant, as an admin: such a server trusts whoever reaches it."""

    tenant: str
    role: Role
    name: str = NO_KEY
    # The key's id and name apart, for the change history's actor.
    key_id: str | None = None
    key_name: str | None = None


class AuthFailure(Exception):
    """No key where one is needed, or a key nobody issued: the API answers 401."""


class Authenticator:
    def __init__(self, settings: Settings, store: ApiKeyStore) -> None:
        self.mode = settings.api_auth
        self.default_tenant = settings.default_tenant
        self.store = store
        self.configured: dict[str, Caller] = {}
        for entry in settings.api_keys:
            parsed = key_entry(entry)
            if parsed is None:
                continue  # Settings refused it already
            tenant, role, key = parsed
            digest = key.removeprefix("sha256:") if key.startswith("sha256:") else hash_key(key)
            self.configured[digest] = Caller(
                tenant, role, f"key {digest[:12]}", digest[:KEY_ID_LENGTH], CONFIGURED
            )
        self._keys_exist = bool(self.configured)
        self._checked_at = float("-inf")
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self.mode == "none":
            return f"no API key needed: every caller is tenant {self.default_tenant!r}"
        if self.mode == "keys" or self.configured:
            return "an API key is required (X-API-Key or Authorization: Bearer)"
        return (
            "SCHEDULER_API_AUTH=auto and no API key is configured yet: every caller is tenant "
            f"{self.default_tenant!r} until a key is created (scheduler keys create)"
        )

    def keys_required(self) -> bool:
        if self.mode != "auto":
            return self.mode == "keys"
        with self._lock:
            if self._keys_exist:
                return True
            now = time.monotonic()
            if now - self._checked_at < AUTO_RECHECK_SECONDS:
                return False
            self._checked_at = now
        exists = bool(self.store.list_api_keys())
        if exists:
            with self._lock:
                self._keys_exist = True
        return exists

    def caller_for(self, headers: HeaderSource) -> Caller:
        """The caller's tenant and role; ``AuthFailure`` when a key is needed and missing or
        unknown."""
        anyone = Caller(self.default_tenant, Role.ADMIN)
        if self.mode == "none":
            return anyone
        key = presented_key(headers)
        if key is None:
            if self.keys_required():
                raise AuthFailure("send an API key in X-API-Key or Authorization: Bearer <key>")
            return anyone
        if len(key) > MAX_KEY_LENGTH:
            raise AuthFailure("unknown API key")
        digest = hash_key(key)
        caller = self.configured.get(digest)
        if caller is None:
            stored = self.store.find_api_key(digest)
            caller = (
                None
                if stored is None
                else Caller(
                    stored.tenant,
                    stored.role,
                    f"{stored.name} ({stored.key_id})",
                    stored.key_id,
                    stored.name,
                )
            )
        if caller is None:
            raise AuthFailure("unknown API key")
        return caller


def presented_key(headers: HeaderSource) -> str | None:
    key = headers.get("X-API-Key")
    if key:
        return key.strip()
    scheme, _, credentials = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return None


def request_actor() -> Actor:
    """Who makes the request being answered (set with its tenant by the app's or the console's
    check of the key): what the change history records as its actor."""
    actor: Actor = g.actor
    return actor
