"""What each kind of API request costs the API in CPU, through the Flask app (no socket).

The API over SQLite in a temporary directory, its processor applying queue 1 between rounds.
For each kind of request (create, get, list a page, history, PATCH, preview, an invalid
create), ``--requests`` of them, timed by the thread's CPU clock: the routing, the parsing,
the application service, the store and queue calls and the presentation of the answer, without
the HTTP server's own work. Best of ``--rounds`` per kind: what the code costs whatever else
the machine runs.

    .venv/bin/python -m bench.api_requests
    .venv/bin/python -m bench.api_requests --requests 500 --rounds 7
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from bench.common import report, table
from scheduler_cli.components import build_processor
from scheduler_service.app import create_app
from shared.backends import open_backends
from shared.settings import Settings

API = "/scheduler-service/v1"
# Schedules in the tenant while the reads are timed.
STORED = 200


def body(index: int, at: datetime) -> dict[str, Any]:
    return {
        "name": f"bench-{index}",
        "schedule": {"at": at.isoformat().replace("+00:00", "Z"), "timezone": "UTC"},
        "payload": {
            "method": "POST",
            "url": "https://example.com/hook",
            "headers": {"X-Bench": "1", "Authorization": "Bearer secret-value"},
            "body": {"task": "bench", "attempt_budget": 3},
        },
        "tags": ["bench"],
    }


def cron_body(index: int) -> dict[str, Any]:
    return {
        "id": f"cron-{index}",
        "schedule": {"cron": "30 9 * * MON-FRI", "timezone": "Asia/Kolkata"},
        "payload": {"method": "GET", "url": "https://example.com/report"},
    }


def cpu_per_request(send: Callable[[int], Any], count: int) -> float:
    """Microseconds of this thread's CPU per call of ``send``."""
    started = time.thread_time()
    for index in range(count):
        send(index)
    return (time.thread_time() - started) / count * 1e6


def expect(status: int) -> Callable[[Any], None]:
    def check(response: Any) -> None:
        if response.status_code != status:
            raise RuntimeError(f"expected {status}, got {response.status_code}: {response.data}")

    return check


def kinds(client: FlaskClient, at: datetime, ids: list[str]) -> dict[str, Callable[[int], Any]]:
    created, ok, bad = expect(202), expect(200), expect(400)
    invalid = {**body(0, at), "schedule": {"cron": "61 * * * *"}, "priority": 12}
    return {
        "create (one-time)": lambda i: created(
            client.post(f"{API}/schedule", json=body(i, at + timedelta(seconds=i)))
        ),
        "replace (cron)": lambda i: created(
            client.put(f"{API}/schedule/cron-{i % 50}", json=cron_body(i % 50))
        ),
        "get": lambda i: ok(client.get(f"{API}/schedule/{ids[i % len(ids)]}")),
        "list (50)": lambda i: ok(client.get(f"{API}/schedules?limit=50")),
        "history": lambda i: ok(client.get(f"{API}/schedule/{ids[i % len(ids)]}/executions")),
        "patch": lambda i: created(
            client.patch(f"{API}/schedule/{ids[i % len(ids)]}", json={"name": f"renamed-{i}"})
        ),
        "preview": lambda i: ok(
            client.post(
                f"{API}/schedule/preview",
                json={"schedule": {"rrule": "FREQ=WEEKLY;BYDAY=MO,WE"}, "count": 10},
            )
        ),
        "invalid create (400)": lambda i: bad(client.post(f"{API}/schedule", json=invalid)),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite:///{Path(directory) / 'scheduler.db'}"
        settings = Settings.from_env(
            {}, store_url=url, queue_url=url, api_auth="none", log_format="text"
        )
        backends = open_backends(settings)
        try:
            client = create_app(settings, backends).test_client()
            processor = build_processor(settings, backends)
            ids = [
                client.post(f"{API}/schedule", json=body(i, at)).get_json()["id"]
                for i in range(STORED)
            ]
            while processor.process_batch():
                pass
            for _ in range(args.rounds):
                for name, send in kinds(client, at, ids).items():
                    figures.setdefault(name, []).append(cpu_per_request(send, args.requests))
                    while processor.process_batch():
                        pass
        finally:
            backends.close()
    best = {name: min(values) for name, values in figures.items()}
    print(table(["request", "CPU µs per request (best round)"], list(best.items())))
    result = {"requests": args.requests, "rounds": args.rounds, "cpu_us_per_request": best}
    report("api_requests", json.loads(json.dumps(result)), args.json)
    return result


if __name__ == "__main__":
    main()
