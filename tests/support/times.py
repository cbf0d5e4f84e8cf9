"""A timing's times as the engine tests ask for them: the first ``count`` after acceptance
(``upcoming``), the last ``count`` before a moment (``previous``), each built with
``shared.notations.build_recurrence`` within the CPU budget, as the service builds them."""

from __future__ import annotations

from datetime import datetime

from shared.calendars import BusinessCalendar
from shared.notations import build_recurrence
from shared.recurrence import SEARCH_HORIZON, cpu_budget
from shared.timing import Timing


def upcoming(
    timing: Timing,
    accepted_at: datetime,
    count: int,
    schedule_id: str | None = None,
    calendar: BusinessCalendar | None = None,
) -> list[datetime]:
    """The first ``count`` occurrences of a schedule accepted at ``accepted_at``."""
    with cpu_budget():
        recurrence = build_recurrence(timing, accepted_at, schedule_id, calendar=calendar)
        return list(recurrence.upcoming(accepted_at, count))


def previous(timing: Timing, moment: datetime, count: int) -> list[datetime]:
    """The last ``count`` occurrences before ``moment``, oldest first, of a schedule taken as
    accepted ``SEARCH_HORIZON`` earlier (forms without a start count from acceptance)."""
    with cpu_budget():
        return build_recurrence(timing, moment - SEARCH_HORIZON).before(moment, count)
