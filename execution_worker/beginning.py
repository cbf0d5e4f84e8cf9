"""Checking and beginning, on the executor's begin thread: the occurrences due within
``PREPARE_AHEAD`` go through the version check and get their execution records, a batch at a
time.

The check reads the batch's schedules in one ``get_schedules`` (a recurring schedule's
definition opened once per revision: ``shared.definition_cache``): an occurrence of a schedule
deleted, paused or changed since it was sent is superseded (recorded as a skip that is not a
run), one too late for its grace is skipped. Each that goes takes a call slot of its
destination (``HostLimits``; one over the limit parks until a call to it ends) and is begun in
one ``begin_attempts`` per lease length: an attempt under a lease, so a duplicate delivery
never makes a second call.

When the store does not answer (``Transient``), a read raises (before any call slot is taken)
and the batch is due again (the executor waits out the store, ``shared.backoff``); a write
that fails leaves the items it did not settle in ``Plan.not_begun``. A begin whose answer was
lost may have been written: the next try knows the record as its own by the start and lease it
wrote (``Held.begin_tried``) and makes the call, rather than waiting for its own lease to end.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from execution_worker.observer import ExecutorObserver
from execution_worker.sending import HostLimits
from execution_worker.timer import FIRE_SLACK, PREPARE_AHEAD, Held
from shared.decisions import (
    Superseded,
    grace_refusal,
    overlap_blocked,
    overlap_guarded,
    overlap_refusal,
    overlap_seen,
    superseded,
)
from shared.definition_cache import DefinitionCache, Key
from shared.errors import Transient
from shared.messages import open_carried
from shared.model import (
    Execution,
    ExecutionStatus,
    Occurrence,
    OverlapPolicy,
    Schedule,
    ScheduleDefinition,
)
from shared.notifying import FailureEvent, missed_events
from shared.ports import Clock, DeliveryTarget, MessageQueue, OverlapClaim, OverlapTurn, Store
from shared.secrets import SecretBox
from shared.settings import Settings
from shared.targets import DeliveryPayload
from shared.timeutil import utc_ms

# How often an occurrence that waits for an earlier one of its schedule (``buffer_one``) is
# checked again: how long after the earlier one ends at most before it starts.
OVERLAP_RECHECK = timedelta(seconds=1)


@dataclass
class Call:
    """A due occurrence whose attempt is begun: the call to make, and what settles it."""

    item: Held
    schedule: Schedule
    execution: Execution
    host: str
    started: datetime


@dataclass
class Plan:
    """What one check-and-begin batch leaves for the loop."""

    calls: list[Call] = field(default_factory=list)
    to_delete: list[str] = field(default_factory=list)
    # Parked items whose host slot freed while the batch ran: due again.
    due_again: list[Held] = field(default_factory=list)
    # What the observer hears of: the occurrences skipped (with why), those superseded (by
    # which change), and the duplicates.
    skipped: list[tuple[Occurrence, str]] = field(default_factory=list)
    superseded: list[tuple[Occurrence, Superseded]] = field(default_factory=list)
    duplicates: int = 0
    # Items not settled for want of the store (``unavailable`` says why): due again once it
    # answers.
    not_begun: list[Held] = field(default_factory=list)
    unavailable: Transient | None = None
    # Occurrences that wait for an earlier one of their schedule (``buffer_one``): checked
    # again after ``OVERLAP_RECHECK``.
    waiting: list[Held] = field(default_factory=list)
    # The occurrences of schedules with an alert dropped for their grace: told as missed.
    missed: list[FailureEvent] = field(default_factory=list)


class CheckAndBegin:
    def __init__(
        self,
        store: Store,
        occurrences: MessageQueue,
        target: DeliveryTarget[DeliveryPayload],
        hosts: HostLimits[Held],
        settings: Settings,
        owner: str,
        clock: Clock,
        observer: ExecutorObserver,
        box: SecretBox,
    ) -> None:
        """``box`` (the store's) opens the definitions the occurrences carry."""
        self.store = store
        self.box = box
        self.occurrences = occurrences
        self.target = target
        self.hosts = hosts
        self.calls_per_host = settings.executor_calls_per_host
        self.lease_margin = settings.execution_lease_margin_seconds
        self.owner = owner
        self.clock = clock
        self.observer = observer
        self.definitions = DefinitionCache()

    def check_and_begin(self, batch: Sequence[Held]) -> Plan:
        """The version check of the batch in one read, then the records of those that go in
        one write per lease length.

        An item that passed its check at most ``PREPARE_AHEAD`` ago and then waited for a call
        slot of its host is not read again: a check may precede its call by that long anyway.
        """
        plan = Plan()
        now = self.clock.now()
        fresh: dict[int, Schedule] = {}
        for item in batch:
            if item.checked is not None and now - item.checked[1] <= PREPARE_AHEAD:
                fresh[id(item)] = item.checked[0]
        to_read = [item for item in batch if id(item) not in fresh]
        keys = [(item.occurrence.tenant, item.occurrence.schedule_id) for item in to_read]
        carried = self._carried(to_read)
        if carried is None:
            schedules = self.store.get_schedules(keys, self.definitions)
        else:
            schedules = self.store.get_schedule_states(keys, carried)
        # Read before any call slot is taken: a store that fails here fails the batch whole.
        records = {id(item): self._delivered_before(item) for item in batch}
        retries = {
            id(item)
            for item in batch
            if item.occurrence.not_before is not None or _begun(records[id(item)])
        }
        skips: list[tuple[Held, str]] = []
        # Dropped for their grace, of schedules with an alert (``occurrence.missed``).
        graced: list[tuple[Schedule, Occurrence]] = []
        replaced: list[tuple[Held, Superseded]] = []
        going: dict[float, list[tuple[Held, Schedule, str]]] = defaultdict(list)
        # Those of schedules whose overlap policy is not ``allow``: they go once they hold
        # their schedule's marker (``take_overlaps``); ``allow`` costs no write.
        guarded: list[tuple[Held, Schedule]] = []
        releases: list[tuple[str, str, str]] = []
        for item in batch:
            occurrence = item.occurrence
            if _skipped_already(occurrence, records[id(item)]):
                # An earlier delivery skipped it, and its executor died before deleting the
                # message: skipped, it stays so (it would run late, out of its schedule's order).
                # The store refuses its begin anyway (``execution_rules.SKIPPED_FOR_GOOD``, which
                # a first delivery of a copy meets); the record read here spares the overlap
                # marker's take and release, the begin and a second read.
                plan.duplicates += 1
                plan.to_delete.append(item.message.receipt_handle)
                continue
            schedule = fresh.get(id(item)) or schedules.get(
                (occurrence.tenant, occurrence.schedule_id)
            )
            change = superseded(occurrence, schedule)
            if change is not None:
                replaced.append((item, change))
                if overlap_guarded(schedule) or _carried_guarded(occurrence, carried):
                    releases.append(_marker(occurrence))
                continue
            assert schedule is not None
            reason = grace_refusal(occurrence, schedule.live_definition, now, id(item) in retries)
            if reason is not None:
                skips.append((item, reason))
                if schedule.live_definition.alert is not None:
                    graced.append((schedule, occurrence))
                if overlap_guarded(schedule):
                    releases.append(_marker(occurrence))
                continue
            if overlap_guarded(schedule):
                guarded.append((item, schedule))
                continue
            self._take_slot(item, schedule, now, going)
        overlaps_taken = False
        try:
            extend = (
                self._take_overlaps(guarded, retries, now, going, skips, plan) if guarded else []
            )
            overlaps_taken = True
            self.occurrences.change_visibilities(extend)
            if releases:
                # Ended without a call: the marker an earlier delivery took is free again.
                self.store.release_overlaps(releases)
            if replaced:
                self._supersede(replaced, now, plan)
            if skips:
                self._skip(skips, now, plan, graced)
            for timeout, group in going.items():
                self._begin(group, timeout, now, plan)
        except Transient as exc:
            checked = {id(item): item for item, _ in replaced + skips}
            if not overlaps_taken:
                # None of them was settled: all due again (an item skipped as read included).
                checked.update((id(item), item) for item, _ in guarded)
            self._not_begun(exc, now, list(checked.values()), going, plan)
        except Exception:
            # The items not begun keep their messages, which come back after their visibility;
            # their call slots are given back.
            self.observer.begin_failed()
            begun = {id(call.item) for call in plan.calls}
            for group in going.values():
                for item, _, host in group:
                    if id(item) not in begun:
                        self._give_back(host, plan)
        return plan

    def _carried(self, items: Sequence[Held]) -> dict[Key, ScheduleDefinition] | None:
        """The definitions the items' occurrences carry (``shared.messages.carry``), each
        opened once per revision (``self.definitions`` keeps the recurring ones); ``None`` when
        one carries none it can use (a manual run fires its schedule's current revision): then
        the batch's definitions are read from the store."""
        known: dict[Key, ScheduleDefinition] = {}
        for item in items:
            occurrence = item.occurrence
            key = (occurrence.tenant, occurrence.schedule_id, occurrence.revision)
            if occurrence.manual or occurrence.carried is None:
                return None
            if key not in known:
                definition = self.definitions.opened(
                    key, functools.partial(open_carried, occurrence, self.box)
                )
                if definition is None:
                    return None
                known[key] = definition
        return known

    def _take_slot(
        self,
        item: Held,
        schedule: Schedule,
        now: datetime,
        going: dict[float, list[tuple[Held, Schedule, str]]],
    ) -> None:
        """A call slot of the item's destination: it goes, or it parks until one frees."""
        payload = schedule.live_definition.payload
        host = self.target.destination(payload)
        limit = payload.calls_per_host or self.calls_per_host
        if self.hosts.take(host, limit, item):
            going[payload.timeout_seconds].append((item, schedule, host))
        else:
            item.checked = (schedule, now)

    def _take_overlaps(
        self,
        guarded: list[tuple[Held, Schedule]],
        retries: set[int],
        now: datetime,
        going: dict[float, list[tuple[Held, Schedule, str]]],
        skips: list[tuple[Held, str]],
        plan: Plan,
    ) -> list[tuple[str, float]]:
        """Each item of a schedule with an overlap policy claims its schedule's marker for its
        call's lease: it goes (a call slot, as any) if it holds it, waits (``buffer_one``) to be
        checked again, or is skipped. A retry whose hold ended (its executor died mid-call) is
        the earlier run, already begun: it waits first in line instead, under either policy.
        Returns the visibility changes the waiting need."""
        claiming: list[tuple[Held, Schedule]] = []
        claims = []
        for item, schedule in guarded:
            definition = schedule.live_definition
            occurrence = item.occurrence
            buffer = definition.overlap is OverlapPolicy.BUFFER_ONE
            taken_over = id(item) in retries
            if not taken_over and overlap_blocked(schedule, occurrence.occurrence_id, now, buffer):
                # Refused as read, without a write (a busy schedule's skips cost nothing).
                skips.append((item, overlap_refusal(definition.overlap, schedule.overlap_holder)))
                continue
            lease = timedelta(seconds=definition.payload.timeout_seconds + self.lease_margin)
            claiming.append((item, schedule))
            claims.append(
                OverlapClaim(
                    occurrence.tenant,
                    occurrence.schedule_id,
                    occurrence.occurrence_id,
                    now + lease,
                    buffer,
                    overlap_seen(schedule, occurrence.occurrence_id, now),
                    taken_over,
                )
            )
        turns = self.store.take_overlaps(claims, now) if claims else []
        extend: list[tuple[str, float]] = []
        for (item, schedule), claim, turn in zip(claiming, claims, turns, strict=True):
            if turn is OverlapTurn.HELD:
                self._take_slot(item, schedule, now, going)
            elif turn is OverlapTurn.WAITING:
                plan.waiting.append(item)
                if item.visible_at < now + OVERLAP_RECHECK + 2 * FIRE_SLACK:
                    # Invisible to others while it waits here, as long as its wait holds.
                    item.visible_at = claim.until + FIRE_SLACK
                    extend.append(
                        (item.message.receipt_handle, (item.visible_at - now).total_seconds())
                    )
            else:
                reason = overlap_refusal(schedule.live_definition.overlap, schedule.overlap_holder)
                skips.append((item, reason))
        return extend

    def _not_begun(
        self,
        error: Transient,
        now: datetime,
        checked: list[Held],
        going: dict[float, list[tuple[Held, Schedule, str]]],
        plan: Plan,
    ) -> None:
        """The store failed a write of the batch: what it did not settle is due again, each
        going item remembering the begin it tried; their call slots are given back."""
        plan.unavailable = error
        settled = {*plan.to_delete, *(call.item.message.receipt_handle for call in plan.calls)}
        plan.not_begun += [item for item in checked if item.message.receipt_handle not in settled]
        for timeout, group in going.items():
            lease_until = now + timedelta(seconds=timeout + self.lease_margin)
            for item, _, host in group:
                if item.message.receipt_handle not in settled:
                    item.begin_tried += ((now, lease_until),)
                    plan.not_begun.append(item)
                    self._give_back(host, plan)

    def release(self, items: Sequence[Held]) -> None:
        """At a stop, hand the occurrences not begun back to the queue at once."""
        for item in items:
            try:
                self.occurrences.change_visibility(item.message.receipt_handle, 0)
            except Exception:
                self.observer.release_failed()

    def _begin(
        self, group: list[tuple[Held, Schedule, str]], timeout: float, now: datetime, plan: Plan
    ) -> None:
        """Begin the attempts of occurrences whose calls share a timeout (one lease length)."""
        lease = timedelta(seconds=timeout + self.lease_margin)
        executions = self.store.begin_attempts(
            [item.occurrence for item, _, _ in group], self.owner, now, now + lease
        )
        extend: list[tuple[str, float]] = []
        for (item, schedule, host), execution in zip(group, executions, strict=True):
            if execution is None:
                execution = self._not_mine(item, schedule, now, timeout, plan)
                if execution is None:
                    self._give_back(host, plan)
                    continue
            plan.calls.append(Call(item, schedule, execution, host, now))
            lease_until = execution.lease_until or now + lease
            if lease_until > item.visible_at:
                # It comes back only after the lease: then another executor may take over.
                extend.append(
                    (item.message.receipt_handle, (lease_until - now + FIRE_SLACK).total_seconds())
                )
        # In batches: after an outage every overdue occurrence needs it, and one request each
        # (on SQS) held the drain to the queue's round trips.
        self.occurrences.change_visibilities(extend)

    def _give_back(self, host: str, plan: Plan) -> None:
        """Give a call slot back that will not be used; what waited for it is due again."""
        waiter = self.hosts.release(host)
        if waiter is not None:
            plan.due_again.append(waiter)

    def _delivered_before(self, item: Held) -> Execution | None:
        """The record of an occurrence whose message was delivered before (None for a first
        delivery, or a retry sent on with its time, ``not_before``): whether an attempt was
        made already (grace applies to the first attempt only, a retry is late by its
        backoff), or it was skipped. Only a redelivered message needs to look."""
        if item.occurrence.not_before is not None or item.message.receive_count <= 1:
            return None
        occurrence = item.occurrence
        return self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)

    def _not_mine(
        self, item: Held, schedule: Schedule, now: datetime, timeout: float, plan: Plan
    ) -> Execution | None:
        """The occurrence could not be taken: final already (this delivery is a duplicate, and
        goes), or held by another executor's live lease (this message waits for the lease to
        end, in case that executor died: deleting it could lose the occurrence). Unless the
        lease is this delivery's own, from a begin whose answer the store lost, with time left
        for the call: then its record is returned, and the call goes ahead."""
        occurrence = item.occurrence
        record = self.store.get_execution(occurrence.tenant, occurrence.occurrence_id)
        if record is not None and self._begun_before(item, record, now, timeout):
            return record
        if record is not None and not record.status.is_final and record.lease_until is not None:
            wait = record.lease_until - now + FIRE_SLACK
            self.occurrences.change_visibility(
                item.message.receipt_handle, max(wait.total_seconds(), 1.0)
            )
            return None
        plan.duplicates += 1
        plan.to_delete.append(item.message.receipt_handle)
        if overlap_guarded(schedule):
            # Final already: the marker this delivery took goes back.
            self.store.release_overlaps([_marker(occurrence)])
        return None

    def _begun_before(self, item: Held, record: Execution, now: datetime, timeout: float) -> bool:
        """Whether ``record`` is a begin of this delivery whose answer was lost: running under
        this executor's lease, with the very start and lease end one of its failed tries wrote,
        and time left for the call."""
        return (
            record.status is ExecutionStatus.RUNNING
            and record.lease_owner == self.owner
            and record.started_at is not None
            and record.lease_until is not None
            and record.lease_until - now > timedelta(seconds=timeout) + FIRE_SLACK
            and any(
                (record.started_at, record.lease_until) == (utc_ms(start), utc_ms(until))
                for start, until in item.begin_tried
            )
        )

    def _supersede(
        self, replaced: Sequence[tuple[Held, Superseded]], now: datetime, plan: Plan
    ) -> None:
        skips = [(item.occurrence, change.reason) for item, change in replaced]
        self.store.record_skips(skips, now, superseded=True)
        for item, change in replaced:
            plan.to_delete.append(item.message.receipt_handle)
            plan.superseded.append((item.occurrence, change))

    def _skip(
        self,
        skips: Sequence[tuple[Held, str]],
        now: datetime,
        plan: Plan,
        graced: Sequence[tuple[Schedule, Occurrence]] = (),
    ) -> None:
        # Told as missed: those dropped for their grace that no other delivery recorded first.
        plan.missed = [
            event
            for schedule, occurrence in graced
            if not self.store.recorded_occurrences(
                occurrence.tenant, occurrence.schedule_id, [occurrence.occurrence_id]
            )
            for event in missed_events(schedule, [occurrence], now)
        ]
        self.store.record_skips([(item.occurrence, reason) for item, reason in skips], now)
        for item, reason in skips:
            plan.to_delete.append(item.message.receipt_handle)
            plan.skipped.append((item.occurrence, reason))


