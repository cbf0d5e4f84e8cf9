"""State changes: pause, resume and delete, applied to the store at once.

They do not go through queue 1, because the contract promises that no occurrence fires after a
delete (or pause) is accepted: the executor checks the schedule right before each call, so only
a call already begun when the delete lands completes. Each is guarded by a state revision
(``shared.ports.ScheduleStore.apply_state``).
"""

from __future__ import annotations

from datetime import datetime

from scheduler_service.service.reading import Reads
from scheduler_service.service.recording import ChangeRecorder
from scheduler_service.service.revisions import RevisionClock
from shared.changes import Actor, ChangeAction
from shared.errors import InvalidInput, NotFound
from shared.model import Schedule, ScheduleStatus
from shared.notations import build_recurrence
from shared.ports import Clock, Store
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
            timing = schedule.live_definition.timing
            candidate = schedule.next_schedule_time
            if candidate is not None and candidate >= now:
                next_time: datetime | None = candidate
            else:
                try:
                    with cpu_budget():
                        recurrence = build_recurrence(timing, schedule.accepted_at, schedule_id)
                        next_time = recurrence.first_at_or_after(now)
                except ValueError as exc:  # too costly (TooMuchWork), or no longer readable
                    raise InvalidInput(
                        {
                            f"schedule.{timing.kind}": "cannot resume: its next time cannot be "
                            f"computed ({exc}); replace the schedule"
                        }
                    ) from None
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
