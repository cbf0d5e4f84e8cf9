"""MongoDB round trips of the store's hot paths, and the claim rate of one, two and three pollers.

Part 1 counts the commands each store call sends (pymongo command monitoring) for ``--count``
one-time schedules, taken through the production path in batches of ``--batch`` with the port
methods the workers call: create (``apply_definition``), the creates' change history
(``record_changes``, in the processor's batches of ``Settings.processor_batch_size``), claim,
advance, the executor's version check (``get_schedules``), begin (``begin_attempts``) and
settle (``settle_attempts``: the record and the run count). Figures are commands per schedule
and per batch.

Part 2 times ``--claim-count`` due schedules claimed and advanced to completion by 1, 2 and 3
poller processes (``--pollers``), each a loop of claim + advance as the poller runs it. Beside
the rate: the commands per schedule claimed (a herd, pollers fighting over the same candidates,
raises it) and the time a claim + advance takes (a server that is the limit makes each poller
wait longer, at the same commands per claim).
``--delay-ms`` puts a proxy in front of the server that holds every command that long (a
network between the workers and a cluster; ``bench/delay_proxy.py``).

    python -m bench.store_rounds --store-url mongodb://127.0.0.1:27017 --delay-ms 1
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pymongo import monitoring

from bench.common import cpu_seconds, free_port, report, table
from bench.delay_proxy import delaying_proxy
from bench.seed import TENANT, one_time_definition
from scheduler_service.service.recording import field_changes
from shared.adapters.mongo.store import MongoStore
from shared.changes import Actor, ActorKind, Change, ChangeAction, ChangeNote
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from shared.ports import Advance, ClaimRequest
from shared.secrets import SecretBox, new_secret_key
from shared.settings import Settings

HOOK = "http://127.0.0.1:9/hook"


class CommandCounter(monitoring.CommandListener):
    """Counts the commands a client sends, by name (``hello``/heartbeats are not commands)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.counts[event.command_name] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> Counter[str]:
        taken, self.counts = self.counts, Counter()
        return taken


def _via(url: str, host_port: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, host_port, parts.path, parts.query, parts.fragment))


@contextmanager
def _store(url: str, database: str, key: str) -> Iterator[MongoStore]:
    """A store as the workers open it (``from_url``: the same client options).

    ``key`` seals the definitions: the same in every process of a run, as in the workers.
    """
    store = MongoStore.from_url(url, database, secrets=SecretBox([key]))
    try:
        yield store
    finally:
        store.close()


def _seed(store: MongoStore, count: int, due: datetime, prefix: str) -> None:
    for index in range(count):
        store.apply_definition(
            (
                TENANT,
                f"{prefix}-{index:07d}",
                1,
                one_time_definition(HOOK, due, f"bench-{index}"),
                due,
                due - timedelta(seconds=1),
            )
        )


def _record_creates(store: MongoStore, count: int, at: datetime, prefix: str) -> None:
    """The change history of ``_seed``'s creates, as the processor records it: one
    ``record_changes`` a batch of mutations."""
    actor = Actor(ActorKind.API_KEY, "bench", "bench")
    batch = Settings().processor_batch_size
    for start in range(0, count, batch):
        changes = []
        for index in range(start, min(count, start + batch)):
            created = field_changes(None, one_time_definition(HOOK, at, f"bench-{index}"), ())
            note = ChangeNote(ChangeAction.CREATE, actor, created)
            changes.append(Change.of(TENANT, f"{prefix}-{index:07d}", 1, at, note))
        store.record_changes(changes)


