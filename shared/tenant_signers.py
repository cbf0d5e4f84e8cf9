"""Each tenant's signer, as an executor (and a poller, for its alerts) keeps it: the tenant's
secrets that sign now (``shared.signing``), read at most once per
``SCHEDULER_SIGNING_CACHE_SECONDS``.

The begin thread ``refresh``es the tenants of each batch before it is checked: the tenants whose
secrets were read longer ago than the bound are read again, all in one
``get_signing_secrets`` (one command on MongoDB), so the store work per fire does not grow (a
tenant with a steady flow of calls costs one read per bound). The loop asks for a tenant's
``signer`` when it builds a call or a failure notification, and never waits for the store: a
secret whose overlap ends retires at its time, from what was read.

A tenant with no stored secrets signs with the deployment's (``SCHEDULER_WEBHOOK_SECRET``), as
every tenant did before per-tenant secrets; with none of either, its calls go unsigned. A stored
secret that no configured sealing key opens (its key was dropped) signs nothing, and is logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from shared.ports import Clock, SigningSecretSet, SigningSecretStore
from shared.secrets import SecretBox
from shared.signing import DEPLOYMENT, sealing_purpose
from shared.webhooks import WebhookSigner

log = logging.getLogger(__name__)

# Tenants whose secrets an executor keeps at most (the least recently read go first).
MAX_TENANTS = 10_000


@dataclass
class _Kept:
    read_at: float
    # Each secret that may sign, with the instant it retires (None: not set).
    secrets: tuple[tuple[str, datetime | None], ...]
    signer: WebhookSigner | None
    # When the signer must be made again (the next secret retires then); None: never.
    until: datetime | None


@dataclass(eq=False)
class TenantSigners:
    store: SigningSecretStore
    box: SecretBox
    deployment_secret: str
    clock: Clock
    bound_seconds: float
    _deployment: WebhookSigner | None = field(init=False)
    _kept: OrderedDict[str, _Kept] = field(init=False, default_factory=OrderedDict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._deployment = WebhookSigner(self.deployment_secret) if self.deployment_secret else None

    def refresh(self, tenants: Iterable[str]) -> None:
        """Read again, in one read, the secrets of those ``tenants`` read longer ago than the
        bound (or never). ``Transient`` when the store does not answer."""
        now = time.monotonic()
        stale = {
            tenant
            for tenant in tenants
            if (kept := self._kept.get(tenant)) is None or now - kept.read_at >= self.bound_seconds
        }
        if not stale:
            return
        found = self.store.get_signing_secrets(stale)
        with self._lock:
            for tenant in stale:
                self._kept[tenant] = self._keep(tenant, found.get(tenant), now)
                self._kept.move_to_end(tenant)
            while len(self._kept) > MAX_TENANTS:
                self._kept.popitem(last=False)

    def signer(self, tenant: str) -> WebhookSigner | None:
        """What signs the tenant's calls now; ``None``: they go unsigned."""
        kept = self._kept.get(tenant)
        if kept is None:
            # Never read (every batch is refreshed before its calls, so only a notification
            # of a tenant pushed out since): the deployment's secret, as before any rotation.
            return self._deployment
        if kept.until is not None and self.clock.now() >= kept.until:
            kept.signer, kept.until = self._signer(kept.secrets)
        return kept.signer

    def _keep(self, tenant: str, stored: SigningSecretSet | None, read_at: float) -> _Kept:
        if stored is None:
            return _Kept(read_at, (), self._deployment, None)
        secrets: list[tuple[str, datetime | None]] = []
        for item in stored.secrets:
            if item.secret_id == DEPLOYMENT:
                secret = self.deployment_secret or None
            else:
                secret = self.box.open_text(item.sealed, sealing_purpose(tenant))
                if secret is None:
                    log.warning(
                        "a signing secret of tenant %s (%s) opens with no configured key: it "
                        "signs nothing",
                        tenant,
                        item.secret_id,
                        extra={"event": "signing_secret_sealed_away"},
                    )
            if secret:
                secrets.append((secret, item.retires_at))
        signer, until = self._signer(tuple(secrets))
        return _Kept(read_at, tuple(secrets), signer, until)

    def _signer(
        self, secrets: tuple[tuple[str, datetime | None], ...]
    ) -> tuple[WebhookSigner | None, datetime | None]:
        now = self.clock.now()
        live = [(secret, ends) for secret, ends in secrets if ends is None or now < ends]
        ends = [end for _, end in live if end is not None]
        signer = WebhookSigner(*(secret for secret, _ in live)) if live else None
        return signer, min(ends) if ends else None
