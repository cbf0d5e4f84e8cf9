"""What the console's pages cost for a tenant of ``--schedules`` schedules (200 by default).

Seeds the store as the processor stores schedules (``apply_definitions``: cron, RRULE and
interval ones, with names, tags and URLs on four hosts), ``--runs`` runs of one schedule and
``--dead-letters`` dead letters spread over the schedules; then requests each page through the
Flask app (in-process, no HTTP, no key) ``--repeat`` times. Per page: the CPU time of the
request (median, ms), the size of the HTML, and on MongoDB (``--store-url mongodb://…``) the
commands it sent to the store, which a larger tenant must not multiply.

    python -m bench.console
    python -m bench.console --store-url mongodb://127.0.0.1:27017 --json bench/results/c.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import monitoring

from bench.common import backend, common_arguments, report, table
from bench.store_rounds import CommandCounter
from scheduler_service.app import create_app
from shared.backends import open_backends
from shared.model import (
    Answer,
    AttemptOutcome,
    Every,
    ExecutionStatus,
    Occurrence,
    Payload,
    ScheduleDefinition,
    Timing,
    Unit,
)
from shared.settings import Settings

TENANT = "default"
TEAMS = ("billing", "reports", "ops", "search")


def definition(number: int) -> ScheduleDefinition:
    team = TEAMS[number % len(TEAMS)]
    timing = (
        Timing(timezone="Europe/Paris", cron=f"{number % 60} */2 * * *"),
        Timing(timezone="Asia/Kolkata", rrule="FREQ=WEEKLY;BYDAY=MO,WE,FR;BYHOUR=9;BYMINUTE=30"),
        Timing(timezone="UTC", interval=Every(15 + number % 45, Unit.MINUTE)),
    )[number % 3]
    return ScheduleDefinition(
        timing=timing,
        payload=Payload(
            method="POST",
            url=f"https://{team}.example.com/hooks/{number}?token=s3cr3t{number}",
            headers={"Authorization": f"Bearer t{number}", "X-Team": team},
            body={"job": number},
        ),
        name=f"{team.title()} job {number:03}",
        tags=(team, "bench"),
    )


def seed(store: Any, count: int, runs: int, dead_letters: int, now: datetime) -> None:
    store.apply_definitions(
        [
            (TENANT, f"job-{n:03}", 1, definition(n), now + timedelta(minutes=n % 90), now)
            for n in range(count)
        ]
    )
    outcomes = [(f"job-{n % count:03}", ExecutionStatus.FAILED) for n in range(dead_letters)]
    outcomes += [("job-000", ExecutionStatus.SUCCEEDED)] * runs
    for index, (schedule_id, status) in enumerate(outcomes):
        moment = now - timedelta(minutes=index + 1)
        occurrence = Occurrence(TENANT, schedule_id, 1, moment)
        execution = store.begin_attempt(occurrence, "bench", moment, moment + timedelta(minutes=1))
        code = 200 if status is ExecutionStatus.SUCCEEDED else 503
        outcome = AttemptOutcome(status, moment, answer=Answer(code), duration_ms=20.0)
        store.finish_attempt(execution, "bench", outcome)


PAGES = {
    "schedules, 50 by name": "/console/schedules",
    "schedules, all by name": "/console/schedules?per_page=200",
    "schedules, all by next fire": "/console/schedules?per_page=200&sort=next",
    "search by host": "/console/schedules?q=reports.example.com&per_page=200",
    "overview": "/console/",
    "one schedule": "/console/schedules/job-000",
    "its history": "/console/schedules/job-000/history",
    "dead letters": "/console/dead-letters",
    "new schedule form": "/console/schedules/new",
}


def measure(client: Any, path: str, repeat: int, counter: CommandCounter) -> dict[str, float]:
    """The page's CPU time (median, ms), size (KB) and store commands (most of any request)."""
    assert client.get(path).status_code == 200, path
    cpu: list[float] = []
    commands: list[int] = []
    size = 0
    for _ in range(repeat):
        before = sum(counter.counts.values())
        started = time.thread_time()
        answer = client.get(path)
        cpu.append((time.thread_time() - started) * 1000)
        commands.append(sum(counter.counts.values()) - before)
        size = len(answer.data)
    return {"cpu_ms": statistics.median(cpu), "kb": size / 1024, "store_commands": max(commands)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_arguments(parser)
    parser.add_argument("--schedules", type=int, default=200)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--dead-letters", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=7)
    arguments = parser.parse_args(argv)
    counter = CommandCounter()
    monitoring.register(counter)
    figures: dict[str, dict[str, float]] = {}
    with backend(arguments.store_url, arguments.queue_url) as chosen:
        settings = Settings.from_env(chosen.settings_env(api_auth="none"))
        backends = open_backends(settings)
        try:
            now = datetime.now(UTC).replace(microsecond=0)
            seed(backends.store, arguments.schedules, arguments.runs, arguments.dead_letters, now)
            client = create_app(settings, backends).test_client()
            for name, path in PAGES.items():
                figures[name] = measure(client, path, arguments.repeat, counter)
        finally:
            backends.close()
    mongo = chosen.store_url.startswith("mongodb")
    rows = [
        [name, PAGES[name], page["cpu_ms"], page["kb"], page["store_commands"] if mongo else "-"]
        for name, page in figures.items()
    ]
    print(table(["page", "path", "CPU ms (median)", "KB", "store commands"], rows))
    result = {
        "backend": chosen.label,
        "schedules": arguments.schedules,
        "runs": arguments.runs,
        "dead_letters": arguments.dead_letters,
        "repeat": arguments.repeat,
        "pages": figures,
    }
    report("console", result, arguments.json)
    return result


if __name__ == "__main__":
    main()
