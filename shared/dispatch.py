"""The poller's decision for one claimed schedule: which occurrences to send, which were missed;
and, from what that decision keeps, when a schedule fires next.

Pure domain logic: given the schedule, the current time and the look-ahead horizon, it walks the
occurrences from ``next_schedule_time`` and says what to enqueue, what to record as skipped,
where ``next_schedule_time`` moves to and which times sent are still to come.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.calendars import BusinessCalendar
from shared.formats import occurrence_id
from shared.model import MisfirePolicy, Occurrence, Schedule, ScheduleStatus
from shared.notations import schedule_recurrence
from shared.recurrence import CPU_BUDGET_SECONDS, TooMuchWork, cpu_budget

# How many missed occurrences one claim walks through; a longer outage is worked off over
# several polls.
MAX_MISSED_WALK = 10_000
# How many sent occurrences may still be to come, per schedule. The store keeps their times
# (``Schedule.sent_ahead``) so that a read shows the next fire without computing the rule; a
# schedule firing more often than this within the look-ahead is sent this far ahead only.
MAX_SENT_AHEAD = 100
_MS = timedelta(milliseconds=1)


def fire_time(occurrence_id: str, nominal: datetime, jitter_seconds: float) -> datetime:
    """When an occurrence fires: its ``nominal`` time plus a delay from 0 to ``jitter_seconds``
    (to the millisecond) drawn from a hash of its id. Spread over the window, yet the same
    whenever it is computed: a re-send after a poller died, a retry, a redelivery."""
    window_ms = round(jitter_seconds * 1000)
    if window_ms <= 0:
        return nominal
    digest = hashlib.sha256(occurrence_id.encode()).digest()
    return nominal + timedelta(milliseconds=int.from_bytes(digest[:8], "big") % (window_ms + 1))


@dataclass(frozen=True)
class SkippedOccurrence:
    occurrence: Occurrence
    reason: str


@dataclass(frozen=True)
class DispatchPlan:
    to_send: list[Occurrence]
    skipped: list[SkippedOccurrence]
    next_schedule_time: datetime | None
    occurrence_count: int
    missed_count: int = 0
    # The nominal times sent that are still to come: ``Schedule.sent_ahead`` after the advance.
    sent_ahead: tuple[datetime, ...] = ()


def plan_dispatch(
    schedule: Schedule,
    now: datetime,
    horizon: datetime,
    max_to_send: int,
    misfire_threshold: timedelta,
    budget_seconds: float = CPU_BUDGET_SECONDS,
    calendar: BusinessCalendar | None = None,
) -> DispatchPlan:
    """Walk the occurrences of a due schedule up to ``horizon``.

    An occurrence is *missed* when it is more than ``misfire_threshold`` overdue (every worker
    was down, or the backlog was long) and it was not the first time of a one-time schedule
    accepted after it had passed (that one fires, whatever the policy). Missed occurrences
    follow the schedule's misfire policy: ``fire_all`` sends each, ``fire_once`` sends the most
    recent and skips the others, ``skip`` skips them all. At most ``max_to_send`` occurrences
    are sent per claim, and no more than ``MAX_SENT_AHEAD`` are ever still to come: the rest
    wait for a later poll.

    The whole walk gets ``budget_seconds`` of CPU (``cpu_budget``). A walk that runs out of it
    keeps what it found: the last occurrence it found is not sent but becomes the new
    ``next_schedule_time``, from which the next poll goes on; ``TooMuchWork`` if it found none
    past ``next_schedule_time``.

    With a ``calendar`` (the business days of the calendars the schedule names, as they are
    now), the walk starts from ``next_schedule_time`` checked again: it was computed with the
    calendars as they were. The first occurrence at or after it, if it is due; else the first
    from now on that was not sent yet (what was sent ahead fires as sent).
    """
    with cpu_budget(budget_seconds):
        return _plan(schedule, now, horizon, max_to_send, misfire_threshold, calendar)


def _plan(
    schedule: Schedule,
    now: datetime,
    horizon: datetime,
    max_to_send: int,
    misfire_threshold: timedelta,
    calendar: BusinessCalendar | None,
) -> DispatchPlan:
    definition = schedule.live_definition
    recurrence = schedule_recurrence(schedule, calendar)
    limit = definition.timing.max_occurrences
    policy = definition.misfire.policy
    missed_before = now - misfire_threshold

    def occurrence(moment: datetime) -> Occurrence:
        # The id keeps the nominal time; the message carries the time it fires, jitter included,
        # which is what the executor waits for.
        nominal_id = occurrence_id(schedule.schedule_id, moment)
        return Occurrence(
            tenant=schedule.tenant,
            schedule_id=schedule.schedule_id,
            revision=schedule.revision,
            scheduled_time=fire_time(nominal_id, moment, definition.jitter_seconds),
            priority=definition.priority,
            occurrence_id=nominal_id,
            trace=definition.trace,
        )

    sent_before = tuple(moment for moment in schedule.sent_ahead if moment >= now)
    to_send: list[datetime] = []
    missed: list[datetime] = []
    count = schedule.occurrence_count
    moment = schedule.next_schedule_time
    if calendar is not None and moment is not None:
        since = moment if moment <= now else max([now, *(item + _MS for item in sent_before)])
        moment = recurrence.first_at_or_after(since)
    walked = 0
    cut_short = False
    while (
        moment is not None
        and moment <= horizon
        and len(to_send) < max_to_send
        and len(sent_before) + len(to_send) < MAX_SENT_AHEAD
        and (limit is None or count + len(to_send) < limit)
        and walked < MAX_MISSED_WALK
    ):
        walked += 1
        if moment < missed_before and moment >= schedule.accepted_at:
            missed.append(moment)
        else:
            if missed:
                break
            to_send.append(moment)
        try:
            moment = recurrence.next_after(moment)
        except TooMuchWork:
            if walked == 1:
                raise
            # Out of budget: the last one found is not sent; the next poll goes on from it.
            # (A walk adds to ``missed`` until the first it sends, then only to ``to_send``.)
            moment = (to_send or missed).pop()
            cut_short = True
            break

    skipped: list[SkippedOccurrence] = []
    # The walk stopped while still in the missed stretch: it goes on at the next poll.
    stretch_goes_on = (walked >= MAX_MISSED_WALK or cut_short) and not to_send
    if missed:
        missed_ones = [occurrence(item) for item in missed]
        if policy is MisfirePolicy.FIRE_ALL:
            allowed = max_to_send if limit is None else min(max_to_send, limit - count)
            to_send = missed[:allowed]
            moment = missed[len(to_send)] if len(to_send) < len(missed) else moment
        elif policy is MisfirePolicy.FIRE_ONCE and stretch_goes_on:
            reason = "missed; fire_once runs the last occurrence of the stretch"
            skipped = [SkippedOccurrence(item, reason) for item in missed_ones]
        elif policy is MisfirePolicy.FIRE_ONCE:
            to_send = [missed[-1]]
            reason = f"missed; fire_once ran {missed_ones[-1].occurrence_id} instead"
            skipped = [SkippedOccurrence(item, reason) for item in missed_ones[:-1]]
        else:
            skipped = [
                SkippedOccurrence(item, "missed; misfire policy is skip") for item in missed_ones
            ]
    count += len(to_send)
    if limit is not None and count >= limit:
        moment = None
    return DispatchPlan(
        to_send=[occurrence(item) for item in to_send],
        skipped=skipped,
        next_schedule_time=moment,
        occurrence_count=count,
        missed_count=len(missed),
        sent_ahead=sent_before + tuple(item for item in to_send if item >= now),
    )


def next_fire_time(schedule: Schedule, now: datetime) -> datetime | None:
    """The next time the schedule fires as of ``now``, which is not its dispatch cursor, read
    from what the store keeps (no rule is computed: a read costs the same whatever the rule).

    ``next_schedule_time`` is how far the poller has sent occurrences: the next fire is the
    first of those it sent that is still to come (``sent_ahead``, all of them, earliest first),
    else the cursor itself (also when it is overdue: it fires as soon as it is sent; ``None``
    when the schedule has sent its last). A paused schedule fires nothing.
    """
    if schedule.status not in (ScheduleStatus.ACTIVE, ScheduleStatus.COMPLETED):
        return None
    for moment in schedule.sent_ahead:
        if moment >= now:
            return moment
    return schedule.next_schedule_time
