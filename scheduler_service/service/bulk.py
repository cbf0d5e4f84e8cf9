"""Bulk operations by selector (``POST /schedules/bulk``): pause, resume, delete or patch every
schedule of the tenant a selector matches.

A page at a time, never one long transaction: each page of ``PAGE`` schedules (read in one
listing, by id) is planned, then written in one batch of guarded writes (``StateChanges.
apply_many``: one ``apply_states``; a patch: ``Creation.accept_changes``, one send on queue 1),
through the same checks and rules as the one-schedule endpoints. A request works for
``TIME_BUDGET`` at most, then answers where it stopped: ``done`` false and a ``continue`` token
(the id of the last schedule it went over) that the caller sends back, with the same request,
for the next part. Nothing is kept between requests: any API process takes the next part, and a
part tried again finds the schedules it changed already in their new state (``unchanged``).

With an ``Idempotency-Key``, each part's answer is kept (the create's idempotency records, per
key and ``continue`` token): a repeat of a part gets its first answer again (a repeat with
another body, a 409). A repeat that arrives while the first is still working does the work
again, which the guarded writes find done.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, Generic, TypeVar

from scheduler_service.service.changes import StateChanges
from scheduler_service.service.creating import (
    Accepted,
    Creation,
    IdempotentRequest,
)
from scheduler_service.service.kept_answers import KeptAnswers
from shared.changes import Actor
from shared.errors import InvalidInput, SchedulerError
from shared.model import PauseIntent, Schedule, ScheduleDefinition, ScheduleStatus
from shared.ports import Clock, ScheduleFilter, Store
from shared.settings import Settings

Shown = TypeVar("Shown")

# Schedules read and written together: one listing and one batch of writes.
PAGE = 500
# How long one request works before it answers where it stopped.
TIME_BUDGET = 2.0
# Ids an answer lists of each outcome (the counts are whole).
IDS_SHOWN = 100
# A dry run's sample of the schedules matched.
SAMPLE = 10
# Ids a selector may name.
MAX_IDS = 1000
# What an empty selector is told.
EMPTY_SELECTOR = (
    "name at least one of tag, name_prefix, ids, status, search: an empty selector would match "
    "every schedule, which a bulk operation never does by accident"
)


class BulkAction(StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    DELETE = "delete"
    PATCH = "patch"


# The status each action but a patch sets.
_STATUS = {
    BulkAction.PAUSE: ScheduleStatus.PAUSED,
    BulkAction.RESUME: ScheduleStatus.ACTIVE,
    BulkAction.DELETE: ScheduleStatus.DELETED,
}


@dataclass(frozen=True)
class Selector:
    """Which of the tenant's schedules: every criterion given holds (at least one is). Those
    of the API's selector, and what the console's search adds (``search``, a window of next
    times): "all matching this search" is the list's own filter."""

    tag: str | None = None
    name_prefix: str | None = None
    ids: tuple[str, ...] | None = None
    status: ScheduleStatus | None = None
    search: str | None = None
    next_after: datetime | None = None
    next_before: datetime | None = None

    @classmethod
    def of_listing(cls, listing: ScheduleFilter) -> Selector:
        """The selector of a listing's filter (its order aside)."""
        return cls(**{one.name: getattr(listing, one.name) for one in fields(cls)})

    @property
    def empty(self) -> bool:
        """Whether it names no criterion: it would select every schedule, which no bulk
        operation does."""
        return self == Selector()

    def listing(self) -> ScheduleFilter:
        return ScheduleFilter(**{one.name: getattr(self, one.name) for one in fields(self)})


@dataclass
class BulkAnswer:
    """What a part of a bulk operation did: the schedules it went over (``matched``), how many
    changed, were unchanged (already so) or failed (with reasons), the first ids of each; and
    whether it is ``done``, else the ``continue`` token of the next part."""

    done: bool = False
    continue_token: str | None = None
    matched: int = 0
    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    changed_ids: list[str] = field(default_factory=list)
    unchanged_ids: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    replayed: bool = False

    def count(self, schedule_id: str, outcome: bool | SchedulerError) -> None:
        self.matched += 1
        if isinstance(outcome, SchedulerError):
            self.failed += 1
            if len(self.failures) < IDS_SHOWN:
                self.failures.append({"id": schedule_id, "reason": _reason(outcome)})
        elif outcome:
            self.changed += 1
            if len(self.changed_ids) < IDS_SHOWN:
                self.changed_ids.append(schedule_id)
        else:
            self.unchanged += 1
            if len(self.unchanged_ids) < IDS_SHOWN:
                self.unchanged_ids.append(schedule_id)

    def to_text(self) -> str:
        return json.dumps({**asdict(self), "replayed": False}, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str, replayed: bool) -> BulkAnswer:
        return replace(cls(**json.loads(text)), replayed=replayed)


@dataclass(frozen=True)
class DryRun(Generic[Shown]):
    """How many schedules a selector matches, and the first few (as stored, or presented)."""

    matched: int
    sample: list[Shown]


