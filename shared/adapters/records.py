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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import Any

from shared.definition_cache import DefinitionCache, open_definition
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
    fields: Mapping[str, Any], definitions: DefinitionCodec, cache: DefinitionCache | None = None
) -> Schedule:
    """With ``cache``, its definition as ``shared.definition_cache`` keeps it by revision."""
    key = (fields["tenant"], fields["schedule_id"], fields["revision"])
    paused_by = fields.get("paused_by")
    return Schedule(
        tenant=key[0],
        schedule_id=key[1],
        revision=key[2],
        state_revision=fields["state_revision"],
        status=ScheduleStatus(fields["status"]),
        definition=open_definition(definitions, fields.get("definition"), key, cache),
        next_schedule_time=fields.get("next_schedule_time"),
        accepted_at=_required(fields, "accepted_at"),
        created_at=_required(fields, "created_at"),
        updated_at=_required(fields, "updated_at"),
        occurrence_count=fields.get("occurrence_count") or 0,
        run_count=fields.get("run_count") or 0,
        superseded_count=fields.get("superseded_count") or 0,
        failure_count=fields.get("failure_count") or 0,
        consecutive_failures=fields.get("consecutive_failures") or 0,
        last_run_at=fields.get("last_run_at"),
        last_status=fields.get("last_status"),
        lease_owner=fields.get("lease_owner"),
        lease_until=fields.get("lease_until"),
        paused_by=PausedBy(paused_by) if paused_by else None,
        paused_at=fields.get("paused_at"),
        sent_ahead=tuple(fields.get("sent_ahead") or ()),
        overlap_holder=fields.get("overlap_holder"),
        overlap_until=fields.get("overlap_until"),
        overlap_waiting=fields.get("overlap_waiting"),
        overlap_waiting_until=fields.get("overlap_waiting_until"),
        late_check_at=fields.get("late_check_at"),
        paused_until=fields.get("paused_until"),
        pause_note=fields.get("pause_note"),
        pause_set_by=fields.get("pause_set_by"),
        skips=tuple(fields.get("skips") or ()),
        skips_version=fields.get("skips_version") or 0,
    )


def execution_of(fields: Mapping[str, Any]) -> Execution:
    execution = Execution(
        tenant=fields["tenant"],
        occurrence_id=fields["occurrence_id"],
        schedule_id=fields["schedule_id"],
        scheduled_time=_required(fields, "scheduled_time"),
        status=ExecutionStatus(fields["status"]),
        attempts=fields["attempts"],
        revision=fields["revision"],
        started_at=fields.get("started_at"),
        finished_at=fields.get("finished_at"),
        http_status=fields.get("http_status"),
        duration_ms=fields.get("duration_ms"),
        lateness_ms=fields.get("lateness_ms"),
        error=fields.get("error"),
        next_attempt_at=fields.get("next_attempt_at"),
        lease_owner=fields.get("lease_owner"),
        lease_until=fields.get("lease_until"),
        manual=bool(fields.get("manual")),
        superseded=bool(fields.get("superseded")),
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
    return IdempotencyRecord(
        tenant=fields["tenant"],
        key=fields["key"],
        fingerprint=fields["fingerprint"],
        schedule_id=fields["schedule_id"],
        revision=fields["revision"],
        next_schedule_time=fields.get("next_schedule_time"),
        timezone=fields["timezone"],
        created_at=_required(fields, "created_at"),
        expires_at=_required(fields, "expires_at"),
        answer=fields.get("answer"),
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


def _required(fields: Mapping[str, Any], name: str) -> datetime:
    value = fields.get(name)
    if not isinstance(value, datetime):
        raise ValueError(f"a stored record lacks its {name}")
    return value
