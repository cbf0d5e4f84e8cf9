"""Dispatch: the poller's enqueue rate, and what a claim costs against the schedules stored.

1. Enqueue rate. ``--due`` one-time schedules, all due within the look-ahead, are stored; the
   poller (its own code, ``Poller.poll_once`` in a loop in this process, default settings: batches
   of ``SCHEDULER_CLAIM_BATCH_SIZE`` = 200, one queue send per claim) claims, enqueues and
   advances them until none is left. Reported: occurrences enqueued per second and the time per
   poll.
2. Claim cost. For each size (default 10k, 100k, 1M) a fresh store holds that many schedules, of
   which ``--due-per-claim`` (200) are due and the rest are due days later (as in a real system:
   most schedules are not due now). Timed: ``claim_due_schedules`` of one batch (the 200 due
   ones; median of ``--rounds``), and an empty claim (nothing due: the poller's cost every
   second when idle). It must follow the number due, not the number stored.

    python -m bench.dispatch
    python -m bench.dispatch --sizes 10000,100000 --store-url mongodb://127.0.0.1:27017
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import backend, common_arguments, report, table
from bench.seed import one_time_rows, seed, spaced
from polling_worker.worker import Poller
from scheduler_cli.components import build_poller
from shared.backends import open_backends
from shared.ports import Advance, ClaimRequest

HOOK = "http://127.0.0.1:9/hook"


def enqueue_rate(
    store_url: str | None, queue_url: str | None, due: int, profile: Path | None
) -> dict[str, Any]:
    with backend(store_url, queue_url) as where:
        settings = where.settings()
        backends = open_backends(settings)
        try:
            now = datetime.now(UTC)
            # Spread over the next minute: all inside the 5-minute look-ahead.
            rows = one_time_rows(
                HOOK, spaced(now + timedelta(seconds=30), due, due / 60.0), "dispatch"
            )
            seed(backends.store, rows, now)
            poller: Poller = build_poller(settings, backends)
            polls: list[float] = []
            profiler = _profiler(profile)
            started = time.perf_counter()
            while True:
                poll_started = time.perf_counter()
                claimed = poller.poll_once()
                if not claimed:
                    break
                polls.append((time.perf_counter() - poll_started) * 1000.0)
            elapsed = time.perf_counter() - started
            if profiler is not None and profile is not None:
                profiler.stop()
                text = profile.suffix == ".txt"
                profile.write_text(
                    profiler.output_text(show_all=False) if text else profiler.output_html()
                )
            depth = backends.queues.occurrences.depth()
        finally:
            backends.close()
    queued = depth.visible + depth.delayed + depth.in_flight
    return {
        "backend": where.label,
        "due": due,
        "sent": poller.stats.sent,
        "queued": queued,
        "lost_leases": poller.stats.lost_leases,
        "seconds": elapsed,
        "enqueued_per_second": poller.stats.sent / elapsed,
        "polls": len(polls),
        "ms_per_poll_median": statistics.median(polls) if polls else float("nan"),
    }


def _profiler(path: Path | None) -> Any:
    if path is None:
        return None
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    return profiler


def claim_cost(
    store_url: str | None, queue_url: str | None, size: int, due: int, rounds: int
) -> dict[str, Any]:
    with backend(store_url, queue_url) as where:
        settings = where.settings()
        backends = open_backends(settings)
        store = backends.store
        try:
            now = datetime.now(UTC).replace(microsecond=0)
            horizon = now + timedelta(seconds=settings.lookahead_seconds)
            seeding = time.perf_counter()
            # Due now (within the look-ahead): exactly one claim's worth.
            seed(store, one_time_rows(HOOK, spaced(now, due, due / 60.0), "due"), now)
            # The rest: due over the next 30 days, never within this horizon.
            later = now + timedelta(days=1)
            rest = size - due
            seed(
                store,
                one_time_rows(HOOK, spaced(later, rest, rest / (30 * 86400.0)), "later"),
                now,
            )
            seeded_in = time.perf_counter() - seeding
            full: list[float] = []
            empty: list[float] = []
            moment = now
            claimed = 0
            for _ in range(rounds):
                moment += timedelta(milliseconds=2)
                started = time.perf_counter()
                batch = store.claim_due_schedules(
                    ClaimRequest(horizon, moment, due, "bench", moment + timedelta(seconds=30))
                )
                full.append((time.perf_counter() - started) * 1000.0)
                claimed = len(batch)
                # Released unchanged (not timed), so the next round claims the same batch.
                store.advance_schedules(
                    [
                        Advance(item, item.next_schedule_time, item.occurrence_count)
                        for item in batch
                    ],
                    "bench",
                    moment,
                )
                # Nothing due before ``now - 1 day``: what an idle poll costs.
                started = time.perf_counter()
                store.claim_due_schedules(
                    ClaimRequest(
                        now - timedelta(days=1), moment, due, "bench", moment + timedelta(seconds=1)
                    )
                )
                empty.append((time.perf_counter() - started) * 1000.0)
            plan = _plan(store)
        finally:
            backends.close()
    return {
        "backend": where.label,
        "stored": size,
        "due": due,
        "claimed_per_round": claimed,
        "seeded_in_seconds": seeded_in,
        "claim_ms_median": statistics.median(full),
        "claim_ms_p90": sorted(full)[int(0.9 * (len(full) - 1))],
        "empty_claim_ms_median": statistics.median(empty),
        "query_plan": plan,
    }


def _plan(store: Any) -> str:
    """How the backend answers the claim's query (SQLite's EXPLAIN QUERY PLAN, MongoDB's)."""
    from shared.adapters.mongo.store import MongoStore
    from shared.adapters.sqlite.store import SqliteStore

    if isinstance(store, SqliteStore):
        rows = (
            store.db.connection()
            .execute(
                "EXPLAIN QUERY PLAN SELECT * FROM schedules WHERE status = 'active'"
                " AND next_ms <= ? AND (lease_until_ms IS NULL OR lease_until_ms < ?)"
                " ORDER BY next_ms LIMIT ?",
                (0, 0, 200),
            )
            .fetchall()
        )
        return "; ".join(row["detail"] for row in rows)
    if isinstance(store, MongoStore):
        explain = (
            store.schedules.find(
                {
                    "status": "active",
                    "next_schedule_time": {"$lte": datetime.now(UTC)},
                    "$or": [{"lease_until": None}, {"lease_until": {"$lt": datetime.now(UTC)}}],
                },
                {"_id": 1},
            )
            .sort("next_schedule_time", 1)
            .limit(200)
            .explain()
        )
        winning = explain.get("queryPlanner", {}).get("winningPlan", {})
        return str(winning)[:400]
    return "n/a"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    common_arguments(parser)
    parser.add_argument("--due", type=int, default=20_000, help="schedules to enqueue")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="schedules stored")
    parser.add_argument("--due-per-claim", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--profile", type=Path, help="pyinstrument profile of the enqueue run (.html, or .txt)"
    )
    args = parser.parse_args(argv)
    rate = enqueue_rate(args.store_url, args.queue_url, args.due, args.profile)
    print(
        table(
            ["backend", "due", "enqueued/s", "polls", "ms per poll (200)", "lost leases"],
            [
                [
                    rate["backend"],
                    rate["due"],
                    rate["enqueued_per_second"],
                    rate["polls"],
                    rate["ms_per_poll_median"],
                    rate["lost_leases"],
                ]
            ],
        ),
        flush=True,
    )
    costs = []
    for size in (int(size) for size in args.sizes.split(",")):
        cost = claim_cost(args.store_url, args.queue_url, size, args.due_per_claim, args.rounds)
        costs.append(cost)
        print(
            f"stored {size:,}: claim of {cost['claimed_per_round']} "
            f"{cost['claim_ms_median']:.2f} ms, empty claim {cost['empty_claim_ms_median']:.3f} ms"
            f" (seeded in {cost['seeded_in_seconds']:.0f} s)",
            flush=True,
        )
    base = costs[0]["claim_ms_median"] if costs else float("nan")
    print(
        table(
            ["stored", "due", "claim ms (median)", "p90", "x 10k", "empty claim ms", "plan"],
            [
                [
                    cost["stored"],
                    cost["claimed_per_round"],
                    cost["claim_ms_median"],
                    cost["claim_ms_p90"],
                    cost["claim_ms_median"] / base,
                    cost["empty_claim_ms_median"],
                    cost["query_plan"],
                ]
                for cost in costs
            ],
        )
    )
    result = {"enqueue": rate, "claim_cost": costs}
    report("dispatch", result, args.json)
    return result


if __name__ == "__main__":
    main()
