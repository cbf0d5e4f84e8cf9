"""The body of ``POST /signing-secrets/rotate`` (optional: no body rotates with the default
overlap)."""

from __future__ import annotations

from marshmallow import validate

from scheduler_service.requests.fields import Strict, WholeNumber
from shared.signing import MAX_OVERLAP


class RotateSchema(Strict):
    overlap_seconds = WholeNumber(
        validate=validate.Range(min=0, max=int(MAX_OVERLAP.total_seconds())),
        metadata={
            "description": "how long the secrets signing now keep signing beside the new one "
            "(default SCHEDULER_SIGNING_OVERLAP_SECONDS, 86400); 0 retires them at once"
        },
    )
