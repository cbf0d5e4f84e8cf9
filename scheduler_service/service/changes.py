"""State changes: pause, resume and delete, applied to the store at once.

They do not go through queue 1, because the contract promises that no occurrence fires after a
delete (or pause) is accepted: the executor checks the schedule right before each call, so only
a call already begun when the delete lands completes. Each is guarded by a state revision
(``shared.ports.ScheduleStore.apply_state``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from scheduler_service.service.reading import Reads
from scheduler_service.service.recording import ChangeRecorder, state_field
from scheduler_service.service.revisions import RevisionClock
from shared.calendar_reads import business_calendars
from shared.calendars import BusinessCalendar
from shared.changes import Actor, Change, ChangeAction
from shared.errors import InvalidInput, NotFound
from shared.model import Schedule, ScheduleStatus
from shared.notations import build_recurrence
from shared.ports import Clock, StateChange, Store
from shared.recurrence import cpu_budget


class StateChanges:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        revisions: RevisionClock,
        reads: Reads,
        recorder: ChangeRecorder,
    ) -> None:
        self.store = store
        self.clock = clock
        self.revisions = revisions
        self.reads = reads
        self.recorder = recorder

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

    def pause(self, tenant: str, schedule_id: str, actor: Actor) -> Schedule:
        schedule = self.reads.get(tenant, schedule_id)
        if schedule.status is ScheduleStatus.ACTIVE:
            revision = self._apply(
                tenant, schedule_id, ScheduleStatus.PAUSED, None, self.clock.now()
            )
            self.recorder.state_changed(
                tenant,
                schedule_id,
                revision,
                ChangeAction.PAUSE,
                actor,
                schedule.status,
                ScheduleStatus.PAUSED,
            )
        return self.reads.get(tenant, schedule_id)

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
        self, schedules: Sequence[Schedule], status: ScheduleStatus, actor: Actor | None = None
    ) -> list[bool | InvalidInput]:
        """Pause (``PAUSED``), resume (``ACTIVE``) or delete (``DELETED``) each of stored
        schedules (a bulk operation's page), in one ``apply_states``, as ``pause``, ``resume``
        and ``delete`` would one by one: for each, in order, whether it changed (``False``:
        it was in that state already, or changed meanwhile), or the ``InvalidInput`` of a
        resume whose next time cannot be computed. With ``actor``, those that changed are
        recorded in their change histories, in one write."""
        now = self.clock.now()
        answers: list[bool | InvalidInput] = []
        changes: list[StateChange] = []
        # A resume's next time is on the business days of the calendars each names: read
        # together, once.
        calendars = business_calendars(
            self.store,
            (
                ((item.tenant, item.schedule_id), item.live_definition.calendar)
                for item in schedules
                if status is ScheduleStatus.ACTIVE
            ),
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
            changes.append(StateChange(*key, self.revisions.next(), status, next_time, now))
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

    def _apply(
        self,
        tenant: str,
        schedule_id: str,
        status: ScheduleStatus,
        next_time: datetime | None,
        now: datetime,
    ) -> int:
        """Set the schedule's status (and next time) under a new state revision; returns it."""
        revision = self.revisions.next()
        self.store.apply_state(tenant, schedule_id, revision, status, next_time, now)
        return revision


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
            recurrence = build_recurrence(
                timing, schedule.accepted_at, schedule.schedule_id, calendar=calendar
            )
            return recurrence.first_at_or_after(now)
    except ValueError as exc:  # too costly (TooMuchWork), or no longer readable
        raise InvalidInput(
            {
                f"schedule.{timing.kind}": "cannot resume: its next time cannot be "
                f"computed ({exc}); replace the schedule"
            }
        ) from None
