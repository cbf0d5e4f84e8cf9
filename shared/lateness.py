"""Lateness and absence (a schedule's ``alert``): which of its occurrences have not started
``late_after_seconds`` after their time, found from what the store keeps, by whoever checks
(the pollers: ``polling_worker.lateness``), not by the executor that would have fired them.

The store keeps one cursor per schedule with an alert, ``late_check_at``: the time of the
earliest occurrence not yet checked, plus ``late_after_seconds``. The poller's advance sets it
from the first occurrence it sends where there is none (``armed_check_at``); a check walks
the occurrences from it that are due by now (``late_walk``), reads which have an execution
record (begun, or skipped on purpose), and moves the cursor past them with a compare-and-set
(``shared.claim_rules.MOVE_LATE_CHECK``): only the checker whose move applies tells of those
without one, so two pollers tell each once. An occurrence that starts after it was told of
is told of no more; its run shows its lateness (``Execution.lateness_ms``).

Pure domain logic: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.calendars import BusinessCalendar
from shared.executions import nominal_time
from shared.formats import occurrence_id
from shared.model import Occurrence, Schedule, ScheduleStatus
from shared.notations import schedule_recurrence
from shared.recurrence import cpu_budget

LATE = "occurrence.late"
MISSED = "occurrence.missed"
# The most occurrences of one schedule one check walks; more wait for the next check.
MAX_CHECKED = 100
# The CPU one schedule's walk may take (its rule computed from the cursor on).
CHECK_BUDGET_SECONDS = 0.05


def armed_check_at(schedule: Schedule, sent: list[Occurrence]) -> datetime | None:
    """``late_check_at`` after the poller sends ``sent`` of the claimed ``schedule``: kept
    where it is set, else the first sent's time plus its ``late_after_seconds``; ``None``
    without an alert."""
    alert = schedule.definition.alert if schedule.definition else None
    if alert is None:
        return None
    if schedule.late_check_at is not None:
        return schedule.late_check_at
    for occurrence in sent:
        nominal = nominal_time(occurrence.occurrence_id)
        if nominal is not None:
            return nominal + timedelta(seconds=alert.late_after_seconds)
    return None


@dataclass(frozen=True)
class LateWalk:
    """The occurrences a check looks at (id and nominal time, in order), and the cursor after
    them (``None``: the schedule has no more to check)."""

    due: list[tuple[str, datetime]]
    next_check_at: datetime | None


def late_walk(
    schedule: Schedule,
    now: datetime,
    calendar: BusinessCalendar | None,
    limit: int = MAX_CHECKED,
) -> LateWalk:
    """The occurrences of ``schedule`` from its cursor whose time + ``late_after_seconds`` is
    at or before ``now`` (at most ``limit``), and where the cursor goes after them: the times
    it fires, on the business days of ``calendar`` (the calendars it names, as they are now):
    a day off is never late.

    A schedule that has sent its last (``completed``) is walked only up to the last time it
    sent: what its rule would give after (beyond ``max_occurrences``) is never sent."""
    definition = schedule.live_definition
    alert = definition.alert
    cursor = schedule.late_check_at
    if alert is None or cursor is None:
        return LateWalk([], None)
    after = timedelta(seconds=alert.late_after_seconds)
    last_sent = _last_sent(schedule)
    due: list[tuple[str, datetime]] = []
    moment: datetime | None = cursor - after
    with cpu_budget(CHECK_BUDGET_SECONDS):
        recurrence = schedule_recurrence(schedule, calendar)
        while moment is not None and moment + after <= now and len(due) < limit:
            if last_sent is not None and moment > last_sent:
                moment = None
                break
            due.append((occurrence_id(schedule.schedule_id, moment), moment))
            moment = recurrence.next_after(moment)
    if moment is not None and last_sent is not None and moment > last_sent:
        moment = None
    return LateWalk(due, None if moment is None else moment + after)


def _last_sent(schedule: Schedule) -> datetime | None:
    """The last time a completed schedule sent (None: it goes on)."""
    if schedule.status is not ScheduleStatus.COMPLETED:
        return None
    return schedule.sent_ahead[-1] if schedule.sent_ahead else schedule.updated_at
