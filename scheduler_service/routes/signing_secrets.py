"""``/scheduler-service/v1/signing-secrets``: the tenant's webhook signing secrets, listed and
rotated (``shared.signing``). A tenant sees and rotates only its own."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Response, g

from scheduler_service.presenting.signing_schemas import (
    RotationSchema,
    SigningSecretListSchema,
)
from scheduler_service.presenting.views import json_answer
from scheduler_service.requests.headers import IdempotencyHeader, idempotent_request
from scheduler_service.requests.signing import RotateSchema
from scheduler_service.routes.common import REPLAYED, Blueprint, service
from shared.ports import Role
from shared.signing import MAX_SIGNING

ROTATION = RotationSchema()

blp = Blueprint(
    "signing_secrets",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Signing secrets: the tenant's webhook signing secrets, and their rotation",
)


@blp.route("/signing-secrets", methods=["GET"])
@blp.requires(Role.ADMIN)
@blp.response(200, SigningSecretListSchema)
@blp.doc(operationId="listSigningSecrets")
@blp.problems()
def list_signing_secrets() -> dict[str, Any]:
    """The secrets that sign the tenant's calls and failure notifications now: ids, when each
    was made, their states; never a secret."""
    return {"items": service().signing.list(g.tenant)}


@blp.route("/signing-secrets/rotate", methods=["POST"])
@blp.requires(Role.ADMIN)
@blp.arguments(RotateSchema, error_status_code=400)
@blp.arguments(IdempotencyHeader, location="headers", error_status_code=400)
@blp.response(201, RotationSchema, headers=REPLAYED)
@blp.doc(operationId="rotateSigningSecret")
@blp.problem(
    409,
    f"{MAX_SIGNING} secrets sign already (the most at once): rotate once the oldest retires; "
    "or the Idempotency-Key was used with another request, or its first request is still at "
    "work (with Retry-After: repeat it then for that one's answer)",
)
@blp.problems(400, 413, 415)
def rotate_signing_secret(body: dict[str, Any], headers: dict[str, Any]) -> Response:
    """Add a new signing secret, shown this once

    From then on every call and failure notification of the tenant carries one signature per
    secret that signs (Standard Webhooks: space-separated in `webhook-signature`): the new one
    beside the ones before, until those retire at the end of the overlap (`overlap_seconds`,
    default 24 hours). Executors take a rotation up within `SCHEDULER_SIGNING_CACHE_SECONDS`
    (10 s). Give the new secret to your receivers during the overlap.

    With an `Idempotency-Key`, a repeat of the request (same body) answers the same rotation,
    secret included, and rotates nothing more; with another body under the key it is a 409. A
    repeat that comes while the first request with the key is still at work is a 409 naming
    the key, with `Retry-After`: repeated then, it gets the first's answer."""
    seconds = body.get("overlap_seconds")
    overlap = None if seconds is None else timedelta(seconds=seconds)
    signing = service().signing
    idempotency = idempotent_request(headers)
    if idempotency is None:
        return json_answer(ROTATION, signing.rotate(g.tenant, overlap), 201)
    answer = service().kept_answers.answer(
        g.tenant,
        idempotency.key,
        idempotency,
        service().clock.now(),
        lambda: signing.kept(g.tenant, signing.rotate(g.tenant, overlap)),
    )
    replayed = {"Idempotent-Replayed": "true"} if answer.replayed else {}
    return json_answer(ROTATION, signing.again(g.tenant, answer.text), 201, replayed)
