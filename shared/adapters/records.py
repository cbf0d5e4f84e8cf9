"""One mapping per record kind between the stores' records and the fields a store keeps of them.

The fields have the same names and kinds in every store: a record's attributes, plus what a
store keeps beside them for its queries (a schedule's ``name``, ``tags``, ``target``,
``name_key``, ``pause_after_failures`` and ``priority``; an execution record's
``discarded_at``). Their values here are as Python has them: instants aware UTC, flags
``bool``, statuses their text, a definition its sealed JSON text
(``shared.definition_codec``), an attempt log a list of entries.
Each backend turns these into its own columns or document fields, by kind, in one place
(``shared.adapters.sqlite.rows``, ``shared.adapters.mongo.documents``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, replace
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from shared.definition_cache import DefinitionCache, Key, open_definition
from shared.definition_codec import DefinitionCodec
from shared.model import (
    Attempt,
    Execution,
    ExecutionStatus,
    PausedBy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
)
from shared.ports import ApiKey, IdempotencyRecord, Role, StoredSigningSecret
from shared.schedule_listing import name_key, target_of
from shared.store_rules import DEFINITION_FIELDS
from shared.timeutil import utc_ms

Fields = dict[str, Any]


class Kind(Enum):
    """What a stored field holds, which decides how each backend writes it down."""

    VALUE = "value"  # text or a number, kept as it is
    FLAG = "flag"
    INSTANT = "instant"
    INSTANTS = "instants"  # a list of instants
    TEXTS = "texts"  # a list of texts
    ATTEMPTS = "attempts"  # the attempt log: entries of ``attempt_entry``'s fields


SCHEDULE: Mapping[str, Kind] = {
    "tenant": Kind.VALUE,
    "schedule_id": Kind.VALUE,
    "revision": Kind.VALUE,
    "state_revision": Kind.VALUE,
    "status": Kind.VALUE,
    "definition": Kind.VALUE,
    "name": Kind.VALUE,
    "tags": Kind.TEXTS,
    "target": Kind.VALUE,
    "name_key": Kind.VALUE,
    "pause_after_failures": Kind.VALUE,
    "priority": Kind.VALUE,
    "calendars": Kind.TEXTS,
    "next_schedule_time": Kind.INSTANT,
    "accepted_at": Kind.INSTANT,
    "created_at": Kind.INSTANT,
    "updated_at": Kind.INSTANT,
    "occurrence_count": Kind.VALUE,
    "run_count": Kind.VALUE,
    "superseded_count": Kind.VALUE,
    "failure_count": Kind.VALUE,
    "consecutive_failures": Kind.VALUE,
    "last_run_at": Kind.INSTANT,
    "last_status": Kind.VALUE,
    "lease_owner": Kind.VALUE,
    "lease_until": Kind.INSTANT,
    "paused_by": Kind.VALUE,
    "paused_at": Kind.INSTANT,
    "sent_ahead": Kind.INSTANTS,
    "overlap_holder": Kind.VALUE,
    "overlap_until": Kind.INSTANT,
    "overlap_waiting": Kind.VALUE,
    "overlap_waiting_until": Kind.INSTANT,
    "late_check_at": Kind.INSTANT,
    "paused_until": Kind.INSTANT,
    "pause_note": Kind.VALUE,
    "pause_set_by": Kind.VALUE,
    "skips": Kind.INSTANTS,
    "skips_version": Kind.VALUE,
}

EXECUTION: Mapping[str, Kind] = {
    "tenant": Kind.VALUE,
    "occurrence_id": Kind.VALUE,
    "schedule_id": Kind.VALUE,
    "scheduled_time": Kind.INSTANT,
    "status": Kind.VALUE,
    "attempts": Kind.VALUE,
    "revision": Kind.VALUE,
    "started_at": Kind.INSTANT,
    "finished_at": Kind.INSTANT,
    "http_status": Kind.VALUE,
    "duration_ms": Kind.VALUE,
    "lateness_ms": Kind.VALUE,
    "error": Kind.VALUE,
    "next_attempt_at": Kind.INSTANT,
    "lease_owner": Kind.VALUE,
    "lease_until": Kind.INSTANT,
    "manual": Kind.FLAG,
    "discarded_at": Kind.INSTANT,
    "attempt_log": Kind.ATTEMPTS,
    "superseded": Kind.FLAG,
}

IDEMPOTENCY: Mapping[str, Kind] = {
    "tenant": Kind.VALUE,
    "key": Kind.VALUE,
    "fingerprint": Kind.VALUE,
    "schedule_id": Kind.VALUE,
    "revision": Kind.VALUE,
    "next_schedule_time": Kind.INSTANT,
    "timezone": Kind.VALUE,
    "created_at": Kind.INSTANT,
    "expires_at": Kind.INSTANT,
    "answer": Kind.VALUE,
}

API_KEY: Mapping[str, Kind] = {
    "key_hash": Kind.VALUE,
    "tenant": Kind.VALUE,
    "name": Kind.VALUE,
    "created_at": Kind.INSTANT,
    "role": Kind.VALUE,
}

# A signing secret of a tenant's set (``shared.ports.StoredSigningSecret``), one entry of the
# list the set is kept as.
SIGNING_SECRET: Mapping[str, Kind] = {
    "id": Kind.VALUE,
    "sealed": Kind.VALUE,
    "created_at": Kind.INSTANT,
    "retires_at": Kind.INSTANT,
}

# Each table's (collection's) fields, by the name rules give it (``shared.guards.Write.table``).
TABLES: Mapping[str, Mapping[str, Kind]] = {
    "schedules": SCHEDULE,
    "executions": EXECUTION,
    "idempotency_keys": IDEMPOTENCY,
    "api_keys": API_KEY,
}

# What a read of states and revisions reads (``ScheduleStore.get_schedule_states``): no field
# of the definition (``schedule_of`` reads only the definition of them).
SCHEDULE_STATE: Mapping[str, Kind] = {
    name: kind for name, kind in SCHEDULE.items() if name not in DEFINITION_FIELDS
}

# The instants of an attempt log's entry; its other fields are values.
ATTEMPT_INSTANTS = ("started_at", "finished_at")

# How a backend writes each kind of field down, and reads it back: ``(write, read)`` by kind.
# A kind it does not name (``VALUE``) it keeps as it is, and ``None`` is ``None`` in every one.
Codec = Mapping[Kind, tuple[Callable[[Any], Any], Callable[[Any], Any]]]


def written(codec: Codec, kind: Kind, value: Any) -> Any:
    """A field's value as the backend of ``codec`` holds it."""
    if value is None or kind not in codec:
        return value
    return codec[kind][0](value)


