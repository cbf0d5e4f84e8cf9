"""Creation through the API: creates per second and latency, until queue 1 is drained.

A real ``scheduler api`` (gunicorn, default ``SCHEDULER_API_WORKERS`` x ``SCHEDULER_API_THREADS``)
and a real ``scheduler processor`` run as processes. A closed-loop client (asyncio, raw
HTTP/1.1 with keep-alive, ``--connections`` at once, in this process) POSTs ``--count`` one-time
schedules after ``--warmup`` unmeasured ones. Reported: creates per second accepted by the API,
latency p50/p95/p99/max of each ``POST`` (request written -> response read), and when the last
one was stored by the processor (queue 1 drained), i.e. the end-to-end rate.

    python -m bench.creation --count 10000
    python -m bench.creation --store-url mongodb://127.0.0.1:27017 --store-delay-ms 1

``--store-delay-ms`` puts the delaying proxy (``bench/delay_proxy.py``) between the API and
processor and the MongoDB store, and counts the commands they send for the measured creates,
from the first ``POST`` to the last one stored (the warm-up and the benchmark's own reads apart).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import time
import urllib.request
from collections import Counter
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    Component,
    backend,
    common_arguments,
    free_port,
    profiled,
    report,
    summary,
    table,
)
from bench.delay_proxy import command_figures, proxied
from shared.backends import Backends, open_backends

API = "/scheduler-service/v1"
# Requests carry an API key, as in production (SCHEDULER_API_AUTH=keys, the default).
API_KEY = "bench-key-0123456789abcdef"
TENANT = "bench"


def body(index: int, at: datetime) -> bytes:
    return json.dumps(
        {
            "name": f"bench-{index}",
            "schedule": {"at": at.isoformat().replace("+00:00", "Z"), "timezone": "UTC"},
            "payload": {
                "method": "POST",
                "url": "http://127.0.0.1:9/hook",
                "headers": {"X-Bench": "1"},
                "body": {"task": "bench", "attempt_budget": 3},
            },
        }
    ).encode()


async def _connection(
    port: int, bodies: list[bytes], latencies: list[float], statuses: dict[int, int]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while bodies:
            payload = bodies.pop()
            request = (
                f"POST {API}/schedule HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\n"
                f"X-API-Key: {API_KEY}\r\n"
                f"Content-Length: {len(payload)}\r\n\r\n"
            ).encode() + payload
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            latencies.append((time.perf_counter() - started) * 1000.0)
            status = int(head.split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


async def load(
    port: int, bodies: list[bytes], connections: int
) -> tuple[list[float], dict[int, int]]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    await asyncio.gather(
        *(_connection(port, bodies, latencies, statuses) for _ in range(connections))
    )
    return latencies, statuses


def wait_healthy(url: str, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    common_arguments(parser)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument(
        "--quota", type=int, default=100_000_000, help="SCHEDULER_TENANT_SCHEDULE_QUOTA (0: none)"
    )
    parser.add_argument(
        "--store-delay-ms",
        type=float,
        help="MongoDB store only: a proxy adds this to every command and counts the commands",
    )
    parser.add_argument("--profile-dir", type=Path)
    parser.add_argument("--log-dir", type=Path, default=ROOT / "bench" / "logs")
    args = parser.parse_args(argv)
    if args.store_delay_ms is not None and not (args.store_url or "").startswith("mongodb"):
        parser.error("--store-delay-ms: needs --store-url mongodb://…")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    if args.profile_dir:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    commands: Counter[str] | None = None
    with backend(args.store_url, args.queue_url) as where, ExitStack() as proxy:
        components = where
        if args.store_delay_ms is not None:
            commands = Counter()
            url = proxy.enter_context(proxied(where.store_url, args.store_delay_ms, commands))
            components = dataclasses.replace(where, store_url=url)
        port = free_port()
        # One tenant holds every schedule here. By default a quota it never reaches, so the
        # quota check (a count of the tenant's live schedules on every create) runs but never
        # refuses; ``--quota 0`` turns the check off.
        env = components.settings_env(
            port=port,
            host="127.0.0.1",
            tenant_schedule_quota=args.quota,
            api_keys=f"{TENANT}:{API_KEY}",
        )
        backends = open_backends(where.settings())
        api = Component("api", env, args.log_dir)
        processor = Component("processor", env, args.log_dir)
        try:
            wait_healthy(f"http://127.0.0.1:{port}/healthz")
            warm = [body(index, at) for index in range(args.warmup)]
            _, warm_statuses = asyncio.run(load(port, warm, args.connections))
            if set(warm_statuses) != {202}:
                raise RuntimeError(f"the API refused the warm-up creates: {warm_statuses}")
            _wait_stored(backends, args.warmup, time.time() + 120)
            bodies = [body(args.warmup + index, at) for index in range(args.count)]
            if commands is not None:
                commands.clear()
            profile = args.profile_dir
            with (
                profiled(api.pid, profile / "api.txt" if profile else None, subprocesses=True),
                profiled(processor.pid, profile / "processor.txt" if profile else None),
            ):
                started = time.perf_counter()
                latencies, statuses = asyncio.run(load(port, bodies, args.connections))
                accepted_in = time.perf_counter() - started
                stored = _wait_stored(backends, args.warmup + args.count, time.time() + 300)
                drained_in = time.perf_counter() - started
                counted = Counter(commands) if commands is not None else None
        finally:
            processor.stop()
            api.stop()
            backends.close()
    errors = sum(n for status, n in statuses.items() if status != 202)
    result = {
        "backend": where.label,
        "count": args.count,
        "connections": args.connections,
        "api_workers_x_threads": "2 x 8 (defaults)",
        "tenant_schedule_quota": args.quota,
        "creates_per_second": args.count / accepted_in,
        "latency_ms": summary(latencies),
        "errors": errors,
        "statuses": statuses,
        "stored": stored - args.warmup,
        "drained_after_seconds": drained_in,
        "stored_per_second_end_to_end": args.count / drained_in,
    }
    if counted is not None:
        result["store_commands"] = command_figures(counted, args.count)
        print(f"store commands per create: {result['store_commands']}")
    print(
        table(
            [
                "backend",
                "creates/s (API)",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
                "errors",
                "queue 1 drained after s",
                "stored/s end to end",
            ],
            [
                [
                    where.label,
                    result["creates_per_second"],
                    result["latency_ms"]["p50"],
                    result["latency_ms"]["p95"],
                    result["latency_ms"]["p99"],
                    result["latency_ms"]["max"],
                    errors,
                    drained_in,
                    result["stored_per_second_end_to_end"],
                ]
            ],
        )
    )
    report("creation", result, args.json)
    return result


def _wait_stored(backends: Backends, count: int, deadline: float) -> int:
    """Wait until ``count`` schedules are stored (queue 1 drained into the store)."""
    while True:
        stored = sum(backends.store.count_schedules().values())
        if stored >= count or time.time() > deadline:
            return stored
        time.sleep(0.05)


if __name__ == "__main__":
    main()
