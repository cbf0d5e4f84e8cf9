"""A schedule's change history: who changed it, when, at which revision, and what changed.

Every change a caller, the console or the service itself makes to a schedule is recorded as a
``Change``: its ``action``, the ``Actor`` who made it, its time, and the fields it changed, each
as a path (``payload.url``, ``schedule.cron``, ``state``) with its old and new value as an answer
shows them, secrets masked (``scheduler_service.service.recording`` makes them). A change is
known by its schedule and its ``seq``: the revision it made (a microsecond clock), or for a change
that makes none (a replay) a value of the same clock. Written twice, it is kept once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from shared.jsonvalues import JSON
from shared.timeutil import utc_ms


class ChangeAction(StrEnum):
    CREATE = "create"
    REPLACE = "replace"
    PATCH = "patch"
    PAUSE = "pause"
    RESUME = "resume"
    SKIP = "skip"
    DELETE = "delete"
    # A schedule paused by its pause_after_failures (the actor is SYSTEM).
    AUTOMATIC_PAUSE = "automatic_pause"
    # A dead letter of the schedule sent again.
    REPLAY = "replay"


class ActorKind(StrEnum):
    # A call of the API with a key (or, where no key is needed, without one: no id, no name).
    API_KEY = "api_key"
    # The console, signed in with a key (its id and name, when it has one).
    CONSOLE = "console"
    # The service itself (a pause after failures).
    SYSTEM = "system"


@dataclass(frozen=True)
class Actor:
    """Who made a change: the API key's id (``shared.ports.ApiKey.key_id``) and name."""

    kind: ActorKind
    key_id: str | None = None
    name: str | None = None

    def to_document(self) -> dict[str, JSON]:
        return {"kind": self.kind.value, "key_id": self.key_id, "name": self.name}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Actor:
        return cls(ActorKind(document["kind"]), document.get("key_id"), document.get("name"))


SYSTEM = Actor(ActorKind.SYSTEM, None, "system")


@dataclass(frozen=True)
class FieldChange:
    """One field changed, by its path, with the values an answer shows (``secret``: the field
    holds a secret; both values are then masked, whether or not they differ)."""

    path: str
    old: JSON
    new: JSON
    secret: bool = False

    def to_document(self) -> dict[str, JSON]:
        return {"path": self.path, "old": self.old, "new": self.new, "secret": self.secret}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> FieldChange:
        return cls(document["path"], document["old"], document["new"], bool(document["secret"]))


@dataclass(frozen=True)
class ChangeNote:
    """What a change is before it is stored: carried on queue 1 with the definition it makes,
    and stored with it by the processor."""

    action: ChangeAction
    actor: Actor
    fields: tuple[FieldChange, ...]

    def to_document(self) -> dict[str, JSON]:
        return {
            "action": self.action.value,
            "actor": self.actor.to_document(),
            "fields": [item.to_document() for item in self.fields],
        }

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> ChangeNote:
        return cls(
            ChangeAction(document["action"]),
            Actor.from_document(document["actor"]),
            fields_of(document["fields"]),
        )


def fields_of(documents: Sequence[Mapping[str, JSON]]) -> tuple[FieldChange, ...]:
    return tuple(FieldChange.from_document(item) for item in documents)


@dataclass(frozen=True)
class Change:
    """A change as stored. ``revision`` is the schedule's revision it made (``None`` for one
    that makes none: a replay); ``seq`` orders a schedule's changes and keeps each once."""

    tenant: str
    schedule_id: str
    seq: int
    revision: int | None
    at: datetime
    action: ChangeAction
    actor: Actor
    fields: tuple[FieldChange, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "at", utc_ms(self.at))

    @classmethod
    def of(
        cls, tenant: str, schedule_id: str, revision: int, at: datetime, note: ChangeNote
    ) -> Change:
        """The change ``note`` describes, making ``revision`` at ``at``."""
        action, actor = note.action, note.actor
        return cls(tenant, schedule_id, revision, revision, at, action, actor, note.fields)
