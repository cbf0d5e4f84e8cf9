"""Runs on demand, straight onto queue 2 as the poller sends occurrences: a trigger (one extra
run now), a backfill (the occurrences of a past range that did not run) and a dead letter's
replay; and a dead letter's discard. Each goes as a manual run: it fires even while the schedule
is paused, however late.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime

from scheduler_service.service.reading import Reads
from scheduler_service.service.recording import ChangeRecorder
from shared.backfill import Backfill, backfill_range, plan_backfill
from shared.changes import Actor, ChangeAction, FieldChange
from shared.errors import NotFound, SchedulerError
from shared.formats import cursor_before, manual_occurrence_id
from shared.messages import encode_occurrence
from shared.model import Execution, ExecutionStatus, MisfirePolicy, Occurrence, ScheduleStatus
from shared.ports import Clock, HistoryRequest, OutgoingMessage, Queues, Store

log = logging.getLogger(__name__)

# Execution records read per page while a backfill looks for the runs of its range.
RECORDS_PAGE = 500


class NoDeadLetter(NotFound):
    """No dead letter has this occurrence id (in the tenant): never failed, replayed or
    discarded already. The API answers 404."""


class NotReplayable(SchedulerError):
    """A dead letter of a deleted schedule: a replay would be skipped. The API answers 409."""


@dataclass(eq=False)
class ManualRuns:
    store: Store
    queues: Queues
    clock: Clock
    reads: Reads
    recorder: ChangeRecorder

    def send(self, occurrences: list[Occurrence]) -> None:
        self.queues.occurrences.send([OutgoingMessage(encode_occurrence(o)) for o in occurrences])

    def trigger(self, tenant: str, schedule_id: str) -> Occurrence:
        """One extra run now, with its own occurrence id (``shared.formats``, a manual one:
        never a scheduled occurrence's)."""
        schedule = self.reads.get(tenant, schedule_id)
        now = self.clock.now()
        occurrence = Occurrence(
            tenant=tenant,
            schedule_id=schedule_id,
            revision=schedule.revision,
            scheduled_time=now,
            priority=schedule.live_definition.priority,
            occurrence_id=manual_occurrence_id(schedule_id, now),
            manual=True,
            trace=schedule.live_definition.trace,
        )
        self.send([occurrence])
        return occurrence

    def backfill(
        self,
        tenant: str,
        schedule_id: str,
        start: datetime,
        end: datetime,
        policy: MisfirePolicy,
    ) -> Backfill:
        """Run the schedule's occurrences in ``[start, end)`` that did not run, now
        (``shared.backfill``: each with its normal occurrence id, so the executor and the
        receiver deduplicate them like any redelivery; ``fire_once`` only the latest).
        ``InvalidInput`` naming ``from`` or ``to`` for a range that cannot be backfilled;
        nothing is queued then."""
        schedule = self.reads.get(tenant, schedule_id)
        calendar = self.reads.business_calendar(schedule)
        found = backfill_range(schedule, start, end, self.clock.now(), calendar)
        recorded = self._records_between(tenant, schedule_id, *found.records_window(schedule))
        queued, left_out = plan_backfill(schedule, found, policy, recorded)
        if queued:
            self.send(queued)
        return Backfill(schedule_id, policy, [item.occurrence_id for item in queued], left_out)

    def _records_between(
        self, tenant: str, schedule_id: str, start: datetime, end: datetime
    ) -> dict[str, Execution]:
        """The schedule's execution records scheduled in ``[start, end)``, by occurrence id:
        the history read from ``end`` back. It leaves the superseded out: like every skipped
        occurrence, they did not run."""
        found: dict[str, Execution] = {}
        cursor: str | None = cursor_before(end)
        while cursor is not None:
            page = self.store.list_executions(
                HistoryRequest(tenant, schedule_id, RECORDS_PAGE, cursor)
            )
            for record in page.items:
                if record.scheduled_time < start:
                    return found
                found[record.occurrence_id] = record
            cursor = page.next_cursor
        return found

    def replay(self, tenant: str, occurrence_id: str, actor: Actor) -> Execution:
        """Fire a dead letter again: the same occurrence id and ``Idempotency-Key``, recorded
        as one more attempt of its record (``reopen_dead_letter``), with the schedule's current
        payload; if it fails again it is a dead letter again. ``NoDeadLetter`` if there is none
        by that id, ``NotReplayable`` if its schedule is deleted. Recorded in the schedule's
        change history as a replay by ``actor`` (no revision: it changes no field; its field
        ``occurrence_id`` names the occurrence sent again)."""
        record = self.store.get_execution(tenant, occurrence_id)
        if record is None or record.status is not ExecutionStatus.FAILED:
            raise NoDeadLetter(occurrence_id)
        schedule = self.store.get_schedule(tenant, record.schedule_id)
        if schedule is None or schedule.status is ScheduleStatus.DELETED:
            raise NotReplayable(
                f"schedule {record.schedule_id!r} is deleted: a replay would not fire. "
                "Discard the dead letter instead."
            )
        reopened = self.store.reopen_dead_letter(tenant, occurrence_id, self.clock.now())
        if reopened is None:
            raise NoDeadLetter(occurrence_id)  # discarded or replayed meanwhile
        occurrence = Occurrence(
            tenant=tenant,
            schedule_id=record.schedule_id,
            revision=schedule.revision,
            scheduled_time=record.scheduled_time,
            priority=schedule.live_definition.priority,
            occurrence_id=occurrence_id,
            manual=True,
            trace=schedule.live_definition.trace,
        )
        try:
            self.send([occurrence])
        except BaseException:
            # Nothing will take the reopened record: a dead letter again, to replay later.
            with contextlib.suppress(Exception):
                self.store.restore_dead_letter(reopened)
            raise
        self.recorder.record(
            tenant,
            record.schedule_id,
            None,
            ChangeAction.REPLAY,
            actor,
            (FieldChange("occurrence_id", None, occurrence_id),),
        )
        log.info(
            "dead letter replayed",
            extra={
                "event": "dead_letter_replayed",
                "tenant": tenant,
                "schedule_id": record.schedule_id,
                "occurrence_id": occurrence_id,
            },
        )
        return reopened

    def discard(self, tenant: str, occurrence_id: str) -> None:
        """Take a dead letter off the list; it stays ``failed`` in the schedule's history."""
        if not self.store.discard_dead_letter(tenant, occurrence_id, self.clock.now()):
            raise NoDeadLetter(occurrence_id)
        log.info(
            "dead letter discarded",
            extra={
                "event": "dead_letter_discarded",
                "tenant": tenant,
                "occurrence_id": occurrence_id,
            },
        )
