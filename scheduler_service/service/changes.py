"""State changes: pause, resume and delete, applied to the store at once.

They do not go through queue 1, because the contract promises that no occurrence fires after a
delete (or pause) is accepted: the executor checks the schedule right before each call, so only
a call already begun when the delete lands completes. Each is guarded by a state revision
(``shared.ports.ScheduleStore.apply_state``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from scheduler_service.service.reading import Reads
from scheduler_service.service.recording import ChangeRecorder, state_field
from scheduler_service.service.revisions import RevisionClock
from shared.calendar_reads import schedules_calendars
from shared.calendars import BusinessCalendar
from shared.changes import Actor, Change, ChangeAction, FieldChange
from shared.errors import InvalidInput, NotFound, Transient
from shared.jsonvalues import JSON
from shared.model import PauseIntent, Schedule, ScheduleStatus
from shared.notations import schedule_recurrence
from shared.ports import Clock, SkipsChange, StateChange, Store
from shared.recurrence import Recurrence, cpu_budget
from shared.timeutil import iso_z

# How many skips a schedule keeps pending at once, and how often a skip reads again when
# another changed them meanwhile.
MAX_SKIPS = 1000
SKIP_TRIES = 5


@dataclass(eq=False)
class StateChanges:
    store: Store
    clock: Clock
    revisions: RevisionClock
    reads: Reads
    recorder: ChangeRecorder

    def delete(self, tenant: str, schedule_id: str, actor: Actor) -> None:
        """Tombstone the schedule now. An unknown id is still tombstoned (a create may be in
        flight on queue 1 and must not land), then reported as not found."""
        existing = self.store.get_schedule(tenant, schedule_id)
        revision = self._apply(tenant, schedule_id, ScheduleStatus.DELETED, None, self.clock.now())
        if existing is None or existing.status is ScheduleStatus.DELETED:
            raise NotFound(schedule_id)
        self.recorder.state_changed(
            tenant,
            schedule_id,
            revision,
            ChangeAction.DELETE,
            actor,
            existing.status,
            ScheduleStatus.DELETED,
        )

    def pause(
        self, tenant: str, schedule_id: str, actor: Actor, intent: PauseIntent | None = None
    ) -> Schedule:
        """Pause an active schedule, with its ``intent``: until when (it resumes by itself
        then, through the poller), a note, who set it. An ``until`` that has passed, or after
        the schedule's last occurrence, is refused naming ``until``."""
        schedule = self.reads.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.ACTIVE:
            now = self.clock.now()
            if intent is not None and intent.until is not None:
                self._check_until(schedule, intent.until, now)
            revision = self._apply(tenant, schedule_id, ScheduleStatus.PAUSED, None, now, intent)
            self.recorder.state_changed(
                tenant,
                schedule_id,
                revision,
                ChangeAction.PAUSE,
                actor,
                schedule.status,
                ScheduleStatus.PAUSED,
                *_intent_fields(intent),
            )
        return self.reads.get(tenant, schedule_id)

    def _check_until(self, schedule: Schedule, until: datetime, now: datetime) -> None:
        if until <= now:
            raise InvalidInput({"until": f"{iso_z(until)} has passed: give a time to come"})
        # Beyond the schedule's end (its last time on its business days): nothing left to
        # resume to.
        calendar = self.reads.business_calendar(schedule)
        try:
            with cpu_budget():
                after = schedule_recurrence(schedule, calendar).first_at_or_after(until)
        except ValueError:  # too costly to say: the pause ends by itself all the same
            return
        if after is None:
            raise InvalidInput(
                {"until": f"{iso_z(until)} is after the schedule's last occurrence: delete it"}
            )

    def resume(self, tenant: str, schedule_id: str, actor: Actor) -> Schedule:
        """Resume from now: occurrences that fell in the pause are not caught up."""
        schedule = self.reads.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.PAUSED:
            now = self.clock.now()
            next_time = resume_time(schedule, now, self.reads.business_calendar(schedule))
            revision = self._apply(tenant, schedule_id, ScheduleStatus.ACTIVE, next_time, now)
            self.recorder.state_changed(
                tenant,
                schedule_id,
                revision,
                ChangeAction.RESUME,
                actor,
                schedule.status,
                ScheduleStatus.ACTIVE,
            )
        return self.reads.get(tenant, schedule_id)

    def apply_many(
        self,
        schedules: Sequence[Schedule],
        status: ScheduleStatus,
        actor: Actor | None = None,
        intent: PauseIntent | None = None,
    ) -> list[bool | InvalidInput]:
        """Pause (``PAUSED``), resume (``ACTIVE``) or delete (``DELETED``) each of stored
        schedules (a bulk operation's page), in one ``apply_states``, as ``pause``, ``resume``
        and ``delete`` would one by one: for each, in order, whether it changed (``False``:
        it was in that state already, or changed meanwhile), or the ``InvalidInput`` of a
        resume whose next time cannot be computed. With ``actor``, those that changed are
        recorded in their change histories, in one write. A pause keeps ``intent`` (who set
        it), as ``pause`` does."""
        now = self.clock.now()
        answers: list[bool | InvalidInput] = []
        changes: list[StateChange] = []
        # A resume's next time is on the business days of the calendars each names: read
        # together, once.
        calendars = schedules_calendars(
            self.store, schedules if status is ScheduleStatus.ACTIVE else ()
        )
        for schedule in schedules:
            next_time = None
            if status is not ScheduleStatus.DELETED and schedule.status is not _FROM[status]:
                answers.append(False)
                continue
            if status is ScheduleStatus.ACTIVE:
                try:
                    key = (schedule.tenant, schedule.schedule_id)
                    next_time = resume_time(schedule, now, calendars.get(key))
                except InvalidInput as exc:
                    answers.append(exc)
                    continue
            key = (schedule.tenant, schedule.schedule_id)
            kept = intent if status is ScheduleStatus.PAUSED else None
            changes.append(StateChange(*key, self.revisions.next(), status, next_time, now, kept))
            answers.append(True)
        done = self.store.apply_states(changes)
        if actor is not None:
            before = {(s.tenant, s.schedule_id): s.status for s in schedules}
            self.store.record_changes(
                [
                    Change(
                        change.tenant,
                        change.schedule_id,
                        change.state_revision,
                        change.state_revision,
                        now,
                        _ACTIONS[status],
                        actor,
                        (state_field(before[change.tenant, change.schedule_id], status),),
                    )
                    for change, changed in zip(changes, done, strict=True)
                    if changed
                ]
            )
        applied = iter(done)
        return [next(applied) if answer is True else answer for answer in answers]

    def skip(
        self, tenant: str, schedule_id: str, actor: Actor, count: int | None, at: datetime | None
    ) -> Schedule:
        """Skip the next ``count`` occurrences (those the rule has from now, a pause or not;
        fewer where a bounded rule has fewer left), or the one at ``at`` (it must be one the
        schedule has, still to come). The executor skips each at its time: recorded skipped
        (superseded), never called; a manual run, a backfill or a replay still runs."""
        now = self.clock.now()
        field = "at" if at is not None else "count"

        def added(schedule: Schedule, pending: tuple[datetime, ...]) -> tuple[datetime, ...]:
            recurrence = self._recurrence(schedule, field)
            if at is not None:
                if at <= now:
                    raise InvalidInput({"at": f"{iso_z(at)} has passed: skip one to come"})
                found = recurrence.first_at_or_after(at)
                if found != at:
                    nearest = "none after it" if found is None else f"the next is {iso_z(found)}"
                    raise InvalidInput(
                        {"at": f"{iso_z(at)} is not an occurrence of this schedule ({nearest})"}
                    )
                return (at,)
            assert count is not None
            times: list[datetime] = []
            try:
                with cpu_budget():
                    moment = recurrence.next_after(now)
                    while moment is not None and len(times) < count:
                        if moment not in pending:
                            times.append(moment)
                        moment = recurrence.next_after(moment)
            except ValueError as exc:  # too costly
                raise InvalidInput({"count": f"too costly to compute ({exc})"}) from None
            if not times:
                raise InvalidInput({"count": "the schedule has no occurrence left to skip"})
            return tuple(times)

        return self._change_skips(tenant, schedule_id, actor, now, added)

    def unskip(self, tenant: str, schedule_id: str, actor: Actor, at: datetime | None) -> Schedule:
        """Undo the skips still to come: all, or the one at ``at`` (a ``400`` naming ``at``
        where none is pending at that time)."""
        now = self.clock.now()

        def kept(schedule: Schedule, pending: tuple[datetime, ...]) -> tuple[datetime, ...]:
            if at is None:
                return ()
            if at not in pending:
                raise InvalidInput({"at": f"no skip of {iso_z(at)} is pending"})
            return tuple(moment for moment in pending if moment != at)

        return self._change_skips(tenant, schedule_id, actor, now, kept, replace=True)

    def _change_skips(
        self,
        tenant: str,
        schedule_id: str,
        actor: Actor,
        now: datetime,
        change: Callable[[Schedule, tuple[datetime, ...]], tuple[datetime, ...]],
        replace: bool = False,
    ) -> Schedule:
        """Read the schedule, work out its skips still to come (``change``: added to them, or
        with ``replace`` instead of them) and write them if unchanged since read, recorded in
        the change history as a ``skip`` (an undo too: its ``skips`` field shows what is left);
        a request at the same time makes it read again."""
        for _ in range(SKIP_TRIES):
            # Completed too: its last occurrences may still be on their way.
            schedule = self.reads.get(tenant, schedule_id)
            pending = tuple(moment for moment in schedule.skips if moment > now)
            new = change(schedule, pending)
            skips = new if replace else tuple(sorted({*pending, *new}))
            if len(skips) > MAX_SKIPS:
                raise InvalidInput({"count": f"at most {MAX_SKIPS} skips pending at once"})
            if self.store.set_skips(
                SkipsChange(tenant, schedule_id, schedule.skips_version, skips)
            ):
                field = FieldChange("skips", _times(pending), _times(skips))
                self.recorder.record(tenant, schedule_id, None, ChangeAction.SKIP, actor, (field,))
                return self.reads.get(tenant, schedule_id)
        raise Transient("the schedule's skips kept changing; try again")

    def _recurrence(self, schedule: Schedule, field: str) -> Recurrence:
        """The times the schedule fires, on its business days: those a skip names."""
        calendar = self.reads.business_calendar(schedule)
        try:
            with cpu_budget():
                return schedule_recurrence(schedule, calendar)
        except ValueError as exc:
            raise InvalidInput({field: f"its occurrences cannot be computed ({exc})"}) from None

    def _apply(
        self,
        tenant: str,
        schedule_id: str,
        status: ScheduleStatus,
        next_time: datetime | None,
        now: datetime,
        intent: PauseIntent | None = None,
    ) -> int:
        """Set the schedule's status (and next time, or a pause's intent) under a new state
        revision; returns it."""
        revision = self.revisions.next()
        self.store.apply_state(
            StateChange(tenant, schedule_id, revision, status, next_time, now, intent)
        )
        return revision


