"""The request headers the API reads beside the key: ``Idempotency-Key``, and the fingerprint
of the request it names."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import request
from marshmallow import EXCLUDE, Schema, fields, validate

from scheduler_service.service.creating import IdempotentRequest

IDEMPOTENCY_KEY = r"^[\x21-\x7e]{1,255}$"


class Headers(Schema):
    """Headers: any others are not this schema's to refuse."""

    class Meta:
        unknown = EXCLUDE


class IdempotencyHeader(Headers):
    idempotency_key = fields.String(
        data_key="Idempotency-Key",
        validate=validate.Regexp(
            IDEMPOTENCY_KEY, error="1 to 255 visible ASCII characters, e.g. a UUID"
        ),
        metadata={
            "description": "a repeat of the request with the same key and body answers the same "
            "schedule and creates nothing; with another body it is a 409. Kept 24 h by default."
        },
    )


def idempotent_request(headers: dict[str, Any]) -> IdempotentRequest | None:
    """The ``Idempotency-Key`` of ``headers`` (as ``IdempotencyHeader`` loaded them) and the
    fingerprint of this request's method, path and JSON body; ``None`` without a key."""
    key = headers.get("idempotency_key")
    if key is None:
        return None
    raw = request.get_json(silent=True)
    canonical = json.dumps(
        [request.method, request.path, raw], sort_keys=True, separators=(",", ":")
    )
    return IdempotentRequest(key, hashlib.sha256(canonical.encode()).hexdigest())
