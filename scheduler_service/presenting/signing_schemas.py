"""Marshmallow schemas of the API's answers about a tenant's signing secrets: never a secret,
but the one a rotation makes, in the rotation's answer."""

from __future__ import annotations

from marshmallow import fields, validate

from scheduler_service.presenting.fields import Again, Instant, Open
from shared.signing import DEPLOYMENT, SecretState


class SigningSecretSchema(Open):
    id = Again(
        required=True,
        source="secret_id",
        metadata={
            "description": f"the secret's id; `{DEPLOYMENT}`: the deployment's secret "
            "(SCHEDULER_WEBHOOK_SECRET), which signs for a tenant until its first rotation"
        },
    )
    created_at = Instant(
        allow_none=True,
        required=True,
        metadata={"description": "when the rotation made it; null for the deployment's"},
    )
    state = fields.String(
        required=True,
        validate=validate.OneOf([state.value for state in SecretState]),
        metadata={
            "description": "current: signs alone; next: made by the last rotation, signs beside "
            "the retiring ones and is the current once they retire; retiring: signs until "
            "retires_at"
        },
    )
    retires_at = Instant(
        allow_none=True,
        required=True,
        metadata={"description": "when a retiring secret stops signing"},
    )
    current_from = Instant(
        allow_none=True,
        required=True,
        metadata={"description": "when a next secret becomes the current (signs alone)"},
    )


class SigningSecretListSchema(Open):
    items = fields.List(
        fields.Nested(SigningSecretSchema),
        required=True,
        metadata={"description": "the secrets that sign now, oldest first; none: unsigned"},
    )


class RotationSchema(Open):
    id = Again(required=True, source="secret_id", metadata={"description": "the new secret's id"})
    secret = fields.String(
        required=True,
        metadata={
            "description": "the new secret (`whsec_…`), shown this once: give it to your "
            "receivers, which verify with any of the secrets that sign"
        },
    )
    created_at = Instant(required=True)
    current_from = Instant(
        allow_none=True,
        required=True,
        metadata={"description": "when the secrets that signed before retire; null: at once"},
    )
    items = fields.List(
        fields.Nested(SigningSecretSchema),
        required=True,
        attribute="listed",
        metadata={"description": "the secrets that sign now, oldest first"},
    )
