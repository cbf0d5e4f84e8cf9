"""The overview: schedules by status, fires, failures and lateness over the last hour and
day, what fires next, what is failing, how many dead letters wait."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from flask import g

from scheduler_service.console.pages import blp, page, service, view_of
from scheduler_service.roles import requires
from shared.model import Execution, ExecutionStatus, Schedule, ScheduleStatus
from shared.ports import DeadLetterRequest, HistoryRequest, Role, ScheduleFilter

# The overview reads at most this many schedules, and the runs of at most RECENT_SCHEDULES of
# them (those run most recently), each back to a day ago: it stays cheap for a large tenant and
# says when it stopped short.
OVERVIEW_SCHEDULES = 2_000
RECENT_SCHEDULES = 50
RECENT_RUNS_PER_SCHEDULE = 500
# The overview counts the dead letters of one page, and says when there are more.
OVERVIEW_DEAD_LETTERS = 25


@dataclass
class Overview:
    by_status: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    failures: int = 0
    failing: list[Schedule] = field(default_factory=list)
    next_up: list[Schedule] = field(default_factory=list)
    read_all: bool = True
    fires_hour: int = 0
    failures_hour: int = 0
    fires_day: int = 0
    failures_day: int = 0
    lateness_ms: list[float] = field(default_factory=list)
    recent_complete: bool = True
    dead_letters: int = 0
    more_dead_letters: bool = False

    def lateness(self, quantile: int) -> float | None:
        if not self.lateness_ms:
            return None
        if len(self.lateness_ms) == 1:
            return self.lateness_ms[0]
        return statistics.quantiles(self.lateness_ms, n=100, method="inclusive")[quantile - 1]


def tenant_schedules(tenant: str, query: ScheduleFilter, limit: int) -> Iterator[Schedule]:
    cursor: str | None = None
    page_size = service().settings.max_page_size
    read = 0
    while read < limit:
        batch = service().reads.list_schedules(tenant, query, min(page_size, limit - read), cursor)
        yield from batch.items
        read += len(batch.items)
        cursor = batch.next_cursor
        if cursor is None:
            return


def runs_since(tenant: str, schedule_id: str, since: datetime) -> tuple[list[Execution], bool]:
    """The schedule's runs scheduled after ``since``, and whether that is all of them."""
    found: list[Execution] = []
    cursor: str | None = None
    while len(found) < RECENT_RUNS_PER_SCHEDULE:
        _, batch = service().reads.list_executions(HistoryRequest(tenant, schedule_id, 200, cursor))
        for execution in batch.items:
            if execution.scheduled_time < since:
                return found, True
            found.append(execution)
        cursor = batch.next_cursor
        if cursor is None:
            return found, True
    return found, False


def overview_of(tenant: str, now: datetime) -> Overview:
    overview = Overview(by_status={status: 0 for status in ("active", "paused", "completed")})
    schedules = list(tenant_schedules(tenant, ScheduleFilter(), OVERVIEW_SCHEDULES + 1))
    overview.read_all = len(schedules) <= OVERVIEW_SCHEDULES
    schedules = schedules[:OVERVIEW_SCHEDULES]
    for schedule in schedules:
        overview.by_status[schedule.status.value] += 1
        overview.runs += schedule.run_count
        overview.failures += schedule.failure_count
    overview.failing = [s for s in schedules if s.consecutive_failures > 0][:10]
    active = [s for s in schedules if s.status is ScheduleStatus.ACTIVE and s.next_schedule_time]
    overview.next_up = sorted(active, key=lambda s: s.next_schedule_time or now)[:10]
    day_ago, hour_ago = now - timedelta(days=1), now - timedelta(hours=1)
    recent = sorted(
        (s for s in schedules if s.last_run_at and s.last_run_at >= day_ago),
        key=lambda s: s.last_run_at or now,
        reverse=True,
    )
    overview.recent_complete = len(recent) <= RECENT_SCHEDULES
    waiting = service().reads.list_dead_letters(DeadLetterRequest(tenant, OVERVIEW_DEAD_LETTERS))
    overview.dead_letters = len(waiting.items)
    overview.more_dead_letters = waiting.next_cursor is not None
    for schedule in recent[:RECENT_SCHEDULES]:
        runs, complete = runs_since(tenant, schedule.schedule_id, day_ago)
        overview.recent_complete &= complete
        for run in runs:
            if run.status not in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED):
                continue
            failed = run.status is ExecutionStatus.FAILED
            overview.fires_day += 1
            overview.failures_day += failed
            if run.scheduled_time >= hour_ago:
                overview.fires_hour += 1
                overview.failures_hour += failed
            if run.lateness_ms is not None:
                overview.lateness_ms.append(run.lateness_ms)
    return overview


@blp.route("/")
@requires(Role.READ)
def overview() -> str:
    now = service().clock.now()
    return page("console/overview.html", overview=overview_of(g.tenant, now), view=view_of)
