"""The calls of ``SchedulerClient`` on the tenant's webhook signing secrets."""

from __future__ import annotations

import builtins
import uuid
from typing import cast

from scheduler_client._transport import Transport
from scheduler_client.types import Rotation, SigningSecret, SigningSecretList


class SigningSecrets(Transport):
    def signing_secrets(self) -> builtins.list[SigningSecret]:
        """The secrets that sign the tenant's calls now (ids, creation times, states), oldest
        first; never a secret."""
        listing = cast(SigningSecretList, self._call("GET", "/signing-secrets", idempotent=True))
        return listing["items"]

    def rotate_signing_secret(
        self, *, overlap_seconds: int | None = None, idempotency_key: str | None = None
    ) -> Rotation:
        """Add a new signing secret; its ``secret`` is shown in this answer only (and to a
        repeat with the same ``idempotency_key``). The secrets that signed before keep signing
        for ``overlap_seconds`` (the server's default when ``None``). Without
        ``idempotency_key`` a fresh one is sent, so a retry never rotates twice."""
        body = {} if overlap_seconds is None else {"overlap_seconds": overlap_seconds}
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        answer = self._call(
            "POST", "/signing-secrets/rotate", body=body, headers=headers, idempotent=True
        )
        return cast(Rotation, answer)
