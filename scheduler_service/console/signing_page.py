"""The tenant's signing secrets: each one's id, state and creation time, never a secret (a
rotation, which shows the new secret once, is the API's or the CLI's)."""

from __future__ import annotations

from flask import g

from scheduler_service.console.pages import blp, page, service
from scheduler_service.roles import requires
from shared.ports import Role
from shared.timeutil import iso_z, maybe


@blp.route("/signing-secrets")
@requires(Role.ADMIN)
def signing_secrets() -> str:
    secrets = [
        {
            "id": item.secret_id,
            "state": item.state.value,
            "created_at": maybe(iso_z, item.created_at),
            "retires_at": maybe(iso_z, item.retires_at),
            "current_from": maybe(iso_z, item.current_from),
        }
        for item in service().signing.list(g.tenant)
    ]
    return page("console/signing_secrets.html", secrets=secrets)
