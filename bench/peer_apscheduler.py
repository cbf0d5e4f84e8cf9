"""The peer: the same firing workload on APScheduler 3, the library a Python team would pick.

A ``BackgroundScheduler`` with a 32-thread pool (the executor's default concurrency) and the
default in-memory job store holds ``count`` one-time ``DateTrigger`` jobs, ``rate`` per second
from ``--start``; each job makes the same HTTP call as the executor (POST, a small JSON body,
``Idempotency-Key`` and ``X-Scheduler-Scheduled-Time``) through a pooled urllib3 client. No
misfire grace (late jobs still run, as ours do). It exits when every job has fired.

Run by ``bench.firing`` in its own process; prints one JSON line with its own counts at the end.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from datetime import UTC, datetime

import urllib3
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger

from bench.seed import spaced
from shared.timeutil import iso_z


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--start", type=float, required=True, help="epoch seconds of the first")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    pool = urllib3.PoolManager(maxsize=args.concurrency, retries=False)
    body = json.dumps({"task": "bench", "attempt_budget": 3}).encode()
    done = threading.Event()
    lock = threading.Lock()
    counts = {"fired": 0, "errors": 0}

    def fire(key: str, scheduled: str) -> None:
        try:
            response = pool.request(
                "POST",
                args.url,
                body=body,
                headers={
                    "Content-Type": "application/json",
                    "Idempotency-Key": key,
                    "X-Scheduler-Scheduled-Time": scheduled,
                    "X-Bench": "1",
                },
                timeout=urllib3.Timeout(total=10.0),
            )
            ok = response.status < 300
        except urllib3.exceptions.HTTPError:
            ok = False
        with lock:
            counts["fired"] += 1
            counts["errors"] += 0 if ok else 1
            if counts["fired"] >= args.count:
                done.set()

    scheduler = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(args.concurrency)},
        job_defaults={"misfire_grace_time": None, "coalesce": False, "max_instances": 1},
        timezone=UTC,
    )
    start = datetime.fromtimestamp(args.start, UTC)
    for index, moment in enumerate(spaced(start, args.count, args.rate)):
        key = f"peer-{index:08d}:{iso_z(moment)}"
        scheduler.add_job(
            fire, DateTrigger(run_date=moment), args=[key, iso_z(moment)], id=str(index)
        )
    scheduler.start()
    done.wait(max(0.0, args.start - time.time()) + args.timeout)
    scheduler.shutdown(wait=True)
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