def _intent_fields(intent: PauseIntent | None) -> tuple[FieldChange, ...]:
    """The change history's fields of what a pause says beside itself: until when, its note."""
    if intent is None:
        return ()
    fields = []
    if intent.until is not None:
        fields.append(FieldChange("paused_until", None, iso_z(intent.until)))
    if intent.note is not None:
        fields.append(FieldChange("pause_note", None, intent.note))
    return tuple(fields)


def _times(moments: Sequence[datetime]) -> list[JSON]:
    return [iso_z(moment) for moment in moments]


# What the change history calls a change to each status.
_ACTIONS = {
    ScheduleStatus.PAUSED: ChangeAction.PAUSE,
    ScheduleStatus.ACTIVE: ChangeAction.RESUME,
    ScheduleStatus.DELETED: ChangeAction.DELETE,
}
# What a schedule's status is before a pause (``PAUSED``) or a resume (``ACTIVE``) changes it.
_FROM = {ScheduleStatus.PAUSED: ScheduleStatus.ACTIVE, ScheduleStatus.ACTIVE: ScheduleStatus.PAUSED}


def resume_time(
    schedule: Schedule, now: datetime, calendar: BusinessCalendar | None = None
) -> datetime | None:
    """The next time of a paused schedule resumed at ``now``: its own if still to come, else
    the first of its rule from ``now`` (the occurrences of the pause are not caught up), on the
    business days of ``calendar`` (the calendars it names, as they are now); or
    ``InvalidInput`` naming its notation where that cannot be computed."""
    timing = schedule.live_definition.timing
    candidate = schedule.next_schedule_time
    if candidate is not None and candidate >= now:
        return candidate
    try:
        with cpu_budget():
            return schedule_recurrence(schedule, calendar).first_at_or_after(now)
    except ValueError as exc:  # too costly (TooMuchWork), or no longer readable
        raise InvalidInput(
            {
                f"schedule.{timing.kind}": "cannot resume: its next time cannot be "
                f"computed ({exc}); replace the schedule"
            }
        ) from None
