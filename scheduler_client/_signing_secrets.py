"""The calls of ``SchedulerClient`` on the tenant's webhook signing secrets."""

from __future__ import annotations

import builtins
from typing import cast

from scheduler_client._transport import Transport
from scheduler_client.types import Rotation, SigningSecret, SigningSecretList


class SigningSecrets(Transport):
    def signing_secrets(self) -> builtins.list[SigningSecret]:
        """The secrets that sign the tenant's calls now (ids, creation times, states), oldest
        first; never a secret."""
        listing = cast(SigningSecretList, self._call("GET", "/signing-secrets", idempotent=True))
        return listing["items"]

    def rotate_signing_secret(self, *, overlap_seconds: int | None = None) -> Rotation:
        """Add a new signing secret; its ``secret`` is shown in this answer only. The secrets
        that signed before keep signing for ``overlap_seconds`` (the server's default when
        ``None``). Not repeated once sent: a repeat would make another secret."""
        body = {} if overlap_seconds is None else {"overlap_seconds": overlap_seconds}
        return cast(
            Rotation, self._call("POST", "/signing-secrets/rotate", body=body, idempotent=False)
        )
