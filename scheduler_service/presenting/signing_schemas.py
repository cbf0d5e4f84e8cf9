"""Marshmallow schemas of the API's answers about a tenant's signing secrets: never a secret,
but the one a rotation makes, in the rotation's answer."""

from __future__ import annotations

from marshmallow import fields

from scheduler_service.presenting.fields import Again, Instant, Open, nullable, one_of, shown
from shared.signing import DEPLOYMENT, SecretState


class SigningSecretSchema(Open):
    id = shown(
        Again(
            source="secret_id",
            metadata={
                "description": f"the secret's id; `{DEPLOYMENT}`: the deployment's secret "
                "(SCHEDULER_WEBHOOK_SECRET), which signs for a tenant until its first rotation"
            },
        )
    )
    created_at = nullable(Instant(), "when the rotation made it; null for the deployment's")
    state = one_of(
        SecretState,
        "current: signs alone; next: made by the last rotation, signs beside "
        "the retiring ones and is the current once they retire; retiring: signs until "
        "retires_at",
    )
    retires_at = nullable(Instant(), "when a retiring secret stops signing")
    current_from = nullable(Instant(), "when a next secret becomes the current (signs alone)")


class SigningSecretListSchema(Open):
    items = shown(
        fields.List(fields.Nested(SigningSecretSchema)),
        "the secrets that sign now, oldest first; none: unsigned",
    )


class RotationSchema(Open):
    id = shown(Again(source="secret_id"), "the new secret's id")
    secret = shown(
        fields.String(),
        "the new secret (`whsec_…`), shown this once: give it to your "
        "receivers, which verify with any of the secrets that sign",
    )
    created_at = shown(Instant())
    current_from = nullable(Instant(), "when the secrets that signed before retire; null: at once")
    items = shown(
        fields.List(fields.Nested(SigningSecretSchema), attribute="listed"),
        "the secrets that sign now, oldest first",
    )
