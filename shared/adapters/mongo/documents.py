"""The MongoDB store's documents as the stored fields of ``shared.adapters.records``, by kind.

A document's fields have the records' names; an instant is a BSON date (milliseconds, UTC); an
attempt log is an array of documents. Keys: ``_id`` is ``"<tenant>/<id>"`` (``key``), an API
key's its hash.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bson import json_util

from shared.adapters.records import (
    ATTEMPT_INSTANTS,
    Fields,
    Kind,
)
from shared.timeutil import UTC, parse_iso, utc_ms

Document = dict[str, Any]
_PUSHED_JSON = json_util.JSONOptions(tz_aware=True)


def key_of(tenant: str, name: str) -> str:
    """``<tenant>/<name>``, with ``%`` and ``/`` escaped in the tenant so no two keys collide."""
    return f"{tenant.replace('%', '%25').replace('/', '%2F')}/{name}"


# Each schedule carries a slice, a hash of its key: the claims of pollers that are behind go by
# windows of slices (``shared.adapters.mongo.claims``).
SLICES = 64


def schedule_slice(key: str) -> int:
    """The slice of a schedule's key: the same in every process (not Python's salted hash)."""
    return zlib.crc32(key.encode()) % SLICES


def instant(value: datetime | str | None) -> datetime | None:
    """A stored BSON date as aware UTC; a client without ``tz_aware`` hands back naive UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        # nx-27017 0.8.1 (a wire server we test against) stores a date written by an update
        # operator as naive ISO text in UTC; MongoDB itself always answers a datetime.
        value = parse_iso(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return utc_ms(value)


def _pushed(entry: Mapping[str, Any] | str) -> Mapping[str, Any]:
    """A document of an array. nx-27017 0.8.1 hands one written by ``$push`` back as its
    extended JSON text; MongoDB itself always answers the document."""
    if isinstance(entry, str):
        document: Mapping[str, Any] = json_util.loads(entry, json_options=_PUSHED_JSON)
        return document
    return entry


def to_field(kind: Kind, value: Any) -> Any:
    """A field's value as a document holds it."""
    if value is None:
        return None
    if kind is Kind.INSTANT:
        return utc_ms(value)
    if kind in (Kind.INSTANTS, Kind.TEXTS):
        return [
            to_field(Kind.INSTANT if kind is Kind.INSTANTS else Kind.VALUE, item) for item in value
        ]
    if kind is Kind.FLAG:
        return bool(value)
    if kind is Kind.ATTEMPTS:
        return [_entry(entry, to_field) for entry in value]
    return value


def from_field(kind: Kind, raw: Any) -> Any:
    """A document's value as its field has it."""
    if raw is None:
        return None
    if kind is Kind.INSTANT:
        return instant(raw)
    if kind is Kind.INSTANTS:
        return tuple(instant(item) for item in raw)
    if kind is Kind.FLAG:
        return bool(raw)
    if kind is Kind.ATTEMPTS:
        return [_entry(_pushed(entry), from_field) for entry in raw]
    return raw


def _entry(entry: Mapping[str, Any], convert: Any) -> Fields:
    converted = dict(entry)
    for name in ATTEMPT_INSTANTS:
        converted[name] = convert(Kind.INSTANT, entry.get(name))
    return converted


def fields_of(document: Mapping[str, Any], kinds: Mapping[str, Kind]) -> Fields:
    """The stored fields of a document (those it has: an older one may lack some)."""
    return {
        name: from_field(kind, document[name]) for name, kind in kinds.items() if name in document
    }


def document_of(fields: Mapping[str, Any], kinds: Mapping[str, Kind]) -> Document:
    """Each field of ``fields`` as a document holds it."""
    return {name: to_field(kinds[name], value) for name, value in fields.items()}
