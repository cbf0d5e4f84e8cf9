"""Request bodies: what the API takes (size, media type, JSON it can keep) before any view."""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from flask import Response, request

from scheduler_service.errors import problem

# Arrays and objects within each other, at most: far more than any schedule needs.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")
_BRACKET_STEP = {b"[": 1, b"{": 1, b"]": -1, b"}": -1}


def body_problem(max_body_bytes: int) -> Response | None:
    """Why the request's body cannot be taken (413, 415, 400), or None."""
    length = request.content_length
    if length is not None and length > max_body_bytes:
        return problem(
            413, "Payload Too Large", f"the body is {length} bytes; the limit is {max_body_bytes}"
        )
    # A body sent without a length (chunked) is read up to the limit, no further.
    data = request.get_data(cache=True)
    if length is None and len(data) >= max_body_bytes:
        return problem(
            413, "Payload Too Large", f"the body reaches the limit of {max_body_bytes} bytes"
        )
    if data and not request.is_json:
        return problem(
            415,
            "Unsupported Media Type",
            "send the body as JSON with Content-Type: application/json",
        )
    reason = json_problem(data) if data else None
    if reason is not None:
        return problem(400, "Invalid JSON", reason, [{"field": "body", "message": reason}])
    return None


def json_depth(data: bytes) -> int:
    """How deeply the arrays and objects of a JSON text nest, found without parsing it (so
    without recursion): the brackets outside strings, counted."""
    brackets = _JSON_BRACKET.findall(_JSON_STRING.sub(b'""', data))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def json_problem(data: bytes) -> str | None:
    """Why a body is not JSON the service can keep, or None.

    Beyond syntax: no NaN or Infinity (not JSON; they would be stored and sent on), no lone
    surrogates (they cannot be encoded to UTF-8 when stored or sent), nesting at most
    ``MAX_JSON_DEPTH`` deep (checked before any parser recurses: schema validation and
    serialisation recurse once a level, and a thousand levels exhaust the stack).
    """
    if json_depth(data) > MAX_JSON_DEPTH:
        return f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep"

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    def finite(text: str) -> float:
        number = float(text)
        if not math.isfinite(number):
            raise ValueError(f"{text} is out of range")
        return number

    try:
        text = data.decode("utf-8")
        value = json.loads(text, parse_constant=refuse_constant, parse_float=finite)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except RecursionError:
        return "the JSON is nested too deeply"
    except UnicodeError:
        return "the body is not valid UTF-8 (or has a lone surrogate escape)"
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    return None
