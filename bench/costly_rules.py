"""What costly rules cost the API (issue 22, items 3 and 4): the list read of schedules whose
next fire time was computed on every read, and the worst rules an attacker can send.

Each case runs in a process of its own (the API in-process over SQLite, a fixed clock), which is
killed after ``--timeout`` seconds: before the budget covered everything, some never ended. The
CPU figure is the request's thread CPU time, which other work on the machine does not inflate.

    .venv/bin/python -m bench.costly_rules [--timeout 60] [--reads 5] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import ROOT, WEBHOOK_SECRET, report, table
from shared.ports import ClaimRequest

API = "/scheduler-service/v1"
PAYLOAD = {"method": "GET", "url": "https://hooks.example.com/tick"}
NOW = datetime(2026, 6, 1, tzinfo=UTC)
LIST_SCHEDULES = 45


def _never_firing_easter() -> str:
    return "\n".join(f"RRULE:FREQ=DAILY;BYEASTER={offset};BYMONTH=1" for offset in range(4))


FAILS_LATER = "FREQ=DAILY;BYEASTER=" + ",".join(map(str, [*range(50), 265]))
EXCLUDED_SECONDS = int(timedelta(days=10).total_seconds())
# What each case sends: (method, path, body), after the set-up of ``_prepare``.
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "list of 45 costly schedules": ("GET", f"{API}/schedules?limit=200", {}),
    "4 never-firing BYEASTER lines": (
        "PUT",
        f"{API}/schedule/easter",
        {"schedule": {"rrule": _never_firing_easter()}, "payload": PAYLOAD},
    ),
    "FREQ=SECONDLY;BYSETPOS=2": (
        "PUT",
        f"{API}/schedule/setpos",
        {"schedule": {"rrule": "FREQ=SECONDLY;BYSETPOS=2"}, "payload": PAYLOAD},
    ),
    "FREQ=DAILY;BYEASTER=365": (
        "PUT",
        f"{API}/schedule/easter",
        {"schedule": {"rrule": "FREQ=DAILY;BYEASTER=365"}, "payload": PAYLOAD},
    ),
    "BYEASTER=0..49,265 previewed after 2028-12-01": (
        "POST",
        f"{API}/schedule/preview",
        {"schedule": {"rrule": FAILS_LATER}, "after": "2028-12-01T00:00:00Z", "count": 50},
    ),
    "backfill of a day of excluded seconds": (
        "POST",
        f"{API}/schedule/excluded/backfill",
        {"from": (NOW - timedelta(days=1)).isoformat(), "to": NOW.isoformat()},
    ),
}


def _prepare(case: str, app: Any, store: Any, clock: Any, processor: Any) -> None:
    """The stored state a case reads: costly schedules for the list, one for the backfill."""
    from shared.model import Payload, ScheduleDefinition, Timing

    client = app.test_client()
    if case.startswith("list"):
        # Each used up a max_occurrences of 10,000 minutes a moment ago; a read that computes
        # walks them all to tell whether a time still to come was among them.
        rule = "RRULE:FREQ=MINUTELY\nEXRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"
        timing = Timing("UTC", rrule=rule, max_occurrences=10_000)
        definition = ScheduleDefinition(timing, Payload("GET", PAYLOAD["url"]))
        accepted = NOW - timedelta(minutes=10_000)
        for number in range(LIST_SCHEDULES):
            store.apply_definition(("default", f"costly-{number:02}", 1, definition, NOW, accepted))
            [claimed] = store.claim_due_schedules(
                ClaimRequest(NOW, NOW, 1, "bench", NOW + timedelta(minutes=1))
            )
            store.advance_schedule(claimed, "bench", None, 10_000, NOW)
    elif case.startswith("backfill"):
        start = NOW - timedelta(days=10)
        rule = f"RRULE:FREQ=SECONDLY\nEXRULE:FREQ=SECONDLY;COUNT={EXCLUDED_SECONDS}"
        schedule = {"rrule": rule, "timezone": "America/New_York", "start": start.isoformat()}
        answer = client.put(
            f"{API}/schedule/excluded", json={"schedule": schedule, "payload": PAYLOAD}
        )
        assert answer.status_code == 202, answer.get_json()
        while processor.process_batch():
            pass
        clock.at = NOW + timedelta(seconds=1)


def run_case(case: str, reads: int) -> dict[str, Any]:
    """One case in this process: its answer's status and the request's thread CPU time (the
    median of ``reads`` reads for the list)."""
    from scheduler_cli.components import build_processor
    from scheduler_service.app import create_app
    from shared.backends import open_backends
    from shared.ports import Clock
    from shared.settings import Settings

    class FixedClock(Clock):
        def __init__(self) -> None:
            self.at = NOW

        def now(self) -> datetime:
            return self.at

    with tempfile.TemporaryDirectory(prefix="scheduler-bench-") as directory:
        url = f"sqlite:///{Path(directory).resolve() / 'scheduler.db'}"
        settings = Settings.from_env(
            {
                "SCHEDULER_STORE_URL": url,
                "SCHEDULER_QUEUE_URL": url,
                "SCHEDULER_API_AUTH": "none",
                "SCHEDULER_WEBHOOK_SECRET": WEBHOOK_SECRET,
                "SCHEDULER_LOG_FORMAT": "text",
            }
        )
        backends = open_backends(settings)
        clock = FixedClock()
        app = create_app(settings, backends, clock)
        try:
            _prepare(case, app, backends.store, clock, build_processor(settings, backends))
            method, path, body = CASES[case]
            client = app.test_client()
            send: Callable[[], Any] = (
                (lambda: client.get(path))
                if method == "GET"
                else (lambda: client.open(path, method=method, json=body))
            )
            costs = []
            status = 0
            for _ in range(reads if method == "GET" else 1):
                started = time.thread_time()
                status = send().status_code
                costs.append(time.thread_time() - started)
            return {"status": status, "cpu_s": statistics.median(costs)}
        finally:
            backends.close()


def measure(case: str, reads: int, timeout: float) -> dict[str, Any]:
    """``run_case`` in a process of its own, killed after ``timeout`` seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.costly_rules", "--case", case, "--reads", str(reads)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return {"case": case, "status": None, "cpu_s": None, "wall_s": None, "killed": True}
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"{case}: {exc.stderr}") from exc
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {"case": case, **figures, "wall_s": time.perf_counter() - started, "killed": False}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--reads", type=int, default=5, help="list reads (the median is shown)")
    parser.add_argument("--case", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    arguments = parser.parse_args(argv)
    if arguments.case:
        figures = run_case(arguments.case, arguments.reads)
        print(json.dumps(figures))
        return figures
    results = [measure(case, arguments.reads, arguments.timeout) for case in CASES]
    rows = [
        (
            item["case"],
            f"killed after {arguments.timeout:g} s" if item["killed"] else item["status"],
            "-" if item["killed"] else f"{item['cpu_s']:.3f}",
        )
        for item in results
    ]
    print(table(["case", "answer", "request CPU (s)"], rows))
    figures = {"timeout_s": arguments.timeout, "reads": arguments.reads, "cases": results}
    report("costly_rules", figures, arguments.json)
    return figures


if __name__ == "__main__":
    main()