def _begun(record: Execution | None) -> bool:
    """Whether the record shows an attempt made already (a retry, or a run taken over)."""
    return record is not None and record.attempts > 0


def _skipped_already(occurrence: Occurrence, record: Execution | None) -> bool:
    """Whether a recurring occurrence was skipped (overlap, grace) by an earlier delivery of
    it: final. A superseded one is not (the same occurrence may come again at its schedule's
    new revision), nor a manual run (a backfill runs what was skipped). The record's side of
    ``execution_rules.SKIPPED_FOR_GOOD``, on the record read already."""
    return (
        record is not None
        and record.status is ExecutionStatus.SKIPPED
        and not record.superseded
        and not occurrence.manual
    )


def _carried_guarded(
    occurrence: Occurrence, carried: Mapping[Key, ScheduleDefinition] | None
) -> bool:
    """Whether the definition the occurrence carried takes its schedule's overlap marker: what
    it took under its revision is given back when a change superseded it (the changed
    definition is not read: ``get_schedule_states``)."""
    if carried is None:
        return False
    definition = carried.get((occurrence.tenant, occurrence.schedule_id, occurrence.revision))
    return definition is not None and definition.overlap is not OverlapPolicy.ALLOW


def _marker(occurrence: Occurrence) -> tuple[str, str, str]:
    """What ``release_overlaps`` takes of an occurrence."""
    return occurrence.tenant, occurrence.schedule_id, occurrence.occurrence_id
