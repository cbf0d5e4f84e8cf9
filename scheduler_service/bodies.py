"""Request bodies: what the API takes (size, media type, JSON it can keep) before any view.

A JSON body is parsed once, before any view (``body_problem``); webargs and the views read what
that parse found (``ApiRequest``, ``BodyParser``)."""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

import flask_smorest
from flask import Request, Response, request
from marshmallow import missing
from webargs.flaskparser import FlaskParser, is_json_request

from scheduler_service.errors import problem

# Arrays and objects within each other, at most: far more than any schedule needs.
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")
_BRACKET_STEP = {b"[": 1, b"{": 1, b"]": -1, b"}": -1}


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


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """flask-smorest's Blueprint, whose arguments are read by ``BodyParser``."""

    ARGUMENTS_PARSER = BodyParser()


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
    """How deeply the arrays and objects of a JSON text nest, found without parsing it (so
    without recursion): the brackets outside strings, counted."""
    brackets = _JSON_BRACKET.findall(_JSON_STRING.sub(b'""', data))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def parse_body(data: bytes) -> Any:
    """The JSON of a body, or ``BodyRefused`` saying why it is not JSON the service can keep.

    Beyond syntax: no NaN or Infinity (not JSON; they would be stored and sent on), no lone
    surrogates (they cannot be encoded to UTF-8 when stored or sent), nesting at most
    ``MAX_JSON_DEPTH`` deep (checked before any parser recurses: schema validation and
    serialisation recurse once a level, and a thousand levels exhaust the stack).
    """
    if json_depth(data) > MAX_JSON_DEPTH:
        raise BodyRefused(f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep")

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
        raise BodyRefused("the JSON is nested too deeply") from None
    except UnicodeError:
        raise BodyRefused("the body is not valid UTF-8 (or has a lone surrogate escape)") from None
    except ValueError as exc:
        raise BodyRefused(f"not valid JSON: {exc}") from None
    return value