@dataclass(eq=False)
class Bulk:
    store: Store
    clock: Clock
    settings: Settings
    changes: StateChanges
    creation: Creation
    kept: KeptAnswers

    def dry_run(self, tenant: str, selector: Selector) -> DryRun[Schedule]:
        """How many schedules ``selector`` matches, and the first few; changes nothing."""
        listing = _checked(selector).listing()
        sample = self.store.list_schedules(tenant, listing, SAMPLE, None).items
        return DryRun(self.store.count_matching(tenant, listing), list(sample))

    def count(self, tenant: str, selector: Selector) -> int:
        """How many schedules ``selector`` matches."""
        return self.store.count_matching(tenant, _checked(selector).listing())

    def run(
        self,
        tenant: str,
        action: BulkAction,
        selector: Selector,
        token: str | None,
        idempotency: IdempotentRequest | None = None,
        patch: Callable[[ScheduleDefinition], ScheduleDefinition] | None = None,
        actor: Actor | None = None,
        intent: PauseIntent | None = None,
    ) -> BulkAnswer:
        """One part of the operation, from ``token`` (``None``: the start), see the module
        docstring. ``patch`` gives a schedule's patched definition (``InvalidInput`` naming
        the field); on the first page of the operation a patch refused for any schedule
        refuses the request, and nothing changes; later, it counts as failed. Each change is
        recorded in its schedule's change history as made by ``actor``; a pause keeps
        ``intent`` (who set it)."""
        after = _position(token)
        if idempotency is None:
            return self._work(tenant, action, selector, after, patch, actor, intent)
        answer = self.kept.answer(
            tenant,
            _part_key(idempotency.key, token),
            idempotency,
            self.clock.now(),
            lambda: self._work(tenant, action, selector, after, patch, actor, intent).to_text(),
        )
        return BulkAnswer.from_text(answer.text, answer.replayed)

    def _work(
        self,
        tenant: str,
        action: BulkAction,
        selector: Selector,
        after: str | None,
        patch: Callable[[ScheduleDefinition], ScheduleDefinition] | None,
        actor: Actor | None,
        intent: PauseIntent | None,
    ) -> BulkAnswer:
        answer = BulkAnswer()
        listing = _checked(selector).listing()
        deadline = time.monotonic() + TIME_BUDGET
        first = after is None
        while True:
            page = self.store.list_schedules(tenant, listing, PAGE, after)
            if action is BulkAction.PATCH:
                assert patch is not None
                outcomes = self._patch(tenant, page.items, patch, first, actor)
            else:
                outcomes = list(self.changes.apply_many(page.items, _STATUS[action], actor, intent))
            for schedule, outcome in zip(page.items, outcomes, strict=True):
                answer.count(schedule.schedule_id, outcome)
            first = False
            if page.next_cursor is None or not page.items:
                answer.done = True
                return answer
            after = page.items[-1].schedule_id
            if time.monotonic() >= deadline:
                answer.continue_token = _token(after)
                return answer

    def _patch(
        self,
        tenant: str,
        schedules: Sequence[Schedule],
        patch: Callable[[ScheduleDefinition], ScheduleDefinition],
        first: bool,
        actor: Actor | None,
    ) -> list[bool | SchedulerError]:
        """A page patched: each schedule's new definition (unchanged where the patch changes
        nothing), then the changed ones accepted together."""
        planned: list[bool | SchedulerError | ScheduleDefinition] = []
        for schedule in schedules:
            try:
                changed = patch(schedule.live_definition)
            except InvalidInput as exc:
                if first:
                    raise _refused(exc, schedule) from None
                planned.append(exc)
                continue
            planned.append(False if _same(changed, schedule.live_definition) else changed)
        accepting = [
            (schedule, one)
            for schedule, one in zip(schedules, planned, strict=True)
            if isinstance(one, ScheduleDefinition)
        ]
        try:
            accepted = iter(
                self.creation.accept_changes(tenant, accepting, all_or_none=first, actor=actor)
            )
        except InvalidInput as exc:
            raise _refused(exc, None) from None
        outcomes: list[bool | SchedulerError] = []
        for one in planned:
            if isinstance(one, ScheduleDefinition):
                result = next(accepted)
                outcomes.append(True if isinstance(result, Accepted) else result)
            else:
                outcomes.append(one)
        return outcomes


def _checked(selector: Selector) -> Selector:
    """``selector``, or ``InvalidInput`` naming it where it is empty."""
    if selector.empty:
        raise InvalidInput({"selector": EMPTY_SELECTOR})
    return selector


def _problems(exc: InvalidInput) -> dict[str, str]:
    return {name: " ".join(problems) for name, problems in exc.fields.items()}


def _refused(exc: InvalidInput, schedule: Schedule | None) -> InvalidInput:
    """A patch refused on the first page: its fields named as members of ``patch``."""
    of = f" (schedule {schedule.schedule_id})" if schedule is not None else ""
    return InvalidInput(
        {f"patch.{name}": f"{problem}{of}" for name, problem in _problems(exc).items()}
    )


def _same(changed: ScheduleDefinition, stored: ScheduleDefinition) -> bool:
    """Whether a patched definition is the stored one (the body as sent aside)."""
    return replace(changed, request={}) == replace(stored, request={})


def _reason(exc: SchedulerError) -> str:
    if isinstance(exc, InvalidInput):
        return "; ".join(f"{name}: {problem}" for name, problem in _problems(exc).items())
    return str(exc)


def _token(after: str) -> str:
    text = json.dumps({"after": after}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _position(token: str | None) -> str | None:
    """The schedule id a ``continue`` token names, or ``InvalidInput`` naming ``continue``."""
    if token is None:
        return None
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        after = json.loads(text)["after"]
    except (ValueError, binascii.Error, KeyError, TypeError):
        after = None
    if not isinstance(after, str) or not after:
        raise InvalidInput({"continue": "not a token an answer of this endpoint gave"})
    return after


def _part_key(key: str, token: str | None) -> str:
    """The idempotency record of one part: the key and where the part starts."""
    return "bulk:" + hashlib.sha256(f"{key}\n{token or ''}".encode()).hexdigest()