def read(codec: Codec, kind: Kind, raw: Any) -> Any:
    """A value the backend of ``codec`` holds, as its field has it."""
    if raw is None or kind not in codec:
        return raw
    return codec[kind][1](raw)


def definition_fields(definition: ScheduleDefinition, definitions: DefinitionCodec) -> Fields:
    """What a store keeps of a definition: its sealed text, and beside it, unsealed, what
    listing, search and a schedule's own pause read."""
    return {
        "definition": definitions.encode(definition),
        "name": definition.name,
        "tags": list(definition.tags),
        "target": target_of(definition.payload.location),
        "name_key": name_key(definition.name),
        "pause_after_failures": definition.pause_after_failures,
        "priority": definition.priority,
        # The calendars it names: a calendar's change and delete find them by it.
        "calendars": [] if definition.calendar is None else list(definition.calendar.exclude),
    }


def schedule_of(
    fields: Mapping[str, Any],
    definitions: DefinitionCodec,
    cache: DefinitionCache | None = None,
    known: Mapping[Key, ScheduleDefinition] | None = None,
) -> Schedule:
    """With ``cache``, its definition as ``shared.definition_cache`` keeps it by revision. With
    ``known``, the fields were read without the definition (``get_schedule_states``): it is the
    one ``known`` holds for the revision, else ``None``."""
    key = (fields["tenant"], fields["schedule_id"], fields["revision"])
    paused_by = fields.get("paused_by")
    stored = fields.get("definition")
    return _record(
        Schedule,
        fields,
        status=ScheduleStatus(fields["status"]),
        definition=known.get(key)
        if known is not None
        else open_definition(definitions, stored, key, cache),
        stored_definition=stored,
        accepted_at=_required(fields, "accepted_at"),
        created_at=_required(fields, "created_at"),
        updated_at=_required(fields, "updated_at"),
        paused_by=PausedBy(paused_by) if paused_by else None,
    )


