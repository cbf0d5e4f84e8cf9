"""The SQLite store's rows as the stored fields of ``shared.adapters.records``, by kind.

An instant is an integer of epoch milliseconds in a column named for it with ``_ms``
(``next_schedule_time`` in ``next_ms``); a list is JSON text (an empty list of instants is
``NULL``); a flag is 0 or 1; an attempt log is JSON text whose entries keep their instants in
``started_ms`` and ``finished_ms``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from shared.adapters.records import ATTEMPT_INSTANTS, Codec, Fields, Kind, read, written
from shared.timeutil import from_epoch_ms, to_epoch_ms

# The columns whose names are not their fields'.
_COLUMNS = {
    "next_schedule_time": "next_ms",
    "accepted_at": "accepted_ms",
    "created_at": "created_ms",
    "updated_at": "updated_ms",
    "last_run_at": "last_run_ms",
    "lease_until": "lease_until_ms",
    "paused_at": "paused_ms",
    "late_check_at": "late_check_ms",
    "scheduled_time": "scheduled_ms",
    "started_at": "started_ms",
    "finished_at": "finished_ms",
    "next_attempt_at": "next_attempt_ms",
    "discarded_at": "discarded_ms",
    "expires_at": "expires_ms",
    "overlap_until": "overlap_until_ms",
    "overlap_waiting_until": "overlap_waiting_until_ms",
    "paused_until": "paused_until_ms",
    "retires_at": "retires_ms",
}


def column(field: str) -> str:
    """The column that holds a stored field."""
    return _COLUMNS.get(field, field)


# An instant is epoch milliseconds, a list JSON text (no instants: ``NULL``), a flag 0 or 1.
_CODEC: Codec = {
    Kind.INSTANT: (to_epoch_ms, from_epoch_ms),
    Kind.INSTANTS: (
        lambda value: json.dumps([to_epoch_ms(moment) for moment in value]) if value else None,
        lambda raw: tuple(map(from_epoch_ms, json.loads(raw))),
    ),
    Kind.TEXTS: (lambda value: json.dumps(list(value)), json.loads),
    Kind.FLAG: (lambda value: int(bool(value)), bool),
    Kind.ATTEMPTS: (
        lambda value: json.dumps([entry_to_column(entry) for entry in value]),
        lambda raw: [_entry_from_column(entry) for entry in json.loads(raw)],
    ),
}


def to_column(kind: Kind, value: Any) -> Any:
    """A field's value as its column holds it."""
    return written(_CODEC, kind, value)


def from_column(kind: Kind, raw: Any) -> Any:
    """A column's value as its field has it."""
    return read(_CODEC, kind, raw)


def entry_to_column(entry: Mapping[str, Any]) -> Fields:
    stored = dict(entry)
    for name in ATTEMPT_INSTANTS:
        moment = stored.pop(name)
        stored[column(name)] = None if moment is None else to_epoch_ms(moment)
    return stored


def _entry_from_column(entry: Mapping[str, Any]) -> Fields:
    fields = dict(entry)
    for name in ATTEMPT_INSTANTS:
        raw = fields.pop(column(name), None)
        fields[name] = None if raw is None else from_epoch_ms(raw)
    return fields


def fields_of(row: sqlite3.Row | Mapping[str, Any], kinds: Mapping[str, Kind]) -> Fields:
    """The stored fields of a row read whole (``SELECT *``, ``RETURNING *``), or of an entry
    of a JSON list of records."""
    return {name: from_column(kind, row[column(name)]) for name, kind in kinds.items()}


def columns_of(fields: Mapping[str, Any], kinds: Mapping[str, Kind]) -> dict[str, Any]:
    """Each field of ``fields`` as its column and the column's value."""
    return {column(name): to_column(kinds[name], value) for name, value in fields.items()}
