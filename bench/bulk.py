"""Bulk operations over ``--schedules`` schedules (100,000 by default): what each costs through
the API (``POST /schedules/bulk``, in process through the Flask app, following its parts).

Seeds the store as the processor stores schedules (``apply_definitions``, 5,000 a chunk): the
schedules a tag selects, and ``--others`` that it does not. Then, in order: a dry run, a pause
of all of them, a resume, a patch (accepted onto queue 1; then, with ``--apply``, the
processor storing the patched definitions), a delete. For each: the wall time, the parts
(requests) it took, the API's CPU, and on MongoDB (``--store-url mongodb://…``) the commands
it sent to the store, by name and per schedule. Beside them, ``--single`` schedules paused
through ``POST /schedule/{id}/pause`` one by one: what a client without the bulk endpoint pays.

    python -m bench.bulk
    python -m bench.bulk --store-url mongodb://127.0.0.1:PORT --json bench/results/bulk-nx.json
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import monitoring

from bench.common import backend, common_arguments, report, table
from bench.console import definition
from bench.store_rounds import CommandCounter
from scheduler_cli.components import build_processor
from scheduler_service.app import create_app
from shared.backends import open_backends
from shared.settings import Settings

TENANT = "default"
BULK = "/scheduler-service/v1/schedules/bulk"
CHUNK = 5_000


def seed(store: Any, count: int, others: int, now: datetime) -> None:
    """``count`` schedules tagged ``bulk`` (``bulk-<n>``) and ``others`` tagged ``other``."""
    rows = [(f"bulk-{n:07d}", ("bulk",)) for n in range(count)]
    rows += [(f"other-{n:07d}", ("other",)) for n in range(others)]
    for start in range(0, len(rows), CHUNK):
        store.apply_definitions(
            [
                (
                    TENANT,
                    schedule_id,
                    1,
                    dataclasses.replace(definition(n), tags=tags),
                    now + timedelta(minutes=5 + n % 90),
                    now,
                )
                for n, (schedule_id, tags) in enumerate(rows[start : start + CHUNK], start)
            ]
        )


def follow(client: Any, body: dict[str, Any]) -> tuple[dict[str, int], int]:
    """A bulk operation's parts to the end, as the client does: its summed counts, its parts."""
    totals: Counter[str] = Counter()
    parts = 0
    request = dict(body)
    while True:
        answer = client.post(BULK, json=request)
        assert answer.status_code == 200, answer.get_json()
        found = answer.get_json()
        parts += 1
        for name in ("matched", "changed", "unchanged", "failed"):
            totals[name] += found[name]
        if found.get("done", True) or not found.get("continue"):
            return dict(totals), parts
        request["continue"] = found["continue"]