def execution_of(fields: Mapping[str, Any]) -> Execution:
    execution = _record(
        Execution,
        fields,
        scheduled_time=_required(fields, "scheduled_time"),
        status=ExecutionStatus(fields["status"]),
        # Its entries made attempts below: the log of a record stored before has the record's.
        attempt_log=(),
    )
    return replace(execution, attempt_log=_attempt_log(fields.get("attempt_log"), execution))


def _attempt_log(
    entries: Sequence[Mapping[str, Any]] | None, execution: Execution
) -> tuple[Attempt, ...]:
    """The record's log; for a record written before attempts were kept, its last one."""
    if entries is None:
        return Attempt.last_of(execution)
    return tuple(
        Attempt.from_entry(entry, entry.get("started_at"), _required(entry, "finished_at"))
        for entry in entries
    )


def idempotency_of(fields: Mapping[str, Any]) -> IdempotencyRecord:
    return _record(
        IdempotencyRecord,
        fields,
        created_at=_required(fields, "created_at"),
        expires_at=_required(fields, "expires_at"),
    )


def idempotency_fields(record: IdempotencyRecord) -> Fields:
    """The fields of a record as they read back (instants to the millisecond)."""
    return {
        name: utc_ms(value) if kind is Kind.INSTANT and value is not None else value
        for name, kind in IDEMPOTENCY.items()
        for value in [getattr(record, name)]
    }


def api_key_of(fields: Mapping[str, Any]) -> ApiKey:
    return ApiKey(
        key_hash=fields["key_hash"],
        tenant=fields["tenant"],
        name=fields.get("name") or "",
        created_at=_required(fields, "created_at"),
        # A key stored before roles could do everything: it is an admin key.
        role=Role(fields.get("role") or Role.ADMIN),
    )


def api_key_fields(key: ApiKey) -> Fields:
    return {name: getattr(key, name) for name in API_KEY} | {"role": key.role.value}


def signing_secret_fields(secret: StoredSigningSecret) -> Fields:
    # A secret's ``id`` is its ``secret_id``; its other fields have its attributes' names.
    return {name: getattr(secret, "secret_id" if name == "id" else name) for name in SIGNING_SECRET}


def signing_secret_of(fields: Mapping[str, Any]) -> StoredSigningSecret:
    return StoredSigningSecret(
        fields["id"], fields["sealed"], fields.get("created_at"), fields.get("retires_at")
    )


R = TypeVar("R")


def _record(cls: type[R], fields: Mapping[str, Any], **given: Any) -> R:
    """A record whose attributes are the stored fields of their names, but those ``given``. An
    attribute with a default takes it where a stored record has no value (a record stored
    before the field was kept lacks it)."""
    values = dict(given)
    for name, defaulted in _attributes(cls):
        if name not in given:
            value = fields.get(name)
            if value is not None or not defaulted:
                values[name] = value
    return cls(**values)


# A record class's attributes, each with whether it has a default: read once per class.
_ATTRIBUTES: dict[type[Any], tuple[tuple[str, bool], ...]] = {}


def _attributes(cls: type[Any]) -> tuple[tuple[str, bool], ...]:
    found = _ATTRIBUTES.get(cls)
    if found is None:
        found = _ATTRIBUTES[cls] = tuple(
            (field.name, field.default is not MISSING or field.default_factory is not MISSING)
            for field in dataclasses.fields(cls)
        )
    return found


def _required(fields: Mapping[str, Any], name: str) -> datetime:
    value = fields.get(name)
    if not isinstance(value, datetime):
        raise ValueError(f"a stored record lacks its {name}")
    return value
