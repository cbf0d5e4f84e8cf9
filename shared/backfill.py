"""Backfill: which occurrences of a past range of a schedule run again, and why the others do
not. No I/O: the caller reads the schedule and its records, and sends what the plan queues.

A backfill runs the occurrences in ``[start, end)`` that did not run, each with its normal
occurrence id (so the executor and the receiver deduplicate them like any redelivery), as
manual runs: they fire even while the schedule is paused and however late they are. Left out:
those that succeeded or failed already (a failed one is a dead letter: replay it) or are in
flight, those the schedule would never have fired (``outside_bounds``), and with ``fire_once``
all but the latest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from shared.calendars import BusinessCalendar
from shared.errors import InvalidInput
from shared.model import Execution, ExecutionStatus, MisfirePolicy, Occurrence, Schedule
from shared.notations import schedule_recurrence
from shared.recurrence import Bounded, TooMuchWork, cpu_budget
from shared.timeutil import iso_z

# A backfill's range: at most this long, holding at most this many occurrences.
MAX_BACKFILL_DAYS = 366
MAX_BACKFILL_OCCURRENCES = 1000


class LeftOut(NamedTuple):
    """An occurrence a backfill did not run, and why."""

    occurrence_id: str
    reason: str


@dataclass(frozen=True)
class Backfill:
    """What a backfill of a schedule queued, and what it left out and why (by occurrence id)."""

    schedule_id: str
    policy: MisfirePolicy
    queued: list[str]
    left_out: list[LeftOut]


@dataclass(frozen=True)
class BackfillRange:
    """The times of a schedule's timing in a range, its bounds aside (``moments``, ascending),
    and those of them the schedule would never fire, with why (``outside``)."""

    start: datetime
    end: datetime
    moments: list[datetime]
    outside: dict[datetime, str]

    def records_window(self, schedule: Schedule) -> tuple[datetime, datetime]:
        """Where the records of these occurrences are: a record's scheduled time is when it
        fired, up to the schedule's jitter after its nominal time."""
        jitter = timedelta(seconds=schedule.live_definition.jitter_seconds)
        return self.start, self.end + jitter


def backfill_range(
    schedule: Schedule,
    start: datetime,
    end: datetime,
    now: datetime,
    calendar: BusinessCalendar | None = None,
) -> BackfillRange:
    """The schedule's times in ``[start, end)`` (on the business days of ``calendar``, the
    calendars it names as they are now), within one CPU budget; ``InvalidInput`` naming
    ``from`` or ``to`` for a range that is empty, in the future, longer than
    ``MAX_BACKFILL_DAYS``, holding more than ``MAX_BACKFILL_OCCURRENCES`` or too costly."""
    errors: dict[str, str] = {}
    if end > now:
        errors["to"] = "in the future: a backfill runs occurrences that have passed"
    if end <= start:
        errors["from"] = "must be before to"
    elif end - start > timedelta(days=MAX_BACKFILL_DAYS):
        errors["from"] = f"the range is longer than {MAX_BACKFILL_DAYS} days; split it"
    if errors:
        raise InvalidInput(errors)
    limit = schedule.live_definition.timing.max_occurrences
    # One budget for the range's times and for where max_occurrences ends.
    try:
        with cpu_budget():
            recurrence = schedule_recurrence(schedule, calendar)
            moments = times_between(recurrence, start, end)
            try:
                outside = outside_bounds(recurrence, schedule.accepted_at, limit, moments)
            except TooMuchWork:
                raise InvalidInput(
                    {
                        "from": f"max_occurrences ({limit}) counts from the schedule's "
                        "first occurrence: too many of them lie before this range to count "
                        "in time"
                    }
                ) from None
    except TooMuchWork as exc:
        raise InvalidInput({"from": f"the range is too costly to compute: {exc}"}) from None
    return BackfillRange(start, end, moments, outside)


def plan_backfill(
    schedule: Schedule,
    found: BackfillRange,
    policy: MisfirePolicy,
    recorded: Mapping[str, Execution],
) -> tuple[list[Occurrence], list[LeftOut]]:
    """The occurrences of ``found`` to run now, oldest first, and those left out with why
    (sorted by occurrence id), given the schedule's ``recorded`` executions by occurrence id
    (a skipped one did not run: it runs)."""
    definition = schedule.live_definition
    candidates: list[Occurrence] = []
    left_out: list[LeftOut] = []
    for moment in found.moments:
        occurrence = Occurrence(
            tenant=schedule.tenant,
            schedule_id=schedule.schedule_id,
            revision=schedule.revision,
            scheduled_time=moment,
            priority=definition.priority,
            manual=True,
            trace=definition.trace,
        )
        record = recorded.get(occurrence.occurrence_id)
        if record is not None and record.status is not ExecutionStatus.SKIPPED:
            left_out.append(LeftOut(occurrence.occurrence_id, f"already {record.status.value}"))
        elif moment in found.outside:
            left_out.append(LeftOut(occurrence.occurrence_id, found.outside[moment]))
        else:
            candidates.append(occurrence)
    if policy is MisfirePolicy.FIRE_ONCE and len(candidates) > 1:
        left_out += [
            LeftOut(item.occurrence_id, "fire_once runs the latest") for item in candidates[:-1]
        ]
        candidates = candidates[-1:]
    return candidates, sorted(left_out)


def times_between(recurrence: Bounded, start: datetime, end: datetime) -> list[datetime]:
    """The times of the timing in ``[start, end)`` without its bounds (those outside them are
    left out of a backfill, and said); ``InvalidInput`` naming ``from`` if there are more than
    ``MAX_BACKFILL_OCCURRENCES``."""
    moments: list[datetime] = []
    moment = recurrence.inner.first_at_or_after(start)
    while moment is not None and moment < end:
        if len(moments) == MAX_BACKFILL_OCCURRENCES:
            raise InvalidInput(
                {
                    "from": f"the range holds more than {MAX_BACKFILL_OCCURRENCES} "
                    "occurrences; split it"
                }
            )
        moments.append(moment)
        moment = recurrence.inner.next_after(moment)
    return moments


def outside_bounds(
    recurrence: Bounded, accepted_at: datetime, limit: int | None, moments: list[datetime]
) -> dict[datetime, str]:
    """Which of ``moments`` (ascending times of ``recurrence.inner``) the schedule would never
    fire, and why: before its ``start``, after its ``end``, or, with ``limit``
    (``max_occurrences``), not among its first ``limit`` occurrences, counted as the poller
    counts them: from the first at or after its acceptance."""
    first: datetime | None = None
    last: datetime | None = None  # the limit-th, when the moments go past it
    if limit is not None and moments:
        for number, moment in enumerate(recurrence.upcoming(accepted_at, limit), 1):
            first = first or moment
            if moment >= moments[-1]:
                break
            if number == limit:
                last = moment
    outside: dict[datetime, str] = {}
    for moment in moments:
        if recurrence.start is not None and moment < recurrence.start:
            outside[moment] = f"before the schedule's start ({iso_z(recurrence.start)})"
        elif recurrence.end is not None and moment > recurrence.end:
            outside[moment] = f"after the schedule's end ({iso_z(recurrence.end)})"
        elif limit is not None and (first is None or moment < first):
            outside[moment] = "before the first occurrence, from which max_occurrences counts"
        elif last is not None and moment > last:
            outside[moment] = f"beyond max_occurrences ({limit}), the last was {iso_z(last)}"
    return outside
