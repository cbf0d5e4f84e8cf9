"""Each tenant's webhook signing secrets, and their rotation.

A tenant's calls (and its ``on_failure`` notifications) are signed as Standard Webhooks
specifies, once with each of its secrets that signs now (``webhook-signature`` holds the
signatures separated by spaces; a receiver that knows any one of the secrets verifies).

- A tenant that never rotated signs with the deployment's secret (``SCHEDULER_WEBHOOK_SECRET``,
  the one every tenant shared before per-tenant secrets existed): nothing changes for its
  receivers until it rotates. Its listing shows that secret as ``DEPLOYMENT``.
- A rotation adds a new secret, the ``next``: it signs from then on, beside the secrets that
  signed before, which become ``retiring`` and stop at the end of the overlap window
  (``SCHEDULER_SIGNING_OVERLAP_SECONDS``, or the rotation's own). Then the next one is the
  ``current``, alone. An overlap of 0 retires the older ones at once.
- At most ``MAX_SIGNING`` secrets sign at once: a rotation that would make more is refused
  (``RotationConflict``) until the oldest retires.

A secret is shown once, by the rotation that makes it; it is stored sealed for its tenant
(``SecretBox.seal_text``: it opens for no other tenant) and every listing shows its id, when it
was made, its state and when it retires, never the secret. A tenant's set is changed by
compare-and-set (``SigningSecretStore.put_signing_secrets``): two rotations at once never lose
one another's secret. Retired secrets are dropped at the next rotation.
"""

from __future__ import annotations

import json
import secrets as random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from shared.errors import SchedulerError
from shared.ports import Clock, SigningSecretSet, SigningSecretStore, StoredSigningSecret
from shared.secrets import SecretBox
from shared.timeutil import iso_z, maybe, parse_iso, utc_ms
from shared.webhooks import new_webhook_secret

# The deployment's secret (SCHEDULER_WEBHOOK_SECRET), as it stands in a tenant's set.
DEPLOYMENT = "deployment"
MAX_SIGNING = 3
# The longest overlap a rotation may ask for.
MAX_OVERLAP = timedelta(days=30)
# A rotation that loses its compare-and-set to another reads the set again, this often at most.
_ATTEMPTS = 5


class SecretState(StrEnum):
    CURRENT = "current"
    NEXT = "next"
    RETIRING = "retiring"


class RotationConflict(SchedulerError):
    """A rotation refused: as many secrets sign as may (the API answers 409)."""


@dataclass(frozen=True)
class ListedSecret:
    """A secret as a listing shows it: never the secret itself."""

    secret_id: str
    created_at: datetime | None
    state: SecretState
    # When a retiring secret stops signing; when a next one becomes the current.
    retires_at: datetime | None
    current_from: datetime | None


@dataclass(frozen=True)
class Rotation:
    """What a rotation made: the new secret (shown this once), and the secrets as they are now."""

    secret_id: str
    secret: str
    created_at: datetime
    current_from: datetime | None
    listed: tuple[ListedSecret, ...]


def signing(secrets: Sequence[StoredSigningSecret], now: datetime) -> list[StoredSigningSecret]:
    """The secrets that sign at ``now``, oldest first."""
    return [secret for secret in secrets if secret.retires_at is None or now < secret.retires_at]


def listed(secrets: Sequence[StoredSigningSecret], now: datetime) -> tuple[ListedSecret, ...]:
    """The secrets that sign at ``now`` with their states: the newest is the ``current`` when
    it signs alone, else the ``next``; the older ones are ``retiring``."""
    live = signing(secrets, now)
    if not live:
        return ()
    *older, newest = live
    ends = [secret.retires_at for secret in older if secret.retires_at is not None]
    return (
        *(
            ListedSecret(
                item.secret_id, item.created_at, SecretState.RETIRING, item.retires_at, None
            )
            for item in older
        ),
        ListedSecret(
            newest.secret_id,
            newest.created_at,
            SecretState.NEXT if older else SecretState.CURRENT,
            None,
            max(ends) if older else None,
        ),
    )