def count_commands(url: str, count: int, batch: int) -> dict[str, Any]:
    """Commands per phase for ``count`` one-time schedules, create to recorded success."""
    database = f"scheduler_bench_{uuid.uuid4().hex[:8]}"
    listener = CommandCounter()
    # Registered before the client is made: it sees every command of the clients made after.
    monitoring.register(listener)
    phases: dict[str, Counter[str]] = {}
    with _store(url, database, new_secret_key()) as store:
        store.ensure_indexes()
        now = datetime.now(UTC).replace(microsecond=0)
        listener.take()
        _seed(store, count, now, "rounds")
        phases["create"] = listener.take()
        _record_creates(store, count, now, "rounds")
        phases["history"] = listener.take()
        claimed_all = []
        claims = Counter[str]()
        advances = Counter[str]()
        while True:
            claimed = store.claim_due_schedules(
                ClaimRequest(now, now, batch, "bench-poller", now + timedelta(seconds=30))
            )
            claims += listener.take()
            if not claimed:
                break
            store.advance_schedules(
                [Advance(schedule, None, 1) for schedule in claimed], "bench-poller", now
            )
            advances += listener.take()
            claimed_all += claimed
        phases["claim"] = claims
        phases["advance"] = advances
        occurrences = [
            Occurrence(s.tenant, s.schedule_id, s.revision, now, s.occurrence_count)
            for s in claimed_all
        ]
        checks = Counter[str]()
        begins = Counter[str]()
        settles = Counter[str]()
        for start in range(0, len(occurrences), batch):
            chunk = occurrences[start : start + batch]
            store.get_schedules([(o.tenant, o.schedule_id) for o in chunk])
            checks += listener.take()
            started = store.begin_attempts(
                chunk, "bench-executor", now, now + timedelta(seconds=30)
            )
            begins += listener.take()
            finished = now + timedelta(milliseconds=5)
            outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, finished, Answer(200), 2.0)
            recorded = store.settle_attempts(
                [(execution, outcome) for execution in started if execution is not None],
                "bench-executor",
            )
            settles += listener.take()
            assert all(recorded), "every outcome should have been recorded"
        phases["version check"] = checks
        phases["begin"] = begins
        phases["settle"] = settles
        succeeded = sum(
            1
            for schedule in store.get_schedules(
                [(TENANT, s.schedule_id) for s in claimed_all]
            ).values()
            if schedule.run_count == 1
        )
        store.client.drop_database(database)
    batches = max(1, -(-count // batch))
    rows: list[dict[str, Any]] = []
    for phase, counts in phases.items():
        total = sum(counts.values())
        rows.append(
            {
                "phase": phase,
                "commands": total,
                "per_schedule": total / count,
                "per_batch": total / batches,
                "by_command": dict(counts),
            }
        )
    total = sum(row["commands"] for row in rows)
    return {
        "schedules": count,
        "batch": batch,
        "claimed": len(claimed_all),
        "succeeded": succeeded,
        "phases": rows,
        "total_commands": total,
        "per_schedule": total / count,
        "per_schedule_after_create": (total - rows[0]["commands"] - rows[1]["commands"]) / count,
    }


def _poller(
    url: str, database: str, key: str, owner: str, batch: int, start: Any, out: Any
) -> None:
    commands = CommandCounter()
    monitoring.register(commands)
    with _store(url, database, key) as store:
        claimed_total = 0
        claims = 0
        start.wait()
        commands.take()
        began = time.perf_counter()
        cpu = time.process_time()
        idle_since = None
        sent, busy_cpu, waited = 0, 0.0, 0.0
        while True:
            now = datetime.now(UTC)
            called = time.perf_counter()
            claimed = store.claim_due_schedules(
                ClaimRequest(now, now, batch, owner, now + timedelta(seconds=30))
            )
            if claimed:
                claims += 1
                idle_since = None
                store.advance_schedules([Advance(s, None, 1) for s in claimed], owner, now)
                waited += time.perf_counter() - called
                claimed_total += len(claimed)
                finished = time.perf_counter()
                # The commands and CPU of the work, not of the idle second that ends it.
                sent = sum(commands.counts.values())
                busy_cpu = time.process_time() - cpu
                continue
            if idle_since is None:
                idle_since = time.perf_counter()
            elif time.perf_counter() - idle_since > 1.0:
                break
            time.sleep(0.01)
        out.put(
            {
                "owner": owner,
                "claimed": claimed_total,
                "began": began,
                "finished": finished if claimed_total else began,
                "claims": claims,
                "commands": sent,
                "cpu_seconds": busy_cpu,
                "waited_seconds": waited,
            }
        )


def claim_rate(
    url: str, count: int, batch: int, pollers: int, server_pid: int | None
) -> dict[str, Any]:
    database = f"scheduler_bench_{uuid.uuid4().hex[:8]}"
    key = new_secret_key()
    with _store(url, database, key) as store:
        store.ensure_indexes()
        due = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
        _seed(store, count, due, "claim")
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(pollers)
    out = context.Queue()
    processes = [
        context.Process(target=_poller, args=(url, database, key, f"poller-{n}", batch, start, out))
        for n in range(pollers)
    ]
    server_cpu = cpu_seconds(server_pid) if server_pid else math.nan
    for process in processes:
        process.start()
    results: list[dict[str, Any]] = [out.get(timeout=600) for _ in processes]
    server_cpu = cpu_seconds(server_pid) - server_cpu if server_pid else math.nan
    for process in processes:
        process.join(30)
    with _store(url, database, key) as store:
        left = store.schedules.count_documents({"status": "active"})
        store.client.drop_database(database)
    began = min(result["began"] for result in results)
    finished = max(result["finished"] for result in results)
    claimed = sum(result["claimed"] for result in results)
    commands = sum(result["commands"] for result in results)
    seconds = finished - began
    return {
        "pollers": pollers,
        "schedules": count,
        "claimed": claimed,
        "left_unclaimed": left,
        "by_poller": {result["owner"]: result["claimed"] for result in results},
        "seconds": seconds,
        "claims_per_second": claimed / seconds if seconds > 0 else math.nan,
        # A herd (pollers fighting over the same candidates) shows as more commands per
        # schedule claimed, and more claim calls per schedule, with more pollers than with one.
        "commands_per_claimed": commands / claimed if claimed else math.nan,
        "claim_calls": sum(result["claims"] for result in results),
        # How long one claim + advance took, on average over the pollers' claims.
        "ms_per_claim_call": 1000
        * sum(result["waited_seconds"] for result in results)
        / max(1, sum(result["claims"] for result in results)),
        "poller_cpu_seconds": sum(result["cpu_seconds"] for result in results),
        # Until the last claim (plus the pollers' idle second): near 1.0 means the server is
        # the limit, not the round trips, and more pollers cannot claim faster.
        "server_cpu_share": server_cpu / seconds if seconds > 0 else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store-url", required=True, help="mongodb://… (loopback)")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="added to every command")
    parser.add_argument("--count", type=int, default=1000, help="schedules for the command count")
    parser.add_argument("--batch", type=int, default=100, help="claim/fire batch size")
    parser.add_argument("--claim-count", type=int, default=2000, help="schedules per claim run")
    parser.add_argument("--pollers", default="1,2,3", help="poller counts to time")
    parser.add_argument(
        "--server-pid", type=int, help="the MongoDB server's process, to report its CPU share"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    url = args.store_url
    with contextlib_delay(url, args.delay_ms) as measured_url:
        commands = count_commands(measured_url, args.count, args.batch)
        rates = [
            claim_rate(measured_url, args.claim_count, args.batch, int(pollers), args.server_pid)
            for pollers in args.pollers.split(",")
        ]
    print(
        table(
            ["phase", "commands", "per schedule", "per batch", "by command"],
            [
                [
                    row["phase"],
                    row["commands"],
                    row["per_schedule"],
                    row["per_batch"],
                    row["by_command"],
                ]
                for row in commands["phases"]
            ],
        )
    )
    print(f"total per schedule: {commands['per_schedule']:.2f}")
    print(
        table(
            [
                "pollers",
                "claimed",
                "seconds",
                "claims/s",
                "commands/claimed",
                "ms per claim call",
                "server CPU",
            ],
            [
                [
                    r["pollers"],
                    r["claimed"],
                    r["seconds"],
                    r["claims_per_second"],
                    r["commands_per_claimed"],
                    r["ms_per_claim_call"],
                    r["server_cpu_share"],
                ]
                for r in rates
            ],
        )
    )
    report(
        "store_rounds",
        {"delay_ms": args.delay_ms, "commands": commands, "claim_rates": rates},
        args.json,
    )


@contextmanager
def contextlib_delay(url: str, delay_ms: float) -> Iterator[str]:
    """``url`` itself, or through a delaying proxy when ``delay_ms`` is set."""
    if delay_ms <= 0:
        yield url
        return
    parts = urlsplit(url)
    target = (parts.hostname or "127.0.0.1", parts.port or 27017)
    with delaying_proxy(free_port(), target, delay_ms) as host_port:
        # One server behind a proxy: talk to it directly, not through a replica-set discovery.
        yield _via(url, host_port)


if __name__ == "__main__":
    main()
