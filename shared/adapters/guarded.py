"""The store's guarded writes of one record, once for every backend.

Each port method here applies a rule of ``shared.store_rules`` with its parameters; a backend
gives only the primitives that apply a rule to one record (``write``, ``write_back``,
``remove``): an ``UPDATE`` and the ``INSERT`` of a record it makes on SQLite, a guarded update
per case (an upsert for the first) on MongoDB; and ``write_many``, rules applied to many
records that exist, in one transaction or one bulk write (``apply_states``). A backend's other
batch methods (``begin_attempts``, ``settle_attempts``, …) apply the same rules to many records
in one statement or command.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Any

from shared.adapters.records import Fields, definition_fields, execution_of, schedule_of
from shared.claim_rules import (
    MOVE_LATE_CHECK,
    late_check_params,
)
from shared.definition_codec import DefinitionCodec
from shared.execution_rules import (
    DISCARD,
    FORGET_IDEMPOTENCY,
    KEEP_IDEMPOTENT_ANSWER,
    REOPEN,
    RESTORE,
)
from shared.guards import Remove, Write
from shared.model import Execution, Schedule, ScheduleStatus
from shared.overlap_rules import (
    HOLD_OVERLAP,
    RELEASE_OVERLAP,
    RENEW_OVERLAP,
    WAIT_OVERLAP,
    WAIT_OVERLAP_FIRST,
    overlap_params,
)
from shared.ports import (
    DefinitionToApply,
    OverlapClaim,
    OverlapSeen,
    OverlapTurn,
    SkipsChange,
    StateChange,
)
from shared.store_queries import Query
from shared.store_rules import (
    DELETE,
    PAUSE,
    PAUSE_ENDED,
    RAISE_TOMBSTONE,
    RESEAL,
    RESUME,
    RESUME_AT_UNTIL,
    SET_FIRST_SKIPS,
    SET_SKIPS,
    definition_params,
    resume_at_until_params,
    skips_params,
    state_params,
)

# The rules that give an occurrence its schedule's overlap marker, the likelier first.
_HOLDS = (HOLD_OVERLAP, RENEW_OVERLAP)


def state_rule(status: ScheduleStatus) -> Write:
    """The rule of a pause (``PAUSED``), resume (``ACTIVE``) or delete (``DELETED``)."""
    rules = {
        ScheduleStatus.PAUSED: PAUSE,
        ScheduleStatus.ACTIVE: RESUME,
        ScheduleStatus.DELETED: DELETE,
    }
    if status not in rules:
        raise ValueError(f"apply_state cannot set status {status.value!r}")
    return rules[status]


class Outcome(Enum):
    CHANGED = "changed"  # the guard held on the stored record, which changed
    MADE = "made"  # there was none: the write made it
    REFUSED = "refused"


class GuardedWrites(ABC):
    definitions: DefinitionCodec

    @abstractmethod
    def write(self, rule: Write, params: Mapping[str, Any]) -> Outcome:
        """Apply ``rule`` to the record its key parameters find: change it where the guard
        holds, or make it where there is none and the rule makes one. Atomic."""

    @abstractmethod
    def write_back(self, rule: Write, params: Mapping[str, Any]) -> Fields | None:
        """``write`` of a rule that makes no record; the record's fields as changed, or
        ``None`` where the guard did not hold."""

    @abstractmethod
    def remove(self, rule: Remove, params: Mapping[str, Any]) -> bool:
        """Delete the record found where the guard holds; whether one was deleted."""

    @abstractmethod
    def write_many(self, writes: Sequence[tuple[Write, Mapping[str, Any]]]) -> list[Outcome]:
        """``write`` of each rule (each of one guarded case) to the record its key parameters
        find, records of one table that exist, each at most once: it makes none. In one
        transaction or one command where the backend allows it; ``CHANGED`` or ``REFUSED``
        for each, in order."""

    @abstractmethod
    def stored_definitions(self) -> Iterator[tuple[str, str, str]]:
        """Each stored definition: its schedule's tenant and id, and its sealed text."""

    def landings(self, definitions: Sequence[DefinitionToApply]) -> list[dict[str, Any]]:
        """``LAND_DEFINITION``'s parameters of each definition (``apply_definitions``), sealed."""
        return [
            definition_params(
                tenant,
                schedule_id,
                revision,
                definition_fields(definition, self.definitions),
                next_time,
                accepted_at,
            )
            for tenant, schedule_id, revision, definition, next_time, accepted_at in definitions
        ]

    def reseal_definitions(self) -> int:
        resealed = 0
        for tenant, schedule_id, text in self.stored_definitions():
            new = self.definitions.resealed(text)
            if new is not None:
                params = {"tenant": tenant, "schedule_id": schedule_id, "read": text}
                written = self.write(RESEAL, {**params, "definition": new})
                resealed += written is Outcome.CHANGED
        return resealed

    def apply_state(self, change: StateChange) -> bool:
        params = state_params(change)
        outcome = self.write(state_rule(change.status), params)
        if change.status is ScheduleStatus.DELETED and outcome is Outcome.REFUSED:
            self.write(RAISE_TOMBSTONE, params)
        return outcome is Outcome.CHANGED

    def apply_states(self, changes: Sequence[StateChange]) -> list[bool]:
        first: dict[tuple[str, str], int] = {}
        for index, change in enumerate(changes):
            first.setdefault((change.tenant, change.schedule_id), index)
        chosen = sorted(first.values())
        writes = []
        for change in (changes[index] for index in chosen):
            writes.append((state_rule(change.status), state_params(change)))
        outcomes = self.write_many(writes)
        applied = dict(zip(chosen, outcomes, strict=True))
        return [applied.get(index) is Outcome.CHANGED for index in range(len(changes))]

    def set_skips(self, change: SkipsChange) -> bool:
        rule = SET_SKIPS if change.read else SET_FIRST_SKIPS
        return self.write(rule, skips_params(change)) is Outcome.CHANGED

    @abstractmethod
    def select(self, query: Query) -> list[Fields]:
        """As ``shared.adapters.reads.Reads.select``."""

    def resume_ended_pauses(self, now: datetime, limit: int) -> list[Schedule]:
        # The pauses that ended, earliest first (an index on both backends), each resumed by a
        # guarded write of the state revision read.
        ended = self.select(
            Query("schedules", PAUSE_ENDED, {"now": now}, ("paused_until",), False, limit)
        )
        return [
            paused
            for paused in (schedule_of(fields, self.definitions) for fields in ended)
            if self.write(RESUME_AT_UNTIL, resume_at_until_params(paused, now)) is Outcome.CHANGED
        ]

    def take_overlaps(self, claims: Sequence[OverlapClaim], now: datetime) -> list[OverlapTurn]:
        # One guarded write after another, each of one schedule: only the occurrences of
        # schedules whose policy is not ``allow`` come here (``allow`` costs nothing).
        return [self._overlap_turn(claim, now) for claim in claims]

    def _overlap_turn(self, claim: OverlapClaim, now: datetime) -> OverlapTurn:
        tenant, schedule_id, occurrence_id, until, buffer, seen, taken_over = claim
        params = overlap_params(tenant, schedule_id, occurrence_id, now, until)
        wait = WAIT_OVERLAP_FIRST if taken_over else WAIT_OVERLAP
        # Another held it as read: wait; the next check takes it if it was freed since.
        waits_first = seen is OverlapSeen.OTHER and (buffer or taken_over)
        if waits_first and self.write(wait, params) is Outcome.CHANGED:
            return OverlapTurn.WAITING
        holds = (RENEW_OVERLAP, HOLD_OVERLAP) if seen is OverlapSeen.MINE else _HOLDS
        for rule in holds:
            if self.write(rule, params) is Outcome.CHANGED:
                return OverlapTurn.HELD
        if (buffer or taken_over) and self.write(wait, params) is Outcome.CHANGED:
            return OverlapTurn.WAITING
        return OverlapTurn.REFUSED

    def release_overlaps(self, held: Sequence[tuple[str, str, str]]) -> None:
        for tenant, schedule_id, occurrence_id in dict.fromkeys(held):
            self.write(RELEASE_OVERLAP, overlap_params(tenant, schedule_id, occurrence_id))

    def move_late_check(self, checked: Schedule, late_check_at: datetime | None) -> bool:
        if checked.late_check_at is None:
            return False
        params = late_check_params(checked, late_check_at)
        return self.write(MOVE_LATE_CHECK, params) is Outcome.CHANGED

    def reopen_dead_letter(
        self, tenant: str, occurrence_id: str, now: datetime
    ) -> Execution | None:
        params = {"tenant": tenant, "occurrence_id": occurrence_id, "now": now}
        fields = self.write_back(REOPEN, params)
        return None if fields is None else execution_of(fields)

    def restore_dead_letter(self, reopened: Execution) -> bool:
        params = {
            "tenant": reopened.tenant,
            "occurrence_id": reopened.occurrence_id,
            "attempts": reopened.attempts,
        }
        return self.write(RESTORE, params) is Outcome.CHANGED

    def discard_dead_letter(self, tenant: str, occurrence_id: str, now: datetime) -> bool:
        params = {"tenant": tenant, "occurrence_id": occurrence_id, "now": now}
        return self.write(DISCARD, params) is Outcome.CHANGED

    def delete_idempotency_record(self, tenant: str, key: str, fingerprint: str) -> bool:
        return self.remove(
            FORGET_IDEMPOTENCY, {"tenant": tenant, "key": key, "fingerprint": fingerprint}
        )

    def keep_idempotency_answer(
        self, tenant: str, key: str, fingerprint: str, answer: str, expires_at: datetime
    ) -> bool:
        params = {
            "tenant": tenant,
            "key": key,
            "fingerprint": fingerprint,
            "answer": answer,
            "expires_at": expires_at,
        }
        return self.write(KEEP_IDEMPOTENT_ANSWER, params) is Outcome.CHANGED
