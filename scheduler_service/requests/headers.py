"""The request headers the API reads beside the key: ``Idempotency-Key`` and the fingerprint
of the request it names; a create's W3C ``traceparent`` and ``tracestate``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import request
from marshmallow import EXCLUDE, Schema, fields, validate

from scheduler_service.service.creating import IdempotentRequest
from shared.tracing import TRACEPARENT, TRACESTATE, TraceContext, from_headers

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
    # Never refused: an invalid traceparent is ignored (W3C Trace Context), a new trace begins.
    traceparent = fields.String(
        data_key=TRACEPARENT,
        metadata={
            "description": "W3C trace context: the schedule's occurrences and each webhook call "
            "continue this trace (docs/tracing.md); without one (or an invalid one) a new "
            "trace begins"
        },
    )
    tracestate = fields.String(
        data_key=TRACESTATE,
        metadata={"description": "W3C trace context: passed on with the traceparent"},
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


def trace_parent(headers: dict[str, Any]) -> TraceContext | None:
    """The trace ``headers`` (as ``IdempotencyHeader`` loaded them) continue, if valid."""
    return from_headers(
        {
            TRACEPARENT: headers.get("traceparent") or "",
            TRACESTATE: headers.get("tracestate") or "",
        }
    )
