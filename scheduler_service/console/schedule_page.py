"""One schedule: its definition in words, next times, recent runs and their lateness."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from flask import g, request

from scheduler_service.console.pages import (
    blp,
    page,
    pretty_json,
    service,
    view_of,
)
from scheduler_service.console.presenting import summary
from scheduler_service.presenting.views import execution_view, time_pair
from scheduler_service.roles import requires
from shared.calendars import BusinessCalendar
from shared.errors import NotFound
from shared.model import Schedule, ScheduleStatus
from shared.notations import upcoming_for_a_page
from shared.ports import HistoryRequest, Role

RUNS_SHOWN = 25
NEXT_TIMES = 10


def next_times(
    schedule: Schedule, now: datetime, calendar: BusinessCalendar | None
) -> list[dict[str, str | None]]:
    if schedule.status is ScheduleStatus.COMPLETED:
        return []
    times = upcoming_for_a_page(schedule, calendar, now, NEXT_TIMES)
    return [time_pair(moment, schedule.live_definition.timing.timezone) for moment in times]


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    height: float
    status: str
    title: str


def lateness_chart(runs: list[dict[str, Any]], width: float = 600, height: float = 80) -> list[Bar]:
    """One bar a run, oldest on the left: its height the lateness, its colour the outcome. A
    slot is at least 1/RUNS_SHOWN of the width, so a few runs make thin bars, not wide blocks."""
    shown = list(reversed(runs))
    tallest = max((run["lateness_ms"] or 0.0 for run in shown), default=0.0) or 1.0
    step = width / max(len(shown), RUNS_SHOWN)
    return [
        Bar(
            x=index * step,
            width=max(step - 2, 1.0),
            height=max(2.0, height * (run["lateness_ms"] or 0.0) / tallest),
            status=run["status"],
            title=f"{run['scheduled_time']} {run['status']}, "
            f"{run['lateness_ms'] if run['lateness_ms'] is not None else '-'} ms late",
        )
        for index, run in enumerate(shown)
    ]


def recent_runs(schedule_id: str) -> list[dict[str, Any]]:
    _, found = service().reads.list_executions(HistoryRequest(g.tenant, schedule_id, RUNS_SHOWN))
    secret_patterns = service().settings.secret_headers
    return [execution_view(run, secret_patterns) for run in found.items]


@blp.route("/schedules/<schedule_id>")
@requires(Role.READ)
def schedule(schedule_id: str) -> str | tuple[str, int]:
    try:
        found = service().reads.get(g.tenant, schedule_id)
    except NotFound:
        if request.args.get("accepted"):
            # Creation is asynchronous: the page asks again until the processor has stored it.
            return page("console/pending.html", schedule_id=schedule_id), 202
        raise
    runs = recent_runs(schedule_id)
    view = view_of(found)
    return page(
        "console/schedule.html",
        schedule=view,
        summary=summary(view),
        raw=pretty_json(view),
        times=next_times(found, service().clock.now(), service().reads.business_calendar(found)),
        runs=runs,
        chart=lateness_chart(runs),
    )


@blp.route("/schedules/<schedule_id>/runs")
@requires(Role.READ)
def runs(schedule_id: str) -> str:
    service().reads.get(g.tenant, schedule_id)
    found = recent_runs(schedule_id)
    return page(
        "console/runs.html",
        schedule={"id": schedule_id},
        runs=found,
        chart=lateness_chart(found),
    )
