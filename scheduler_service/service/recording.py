"""The change history's recorder: every change to a schedule goes through here.

How to record a change (``ScheduleService.recorder``, a ``ChangeRecorder``):

- A change of the definition (create, replace, patch, and whatever makes a new definition) goes
  through ``Creation.accept_definition(..., actor=..., action=...)``, which asks
  ``definition_note`` for the note and sends it on queue 1 with the definition; the processor
  stores it in the same batch as the definitions (one more command a batch, not a schedule).
- A change applied to the store at once (pause, resume, delete, skip, pause until…): after the
  store took it, ``record(tenant, schedule_id, revision, action, actor, fields)`` with the
  revision the change made (``state_changed`` builds the ``state`` field for a status change).
  One write; written again with the same revision, it is kept once.
- A change that makes no revision (a replay): ``record`` with ``revision=None``; it gets a
  ``seq`` of the revision clock.

The fields are paths into the schedule as an answer shows it (``payload.url``,
``schedule.cron``, ``retry.max_attempts``, ``state``), each with its old and new value masked as
an answer masks them (``shared.secrets.masked_payload``, ``masked_hook``). A field that holds a
secret is marked ``secret`` and shows only masked values: that it changed, never what it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from scheduler_service.service.revisions import RevisionClock
from shared.changes import Actor, Change, ChangeAction, ChangeNote, FieldChange
from shared.jsonvalues import JSON, json_equal
from shared.model import ScheduleDefinition, ScheduleStatus
from shared.ports import ChangeStore, Clock
from shared.secrets import masked_hook, masked_payload

STATE = "state"
# A value longer than this as JSON is shown as its first characters and its length (a body
# of 200 KB is not read in a history, and would double the size of the message on queue 1).
VALUE_CHARACTERS = 2000


def definition_document(
    definition: ScheduleDefinition | None, patterns: Iterable[str] | None
) -> dict[str, JSON]:
    """The parts of the schedule a definition makes, as an answer shows them (the body a
    ``PUT`` would send, and its ``timezone``): masked with ``patterns``, or as stored with
    ``None``. Nothing for no definition."""
    if definition is None:
        return {}
    document = {**definition.body(), "timezone": definition.timing.timezone}
    if patterns is not None:
        patterns = tuple(patterns)
        document["payload"] = masked_payload(definition.payload, patterns)
        document["on_failure"] = masked_hook(definition.on_failure, patterns)
    return document


def flattened(document: Mapping[str, JSON], prefix: str = "") -> dict[str, JSON]:
    """Each leaf of ``document`` by its dotted path; a list, an empty object and a scalar are
    leaves."""
    found: dict[str, JSON] = {}
    for name, value in document.items():
        path = f"{prefix}{name}"
        if isinstance(value, dict) and value:
            found.update(flattened(value, f"{path}."))
        else:
            found[path] = value
    return found


def field_changes(
    before: ScheduleDefinition | None, after: ScheduleDefinition | None, patterns: Sequence[str]
) -> tuple[FieldChange, ...]:
    """What changed from ``before`` to ``after``, path by path, in path order: compared as
    stored, shown masked. A path whose masked value differs from its stored one, on either side,
    is a secret: both sides shown masked."""
    stored = (
        flattened(definition_document(before, None)),
        flattened(definition_document(after, None)),
    )
    shown = (
        flattened(definition_document(before, patterns)),
        flattened(definition_document(after, patterns)),
    )
    changes = []
    for path in sorted(stored[0].keys() | stored[1].keys()):
        old, new = stored[0].get(path), stored[1].get(path)
        if json_equal(old, new):
            continue
        old_shown, new_shown = shown[0].get(path), shown[1].get(path)
        secret = not json_equal(old_shown, old) or not json_equal(new_shown, new)
        changes.append(FieldChange(path, bounded(old_shown), bounded(new_shown), secret))
    return tuple(changes)


def bounded(value: JSON) -> JSON:
    """``value``, or for a long one the first ``VALUE_CHARACTERS`` of its JSON text and its
    length."""
    if isinstance(value, bool | int | float) or value is None:
        return value
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if len(text) <= VALUE_CHARACTERS:
        return value
    return f"{text[:VALUE_CHARACTERS]}… ({len(text)} characters)"


class ChangeRecorder:
    def __init__(
        self, store: ChangeStore, clock: Clock, revisions: RevisionClock, patterns: Sequence[str]
    ) -> None:
        """``patterns``: the secret header names (``Settings.secret_headers``) reads mask."""
        self.store = store
        self.clock = clock
        self.revisions = revisions
        self.patterns = tuple(patterns)

    def definition_note(
        self,
        actor: Actor,
        before: ScheduleDefinition | None,
        after: ScheduleDefinition,
        action: ChangeAction | None = None,
    ) -> ChangeNote:
        """The note of a new definition replacing ``before`` (``None``: none stored, or a
        deleted schedule's): ``action``, else a create or a replace."""
        if action is None:
            action = ChangeAction.CREATE if before is None else ChangeAction.REPLACE
        return ChangeNote(action, actor, field_changes(before, after, self.patterns))

    def record(
        self,
        tenant: str,
        schedule_id: str,
        revision: int | None,
        action: ChangeAction,
        actor: Actor,
        fields: Sequence[FieldChange] = (),
        at: datetime | None = None,
    ) -> Change:
        """Keep a change the store has taken, made at ``at`` (now by default)."""
        seq = revision if revision is not None else self.revisions.next()
        change = Change(
            tenant,
            schedule_id,
            seq,
            revision,
            at or self.clock.now(),
            action,
            actor,
            tuple(fields),
        )
        self.store.record_changes([change])
        return change

    def state_changed(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        action: ChangeAction,
        actor: Actor,
        old: ScheduleStatus,
        new: ScheduleStatus,
        *also: FieldChange,
    ) -> Change:
        """``record`` of a change of the schedule's status (``state``), and ``also``."""
        state = state_field(old, new)
        return self.record(tenant, schedule_id, revision, action, actor, (state, *also))


def state_field(old: ScheduleStatus, new: ScheduleStatus) -> FieldChange:
    """The field of a change of a schedule's status."""
    return FieldChange(STATE, old.value, new.value)
