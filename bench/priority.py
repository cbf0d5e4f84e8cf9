"""Priority under a backlog (issue 27 item 4): 5,000 due one-time schedules, 100 of priority 9.

The backlog is stored while no poller or executor runs, each schedule overdue by up to
``--spread`` seconds (the priority-9 ones at random places among the others, priorities 0 to 8):
what an outage of the workers leaves. Then two ``scheduler poller`` and two ``scheduler
executor`` processes (default settings) start together and fire it at the receiver
(``bench.receiver``, its own process), which records each arrival by its own clock.

Per run: where the priority-9 calls came among all calls (the last one's position, and how many
calls of a lower priority came before it, and how many came among the first P + 2·E·C calls),
the seconds from the start of the workers to the first call, from the first call to the last
priority-9 call and to the last call, and errors (missing or duplicated calls).

    python -m bench.priority
    python -m bench.priority --store-url mongodb://127.0.0.1:27017 --queue-url sqs+http://…
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import Component, backend, common_arguments, report
from bench.receiver import ReceiverProcess
from bench.seed import one_time_rows, seed
from shared.backends import open_backends
from shared.settings import Settings
from shared.timeutil import iso_z

WORKERS = 2


def run(
    receiver: ReceiverProcess,
    count: int,
    urgent: int,
    spread: float,
    store_url: str | None,
    queue_url: str | None,
    log_dir: Path,
) -> dict[str, Any]:
    receiver.reset()
    rng = random.Random(27)
    priorities = [9] * urgent + [rng.randrange(9) for _ in range(count - urgent)]
    rng.shuffle(priorities)
    with backend(store_url, queue_url) as where:
        backends = open_backends(where.settings())
        try:
            now = datetime.now(UTC)
            times = [now - timedelta(seconds=spread * (1 - n / count)) for n in range(count)]
            rows = [
                (schedule_id, dataclasses.replace(definition, priority=priority), at)
                for (schedule_id, definition, at), priority in zip(
                    one_time_rows(f"{receiver.url}/hook", times, "backlog"), priorities, strict=True
                )
            ]
            seed(backends.store, rows, now - timedelta(seconds=spread + 1))
            priority_of = {f"{sid}:{iso_z(at)}": d.priority for sid, d, at in rows}
            started = time.time()
            workers = [
                Component(kind, where.settings_env(), log_dir)
                for kind in ("poller", "executor")
                for _ in range(WORKERS)
            ]
            try:
                receiver.wait_for(count, time.time() + 120 + count / 50)
                time.sleep(0.5)  # late duplicates, if any
            finally:
                for component in workers:
                    component.stop()
        finally:
            backends.close()
    arrivals = sorted(receiver.dump())
    seen: set[str] = set()
    order: list[tuple[float, int]] = []
    duplicates = 0
    for arrived, _, key in arrivals:
        if key not in priority_of:
            continue
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)
        order.append((arrived, priority_of[key]))
    urgent_at = [position for position, (_, priority) in enumerate(order) if priority == 9]
    last = urgent_at[-1] if urgent_at else -1
    concurrency = Settings.executor_concurrency
    window = urgent + 2 * WORKERS * concurrency
    return {
        "backend": where.label,
        "due": count,
        "priority_9": urgent,
        "workers": f"{WORKERS} pollers, {WORKERS} executors of {concurrency} calls",
        "last_priority_9_call": last + 1,
        "lower_before_it": sum(1 for _, priority in order[:last] if priority < 9),
        # The window of docs/architecture.md, "Priority under a backlog": P + 2·E·C calls.
        "window": window,
        "priority_9_in_window": sum(1 for _, priority in order[:window] if priority == 9),
        "seconds_to_first_call": order[0][0] - started if order else None,
        "seconds_to_last_priority_9": order[last][0] - order[0][0] if urgent_at else None,
        "seconds_to_last_call": order[-1][0] - order[0][0] if order else None,
        "missing": count - len(seen),
        "duplicates": duplicates,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_arguments(parser)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--urgent", type=int, default=100)
    parser.add_argument("--spread", type=float, default=60.0, help="seconds overdue at most")
    parser.add_argument("--log-dir", type=Path, help="the workers' logs (default: a temporary one)")
    args = parser.parse_args(argv)
    receiver = ReceiverProcess()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-priority-") as tmp:
            figures = run(
                receiver,
                args.count,
                args.urgent,
                args.spread,
                args.store_url,
                args.queue_url,
                args.log_dir or Path(tmp),
            )
    finally:
        receiver.stop()
    report("priority", figures, args.json)
    return figures


if __name__ == "__main__":
    main()
