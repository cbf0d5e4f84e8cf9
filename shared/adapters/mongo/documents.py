"""The MongoDB store's documents as the stored fields of ``shared.adapters.records``, by kind.

A document's fields have the records' names; an instant is a BSON date (milliseconds, UTC); an
attempt log is an array of documents. Keys: ``_id`` is ``"<tenant>/<id>"`` (``key``), an API
key's its hash.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from bson import json_util

from shared.adapters.records import ATTEMPT_INSTANTS, Codec, Fields, Kind, read, written
from shared.timeutil import UTC, maybe, parse_iso, utc_ms

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


def _entries(entries: Iterable[Mapping[str, Any]], convert: Callable[[Any], Any]) -> list[Fields]:
    """An attempt log's entries with their instants through ``convert``."""
    return [
        {**entry, **{name: maybe(convert, entry.get(name)) for name in ATTEMPT_INSTANTS}}
        for entry in entries
    ]


# An instant is a BSON date, a list an array, an attempt log an array of documents.
_CODEC: Codec = {
    Kind.INSTANT: (utc_ms, instant),
    Kind.INSTANTS: (
        lambda value: [utc_ms(item) for item in value],
        lambda raw: tuple(map(instant, raw)),
    ),
    Kind.TEXTS: (list, list),
    Kind.FLAG: (bool, bool),
    Kind.ATTEMPTS: (
        lambda value: _entries(value, utc_ms),
        lambda raw: _entries(map(_pushed, raw), instant),
    ),
}


def to_field(kind: Kind, value: Any) -> Any:
    """A field's value as a document holds it."""
    return written(_CODEC, kind, value)


def from_field(kind: Kind, raw: Any) -> Any:
    """A document's value as its field has it."""
    return read(_CODEC, kind, raw)


def fields_of(document: Mapping[str, Any], kinds: Mapping[str, Kind]) -> Fields:
    """The stored fields of a document (those it has: an older one may lack some)."""
    return {
        name: from_field(kind, document[name]) for name, kind in kinds.items() if name in document
    }


def document_of(fields: Mapping[str, Any], kinds: Mapping[str, Kind]) -> Document:
    """Each field of ``fields`` as a document holds it."""
    return {name: to_field(kinds[name], value) for name, value in fields.items()}
