"""Request bodies: what the API takes (size, media type, JSON it can keep) before any view.

A JSON body is parsed once, before any view (``body_problem``); webargs and the views read what
that parse found (``ApiRequest``, ``BodyParser``)."""

from __future__ import annotations

import gc
import json
import re
from typing import Any

from flask import Request, Response, request
from marshmallow import missing
from webargs.flaskparser import FlaskParser, is_json_request

from scheduler_service.presenting.problems import problem

# Arrays and objects within each other, at most: far more than any schedule needs.
MAX_JSON_DEPTH = 64
# A JSON string: its characters other than quote and backslash, or an escape, without
# alternation inside the repetition (one way to match, no backtracking).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Brackets of both kinds as one, everything else left out.
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(code for code in range(256) if code not in b"[]{}")
# Where a parsed value can hold what JSON cannot carry on: an escaped surrogate (alone, it is
# not text) and a number too large for a float (a float overflows past 1.8e308: an exponent of
# three digits, or 211 digits before the point with one of two). Only then is the value
# serialised to see.
_CHECK_VALUE = re.compile(rb"\\u[dD][89a-fA-F]|[eE][+]?[0-9]{3}|[0-9]{200}")
_TOO_DEEP = f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep"


class BodyRefused(ValueError):
    """A body that is not JSON the service can keep; the message says why."""


class StrictJson:
    """A json module whose ``loads`` is ``parse_body``."""

    @staticmethod
    def loads(data: str | bytes, **_: Any) -> Any:
        return parse_body(data.encode() if isinstance(data, str) else data)


class ApiRequest(Request):
    """A request whose JSON body is parsed once, by ``parse_body``: the first ``get_json``
    (``body_problem``'s, before any view) parses it, later ones (webargs', the views') answer
    what it found."""

    @property
    def json_module(self) -> Any:
        """What ``get_json`` parses with: ``parse_body``."""
        return StrictJson

    @json_module.setter
    def json_module(self, _: Any) -> None:
        """Flask hands each request the app's JSON provider; a body is parsed by
        ``parse_body`` whatever that is."""

    def on_json_loading_failed(self, e: ValueError | None) -> Any:
        if isinstance(e, BodyRefused):
            raise e
        return super().on_json_loading_failed(e)


class BodyParser(FlaskParser):
    """webargs' parser, reading the JSON the request parsed (``ApiRequest``) rather than
    parsing the body again."""

    def _raw_load_json(self, req: Request) -> Any:
        if not is_json_request(req) or not req.get_data(cache=True):
            return missing
        return req.get_json()


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
    if data:
        try:
            request.get_json()
        except BodyRefused as exc:
            reason = str(exc)
            return problem(400, "Invalid JSON", reason, [{"field": "body", "message": reason}])
    return None


def json_depth(data: bytes) -> int:
    """How deeply the arrays and objects of a valid JSON text nest, up to ``MAX_JSON_DEPTH`` + 1,
    found without recursion: outside its strings, the innermost pairs of brackets taken away,
    one level a round. Each round is one pass over what is left of the text."""
    brackets = _JSON_STRING.sub(b"", data).translate(_ONE_BRACKET, _NOT_BRACKETS)
    depth = 0
    while brackets and depth <= MAX_JSON_DEPTH:
        brackets = brackets.replace(b"[]", b"")
        depth += 1
    return depth


def parse_body(data: bytes) -> Any:
    """The JSON of a body, or ``BodyRefused`` saying why it is not JSON the service can keep.

    Beyond syntax: no NaN or Infinity (not JSON; they would be stored and sent on, and a number
    too large for a float is one), no lone surrogates (they cannot be encoded to UTF-8 when
    stored or sent), nesting at most ``MAX_JSON_DEPTH`` deep (schema validation and
    serialisation recurse once a level). Each step is linear in the body: the parser (whose own
    recursion bound refuses deeper nesting than the interpreter's limit), then the depth of the
    valid text, then, where the text could hold a surrogate or an overflowing number, one
    serialisation that finds what the parser let through.
    """

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    # A body of empty arrays is some 87,000 lists per 256 KB, each one more object for the
    # garbage collector to walk again and again while the parse goes on (three quarters of the
    # parse's time); none of them can be part of a cycle yet.
    collecting = gc.isenabled()
    gc.disable()
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=refuse_constant)
    except RecursionError:
        raise BodyRefused(_TOO_DEEP) from None
    except UnicodeError:
        raise BodyRefused("the body is not valid UTF-8") from None
    except ValueError as exc:
        raise BodyRefused(f"not valid JSON: {exc}") from None
    finally:
        if collecting:
            gc.enable()
    if json_depth(data) > MAX_JSON_DEPTH:
        raise BodyRefused(_TOO_DEEP)
    if _CHECK_VALUE.search(data) is None:
        return value
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeError:
        raise BodyRefused("the JSON has a lone surrogate escape (not text)") from None
    except ValueError:
        raise BodyRefused("the JSON has a number out of range (too large for a float)") from None
    return value