def rotated(
    secrets: Sequence[StoredSigningSecret], new: StoredSigningSecret, overlap: timedelta
) -> tuple[StoredSigningSecret, ...]:
    """``secrets`` with ``new`` added (made at ``new.created_at``): those that signed retire
    at the end of the overlap at the latest, those retired already are dropped."""
    now = new.created_at
    assert now is not None
    live = signing(secrets, now)
    if len(live) >= MAX_SIGNING:
        ends = [secret.retires_at for secret in live if secret.retires_at is not None]
        until = f": rotate again from {min(ends).isoformat()}" if ends else ""
        raise RotationConflict(f"{len(live)} secrets sign already, the most at once{until}")
    end = utc_ms(now + overlap)
    kept = [
        replace(secret, retires_at=min(secret.retires_at or end, end))
        for secret in live
        if overlap > timedelta(0)
    ]
    return (*kept, new)


def sealing_purpose(tenant: str) -> str:
    """What a tenant's secrets are sealed for: a sealed secret copied to another tenant's set
    opens for none."""
    return f"signing secret of tenant {tenant}"


class SigningSecrets:
    """Listing and rotating tenants' secrets (the API's and the CLI's)."""

    def __init__(
        self,
        store: SigningSecretStore,
        box: SecretBox,
        clock: Clock,
        *,
        deployment_signs: bool,
        overlap: timedelta,
    ) -> None:
        """``deployment_signs``: whether the deployment has a secret (SCHEDULER_WEBHOOK_SECRET),
        which signs for the tenants that never rotated (listed only then). ``overlap``: a
        rotation's default."""
        self.store = store
        self.box = box
        self.clock = clock
        self.deployment_signs = deployment_signs
        self.overlap = overlap

    def list(self, tenant: str) -> tuple[ListedSecret, ...]:
        """The tenant's secrets that sign now, oldest first (none: its calls go unsigned)."""
        shown = listed(self._stored(tenant).secrets, self.clock.now())
        if self.deployment_signs:
            return shown
        return tuple(secret for secret in shown if secret.secret_id != DEPLOYMENT)

    def rotate(self, tenant: str, overlap: timedelta | None = None) -> Rotation:
        """Add a new secret to the tenant's (see the module docstring)."""
        secret = new_webhook_secret()
        for _ in range(_ATTEMPTS):
            stored = self._stored(tenant)
            now = utc_ms(self.clock.now())
            new = StoredSigningSecret(
                f"sec_{random.token_hex(8)}",
                self.box.seal_text(secret, sealing_purpose(tenant)),
                now,
            )
            secrets = rotated(stored.secrets, new, self.overlap if overlap is None else overlap)
            if self.store.put_signing_secrets(
                SigningSecretSet(tenant, stored.version + 1, secrets)
            ):
                shown = listed(secrets, now)
                return Rotation(new.secret_id, secret, now, shown[-1].current_from, shown)
        raise RotationConflict("the tenant's secrets are being rotated by another request")

    def kept(self, tenant: str, rotation: Rotation) -> str:
        """``rotation`` as the record of its ``Idempotency-Key`` keeps it, for a repeat to
        answer again: its secret sealed for the tenant, as the tenant's set keeps it."""
        sealed = self.box.seal_text(rotation.secret, sealing_purpose(tenant))
        return json.dumps({**asdict(rotation), "secret": sealed}, default=iso_z)

    def again(self, tenant: str, kept: str) -> Rotation:
        """The rotation ``kept`` keeps (``RotationConflict`` if its secret no longer opens:
        sealed with a key since dropped)."""
        fields = json.loads(kept)
        secret = self.box.open_text(fields["secret"], sealing_purpose(tenant))
        if secret is None:
            raise RotationConflict("the rotation of this Idempotency-Key cannot be shown again")
        return Rotation(
            fields["secret_id"],
            secret,
            parse_iso(fields["created_at"]),
            maybe(parse_iso, fields["current_from"]),
            tuple(
                ListedSecret(
                    item["secret_id"],
                    maybe(parse_iso, item["created_at"]),
                    SecretState(item["state"]),
                    maybe(parse_iso, item["retires_at"]),
                    maybe(parse_iso, item["current_from"]),
                )
                for item in fields["listed"]
            ),
        )

    def _stored(self, tenant: str) -> SigningSecretSet:
        found = self.store.get_signing_secrets([tenant]).get(tenant)
        if found is not None:
            return found
        # The deployment's secret signs until the first rotation retires it (in an executor
        # without one, it signs nothing).
        return SigningSecretSet(tenant, 0, (StoredSigningSecret(DEPLOYMENT, "", None),))
