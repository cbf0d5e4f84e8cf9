"""What travels on the queues, and the one way to decode it.

A message that cannot be decoded raises ``PoisonMessage``: the worker dead-letters it and goes on.

An occurrence on queue 2 carries what its fire needs of its schedule's revision (``carry``):
the definition's text the poller read when it claimed the schedule, as the store keeps it,
sealed whole with the store's ``SecretBox`` for that tenant, schedule and revision only
(it opens for no other). The executor's version check then reads the schedule's revision and
state, not its definition (``open_carried``; ``shared.ports.ScheduleStore.get_schedule_states``).
A message that would be longer than ``CARRIED_MESSAGE_BYTES`` with it goes without it, as a
message sent before it was carried: the executor reads that definition from the store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.changes import ChangeNote
from shared.definition_codec import DefinitionCodec
from shared.errors import ConfigurationError, PoisonMessage
from shared.model import Occurrence, ScheduleDefinition
from shared.secrets import SecretBox
from shared.timeutil import iso_z, parse_iso
from shared.tracing import TRACEPARENT, TraceContext

FORMAT_VERSION = 1
# The longest occurrence message that carries its definition (SQS takes 256 KiB a message and a
# batch): a longer one goes without it.
CARRIED_MESSAGE_BYTES = 64 * 1024


@dataclass(frozen=True)
class DefinitionMutation:
    """Queue 1: create or replace the definition of a schedule, as accepted by the API."""

    tenant: str
    schedule_id: str
    revision: int
    accepted_at: datetime
    definition: ScheduleDefinition
    # The change history's note of it (shared.changes), stored by the processor with it. A
    # message sent before notes existed has none.
    change: ChangeNote | None = None


def encode_mutation(mutation: DefinitionMutation, secrets: SecretBox) -> str:
    """The message, with the payload's secret parts sealed by ``secrets``."""
    message: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "kind": "definition",
        "tenant": mutation.tenant,
        "schedule_id": mutation.schedule_id,
        "revision": mutation.revision,
        "accepted_at": iso_z(mutation.accepted_at),
        "definition": DefinitionCodec(secrets).to_document(mutation.definition),
    }
    if mutation.change is not None:
        # Masked already: no secret travels in it.
        message["change"] = mutation.change.to_document()
    return json.dumps(message, separators=(",", ":"))


def decode_mutation(body: str, secrets: SecretBox) -> DefinitionMutation:
    """``PoisonMessage`` also when no key of ``secrets`` opens its payload."""
    try:
        data = _load(body, "definition")
        return DefinitionMutation(
            tenant=data["tenant"],
            schedule_id=data["schedule_id"],
            revision=int(data["revision"]),
            accepted_at=_instant(data["accepted_at"]),
            definition=DefinitionCodec(secrets).from_document(data["definition"]),
            change=ChangeNote.from_document(data["change"]) if "change" in data else None,
        )
    except PoisonMessage:
        raise
    except ConfigurationError as exc:
        raise PoisonMessage(f"undecodable mutation: {exc}") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise PoisonMessage(f"undecodable mutation: {exc!r}") from exc


def encode_occurrence(occurrence: Occurrence, carried: str | None = None) -> str:
    """The message; with ``carried`` (else the occurrence's own), what its fire needs
    (``carry``) when the message stays within ``CARRIED_MESSAGE_BYTES`` with it."""
    message: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "kind": "occurrence",
        "tenant": occurrence.tenant,
        "schedule_id": occurrence.schedule_id,
        "occurrence_id": occurrence.occurrence_id,
        "revision": occurrence.revision,
        "scheduled_time": iso_z(occurrence.scheduled_time),
        "priority": occurrence.priority,
        "manual": occurrence.manual,
    }
    if occurrence.not_before is not None:
        message["not_before"] = iso_z(occurrence.not_before)
    if occurrence.trace is not None:
        message.update(occurrence.trace.headers())
    carried = occurrence.carried if carried is None else carried
    if carried is not None:
        body = json.dumps({**message, "carried": carried}, separators=(",", ":"))
        if len(body) <= CARRIED_MESSAGE_BYTES:
            return body
    return json.dumps(message, separators=(",", ":"))


def decode_occurrence(body: str) -> Occurrence:
    try:
        data = _load(body, "occurrence")
        return Occurrence(
            tenant=data["tenant"],
            schedule_id=data["schedule_id"],
            occurrence_id=data["occurrence_id"],
            revision=int(data["revision"]),
            scheduled_time=_instant(data["scheduled_time"]),
            priority=int(data.get("priority", 5)),
            manual=bool(data.get("manual", False)),
            not_before=_instant(data["not_before"]) if "not_before" in data else None,
            # Absent from a message sent before traces were carried (during an upgrade).
            trace=TraceContext.from_document(data) if TRACEPARENT in data else None,
            # Absent from a message too large to carry it, or sent before it was carried.
            carried=_text(data.get("carried")),
        )
    except PoisonMessage:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise PoisonMessage(f"undecodable occurrence: {exc!r}") from exc


def carry(tenant: str, schedule_id: str, revision: int, stored: str, box: SecretBox) -> str:
    """What an occurrence of revision ``revision`` needs to fire: its definition's text as the
    store keeps it (``shared.definition_codec``: its secrets sealed), copied as it is and
    sealed whole by ``box`` for this tenant, schedule and revision, so that it opens for no
    other (a message cannot carry another schedule's or revision's definition)."""
    return box.seal_text(stored, _carried_for(tenant, schedule_id, revision))


def open_carried(occurrence: Occurrence, box: SecretBox) -> ScheduleDefinition | None:
    """The definition the occurrence carries (``carry``), but what no fire reads (the request
    as the client sent it, and that request's trace: each occurrence carries its own); None
    when it carries none, or none that ``box`` opens for its tenant, schedule and revision
    (sealed for another, or with a key since dropped): then the store's is read."""
    if occurrence.carried is None:
        return None
    purpose = _carried_for(occurrence.tenant, occurrence.schedule_id, occurrence.revision)
    text = box.open_text(occurrence.carried, purpose)
    if text is None:
        return None
    try:
        document = json.loads(text)
        document.pop("request", None)
        document.pop("trace", None)
        # A message sent before the stored text was carried holds the definition unsealed:
        # ``SecretBox.open`` gives such a document as it is.
        return ScheduleDefinition.from_document(box.open(document))
    except (ConfigurationError, AttributeError, KeyError, TypeError, ValueError):
        return None


def _carried_for(tenant: str, schedule_id: str, revision: int) -> str:
    # As JSON: no tenant and schedule id can spell another pair's.
    return json.dumps(["carried", tenant, schedule_id, revision])


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"not text: {type(value).__name__}")


def _load(body: str, kind: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (TypeError, ValueError) as exc:
        # Never the body itself: it may carry a schedule's headers.
        raise PoisonMessage(f"not JSON ({len(body)} characters)") from exc
    if not isinstance(data, dict) or data.get("kind") != kind:
        raise PoisonMessage(f"not a {kind} message ({len(body)} characters)")
    if data.get("v") != FORMAT_VERSION:
        raise PoisonMessage(f"unknown message format version {data.get('v')!r}")
    return data


def _instant(text: str) -> datetime:
    moment = parse_iso(text)
    if moment.tzinfo is None:
        raise ValueError(f"naive time {text!r} in a message")
    return moment