def measured(counter: CommandCounter, work: Any) -> dict[str, Any]:
    """``work()``'s wall time, CPU and store commands (by name), and what it returned."""
    counter.take()
    began, cpu = time.perf_counter(), time.process_time()
    returned = work()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    commands = counter.take()
    return {"seconds": seconds, "cpu_seconds": cpu, "commands": commands, "returned": returned}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_arguments(parser)
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--others", type=int, default=1_000, help="schedules not selected")
    parser.add_argument("--single", type=int, default=500, help="paused one request each")
    parser.add_argument(
        "--apply",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the processor storing the patched definitions",
    )
    arguments = parser.parse_args(argv)
    counter = CommandCounter()
    monitoring.register(counter)
    count = arguments.schedules
    selector = {"tag": "bulk"}
    rows: list[dict[str, Any]] = []
    with backend(arguments.store_url, arguments.queue_url) as chosen:
        settings = Settings.from_env(chosen.settings_env(api_auth="none"))
        backends = open_backends(settings)
        try:
            now = datetime.now(UTC).replace(microsecond=0)
            seeding = measured(counter, lambda: seed(backends.store, count, arguments.others, now))
            client = create_app(settings, backends).test_client()
            processor = build_processor(settings, backends)
            steps: list[tuple[str, Any]] = [
                (
                    "dry run",
                    lambda: client.post(
                        BULK,
                        json={
                            "action": "pause",
                            "selector": selector,
                            "dry_run": True,
                        },
                    ).get_json()["matched"],
                ),
                ("pause", lambda: follow(client, {"action": "pause", "selector": selector})),
                ("resume", lambda: follow(client, {"action": "resume", "selector": selector})),
                (
                    "patch",
                    lambda: follow(
                        client,
                        {
                            "action": "patch",
                            "selector": selector,
                            "patch": {"priority": 2},
                        },
                    ),
                ),
            ]
            if arguments.apply:
                steps.append(("patch stored by the processor", lambda: drain(processor)))
            steps.append(
                ("delete", lambda: follow(client, {"action": "delete", "selector": selector}))
            )
            for name, work in steps:
                figures = measured(counter, work)
                rows.append({"step": name, **figures})
            single_ids = [f"other-{n:07d}" for n in range(min(arguments.single, arguments.others))]

            def one_by_one() -> int:
                for schedule_id in single_ids:
                    answer = client.post(f"/scheduler-service/v1/schedule/{schedule_id}/pause")
                    assert answer.status_code == 202, answer.get_json()
                return len(single_ids)

            single = measured(counter, one_by_one)
        finally:
            backends.close()
    mongo = chosen.store_url.startswith("mongodb")

    def per(total: float, number: int) -> float:
        return total / number if number else float("nan")

    printed = []
    result_rows = []
    for row in rows:
        commands = sum(row["commands"].values())
        returned = row["returned"]
        parts = returned[1] if isinstance(returned, tuple) else 1
        outcome = returned[0] if isinstance(returned, tuple) else returned
        result_rows.append(
            {
                "step": row["step"],
                "seconds": row["seconds"],
                "cpu_seconds": row["cpu_seconds"],
                "parts": parts,
                "outcome": outcome,
                "store_commands": commands if mongo else None,
                "store_commands_per_schedule": per(commands, count) if mongo else None,
                "by_command": dict(row["commands"]) if mongo else None,
                "us_per_schedule": per(row["seconds"] * 1e6, count),
            }
        )
        printed.append(
            [
                row["step"],
                row["seconds"],
                per(row["seconds"] * 1e6, count),
                row["cpu_seconds"],
                parts,
                outcome,
                per(commands, count) if mongo else "-",
                dict(row["commands"]) if mongo else "-",
            ]
        )
    single_commands = sum(single["commands"].values())
    printed.append(
        [
            f"pause one by one ({single['returned']})",
            single["seconds"],
            per(single["seconds"] * 1e6, single["returned"]),
            single["cpu_seconds"],
            single["returned"],
            "-",
            per(single_commands, single["returned"]) if mongo else "-",
            dict(single["commands"]) if mongo else "-",
        ]
    )
    print(
        f"{count:,} schedules selected of {count + arguments.others:,} ({chosen.label});"
        f" seeded in {seeding['seconds']:.1f} s"
    )
    print(
        table(
            [
                "step",
                "seconds",
                "µs per schedule",
                "API CPU s",
                "parts",
                "outcome",
                "store commands per schedule",
                "by command",
            ],
            printed,
        )
    )
    result = {
        "backend": chosen.label,
        "schedules": count,
        "others": arguments.others,
        "seed_seconds": seeding["seconds"],
        "steps": result_rows,
        "single_pause": {
            "schedules": single["returned"],
            "seconds": single["seconds"],
            "us_per_schedule": per(single["seconds"] * 1e6, single["returned"]),
            "store_commands_per_schedule": per(single_commands, single["returned"])
            if mongo
            else None,
        },
    }
    report("bulk", result, arguments.json)
    return result


def drain(processor: Any) -> int:
    """Let the processor store everything queue 1 holds; how many batches it took."""
    batches = 0
    while processor.process_batch():
        batches += 1
    return batches


if __name__ == "__main__":
    main()
