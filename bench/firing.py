"""Precision and throughput of firing, with APScheduler 3 side by side in the same run.

For each rate R (default 100, 500, 1,000, 2,000 per second): N = R x ``--seconds`` one-time
schedules due one after another R per second, from ``--lead`` seconds after they are stored.
A real ``scheduler poller`` and ``scheduler executor`` (separate processes, default settings)
fire them at the receiver (``bench.receiver``, its own process), which records each arrival.
Then the same workload runs on APScheduler 3 (``bench.peer_apscheduler``, its own process).

Per run: fires per second sustained (unique fires / (last arrival - first arrival)), lateness
(arrival - scheduled) p50/p95/p99/max, errors (missing, duplicated, or not recorded as
succeeded), and the firing process's resident memory (first sample and peak).

    python -m bench.firing                          # SQLite store and queues
    python -m bench.firing --moto --rates 20 --seconds 10   # queues on moto's server
    python -m bench.firing --store-url mongodb://host:27017 --queue-url sqs+http://host:4566
    python -m bench.firing --store-url mongodb://127.0.0.1:27017 --store-delay-ms 1

``--store-delay-ms`` puts the delaying proxy (``bench/delay_proxy.py``) in front of the MongoDB
store and counts every command the poller and the executor send through it, from their start
to their stop (the seeding is not counted): per run, commands by name and per occurrence fired,
handshakes and heartbeats (``hello``) apart.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import (
    ROOT,
    Component,
    RssSampler,
    backend,
    common_arguments,
    cpu_by_thread,
    cpu_seconds,
    free_port,
    profiled,
    report,
    summary,
    table,
    thread_cpu_seconds,
)
from bench.delay_proxy import command_figures, proxied
from bench.receiver import Arrival, ReceiverProcess
from bench.seed import TENANT, one_time_rows, seed, spaced
from shared.backends import open_backends
from shared.model import ExecutionStatus
from shared.timeutil import parse_iso


def firing_figures(
    arrivals: list[Arrival], expected: set[str], offered_rate: float
) -> dict[str, Any]:
    """Figures of one run from the receiver's record; ``expected`` are the occurrence ids."""
    first: dict[str, tuple[float, str]] = {}
    duplicates = 0
    for arrived, scheduled, key in arrivals:
        if key not in expected:
            continue
        if key in first:
            duplicates += 1
            continue
        first[key] = (arrived, scheduled)
    lateness = [
        (arrived - parse_iso(scheduled).timestamp()) * 1000.0
        for arrived, scheduled in first.values()
    ]
    times = sorted(arrived for arrived, _ in first.values())
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    sustained = (len(times) - 1) / span if span > 0 else float("nan")
    return {
        "offered_per_second": offered_rate,
        "expected": len(expected),
        "fired": len(first),
        "missing": len(expected) - len(first),
        "duplicates": duplicates,
        "sustained_per_second": sustained,
        "lateness_ms": summary(lateness),
    }


@contextmanager
def moto_server(log_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """moto's SQS server on a free loopback port: ``sqs+http://127.0.0.1:<port>``."""
    port = free_port()
    log = (log_dir / "moto.log").open("wb")
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import urllib.request

        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/", timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        yield f"sqs+http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        process.wait(10)
        log.close()


@contextmanager
def localstack_server(log_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """LocalStack (SQS only) from ``.peers/`` (``scripts/peers install``), as the tests run it."""
    from tests.support.peers import start_localstack

    directory = log_dir / f"localstack-{free_port()}"
    directory.mkdir(parents=True)
    peer = start_localstack(directory)
    try:
        yield "sqs+" + peer.url, peer.process
    finally:
        peer.stop()


def run_ours(
    receiver: ReceiverProcess,
    rate: float,
    count: int,
    lead: float,
    store_url: str | None,
    queue_url: str | None,
    log_dir: Path,
    profile_dir: Path | None,
    queue_pid: int | None = None,
    executors: int = 1,
    commands: Counter[str] | None = None,
    store_pid: int | None = None,
) -> dict[str, Any]:
    """One run; ``commands``: the store proxy's count, if any (``--store-delay-ms``)."""
    receiver.reset()
    with backend(store_url, queue_url) as where:
        settings = where.settings()
        backends = open_backends(settings)
        try:
            accepted = datetime.now(UTC)
            start = accepted + timedelta(seconds=lead)
            prefix = f"fire-{int(rate)}"
            rows = list(one_time_rows(f"{receiver.url}/hook", spaced(start, count, rate), prefix))
            seed(backends.store, rows, accepted)
            expected = {f"{sid}:{_iso(moment)}" for sid, _, moment in rows}
            if commands is not None:
                commands.clear()
            poller = Component("poller", where.settings_env(), log_dir)
            executor, *more_executors = [
                Component("executor", where.settings_env(), log_dir) for _ in range(executors)
            ]

            def profile(name: str, pid: int | None) -> Path | None:
                if profile_dir is None or not pid:
                    return None
                return profile_dir / f"{name}-{int(rate)}.txt"

            try:
                with (
                    RssSampler(executor.pid) as rss,
                    profiled(poller.pid, profile("poller", poller.pid)),
                    ExitStack() as firing_window,
                ):
                    # CPU used (and profiles taken) while firing, from the window's start: the
                    # start-up of the processes is not counted.
                    time.sleep(max(0.0, start.timestamp() - time.time()))
                    firing = (executor, *more_executors)
                    queue_cpu_before = cpu_seconds(queue_pid) if queue_pid else 0.0
                    poller_cpu_before = cpu_seconds(poller.pid)
                    store_cpu_before = cpu_seconds(store_pid) if store_pid else 0.0
                    # On a busy machine an executor may still be starting when the first
                    # occurrence is due: its CPU is counted from when it has started (it fires
                    # nothing before), so start-up is not counted per fire; how late, reported.
                    for component in firing:
                        component.wait_for_output("executor_started", 120)
                    started_late = max(0.0, time.time() - start.timestamp())
                    cpu_before = sum(cpu_seconds(c.pid) for c in firing)
                    threads_before = thread_cpu_seconds(executor.pid)
                    firing_window.enter_context(
                        profiled(executor.pid, profile("executor", executor.pid))
                    )
                    firing_window.enter_context(
                        profiled(queue_pid or 0, profile("queue-server", queue_pid))
                    )
                    end = start.timestamp() + count / rate
                    receiver.wait_for(count, end + 60 + count / 50)
                    window = time.time() - start.timestamp()
                    cpu = {
                        "executor": sum(cpu_seconds(c.pid) for c in firing) - cpu_before,
                        "poller": cpu_seconds(poller.pid) - poller_cpu_before,
                    }
                    threads = cpu_by_thread(
                        executor.pid, threads_before, thread_cpu_seconds(executor.pid)
                    )
                    if store_pid:
                        cpu["store_server"] = cpu_seconds(store_pid) - store_cpu_before
                    if queue_pid:
                        cpu["queue_server"] = cpu_seconds(queue_pid) - queue_cpu_before
                    time.sleep(0.5)  # late duplicates, if any
            finally:
                for component in (executor, *more_executors):
                    component.stop()
                poller.stop()
            counted = Counter(commands) if commands is not None else None
            figures = firing_figures(receiver.dump(), expected, rate)
            if counted is not None:
                figures["store_commands"] = command_figures(counted, figures["fired"])
            figures["not_succeeded"] = _not_succeeded(backends.store, rows)
            figures["errors"] = (
                figures["missing"] + figures["duplicates"] + figures["not_succeeded"]
            )
            figures["rss_mb"] = {"at_start": rss.at(start.timestamp()), "peak": rss.peak}
            figures["cpu_seconds"] = cpu
            # From the first due time to the last arrival: CPU share = CPU seconds / window.
            figures["firing_window_seconds"] = window
            figures["firing_window_started_at"] = start.timestamp()
            figures["executors_started_late_seconds"] = started_late
            figures["cpu_us_per_fire"] = {
                name: 1e6 * seconds / max(1, figures["fired"]) for name, seconds in cpu.items()
            }
            # The first executor's CPU by thread: the loop (MainThread) and one thread per role.
            figures["executor_cpu_us_per_fire_by_thread"] = {
                name: 1e6 * seconds / max(1, figures["fired"] / executors)
                for name, seconds in sorted(threads.items(), key=lambda item: -item[1])
            }
            figures["backend"] = where.label + (f", {executors} executors" if executors > 1 else "")
            return figures
        finally:
            backends.close()


def _iso(moment: datetime) -> str:
    from shared.timeutil import iso_z

    return iso_z(moment)


def _not_succeeded(store: Any, rows: list[tuple[str, Any, datetime]]) -> int:
    """Occurrences whose execution record is missing or not ``succeeded``."""
    from shared.adapters.mongo.store import MongoStore

    expected = [f"{schedule_id}:{_iso(moment)}" for schedule_id, _, moment in rows]
    if isinstance(store, MongoStore):
        # One read of the run's records: a read per occurrence takes minutes on nx-27017.
        found = store.executions.find(
            {"tenant": TENANT, "status": ExecutionStatus.SUCCEEDED.value}, {"occurrence_id": 1}
        )
        return len(set(expected) - {document["occurrence_id"] for document in found})
    bad = 0
    for occurrence_id in expected:
        record = store.get_execution(TENANT, occurrence_id)
        if record is None or record.status is not ExecutionStatus.SUCCEEDED:
            bad += 1
    return bad


def run_peer(
    receiver: ReceiverProcess, rate: float, count: int, lead: float, profile_dir: Path | None
) -> dict[str, Any]:
    receiver.reset()
    start = time.time() + lead
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.peer_apscheduler",
            "--url",
            f"{receiver.url}/hook",
            "--count",
            str(count),
            "--rate",
            str(rate),
            "--start",
            str(start),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    profile = profile_dir / f"apscheduler-{int(rate)}.txt" if profile_dir else None
    cpu = math.nan
    with RssSampler(process.pid) as rss, profiled(process.pid, profile):
        time.sleep(max(0.0, start - time.time()))
        cpu_before = cpu_seconds(process.pid)
        while process.poll() is None and time.time() < start + 120 + count / 50:
            cpu = cpu_seconds(process.pid) - cpu_before
            time.sleep(0.05)
        out, _ = process.communicate(timeout=60)
    counts = json.loads(out.strip().splitlines()[-1])
    arrivals = receiver.dump()
    expected = {key for _, _, key in arrivals if key.startswith("peer-")}
    figures = firing_figures(arrivals, expected, rate)
    figures["missing"] = count - figures["fired"]
    figures["expected"] = count
    figures["not_succeeded"] = counts["errors"]
    figures["errors"] = figures["missing"] + figures["duplicates"] + counts["errors"]
    figures["rss_mb"] = {"at_start": rss.at(start), "peak": rss.peak}
    figures["cpu_seconds"] = {"apscheduler": cpu}
    figures["cpu_us_per_fire"] = {"apscheduler": 1e6 * cpu / max(1, figures["fired"])}
    figures["backend"] = "APScheduler 3 (memory job store)"
    return figures


def ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("nan")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    common_arguments(parser)
    parser.add_argument("--rates", default="100,500,1000,2000", help="fires per second")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each window")
    parser.add_argument("--lead", type=float, default=8.0, help="seconds from storing to due")
    parser.add_argument("--no-peer", action="store_true", help="skip APScheduler")
    parser.add_argument("--executors", type=int, default=1, help="executor processes")
    parser.add_argument("--moto", action="store_true", help="queues on a moto server started here")
    parser.add_argument(
        "--localstack", action="store_true", help="queues on LocalStack (.peers/) started here"
    )
    parser.add_argument(
        "--store-delay-ms",
        type=float,
        help="MongoDB store only: a proxy adds this to every command and counts the commands",
    )
    parser.add_argument(
        "--server-pid", type=int, help="the MongoDB server's process, to report its CPU"
    )
    parser.add_argument("--profile-dir", type=Path, help="py-spy flame graphs of each process")
    parser.add_argument("--log-dir", type=Path, default=ROOT / "bench" / "logs")
    args = parser.parse_args(argv)
    if args.store_delay_ms is not None and not (args.store_url or "").startswith("mongodb"):
        parser.error("--store-delay-ms: needs --store-url mongodb://…")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    if args.profile_dir:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
    rates = [float(rate) for rate in args.rates.split(",")]
    receiver = ReceiverProcess()
    runs: list[dict[str, Any]] = []
    commands: Counter[str] | None = None
    proxy = ExitStack()
    try:
        if args.store_delay_ms is not None:
            commands = Counter()
            args.store_url = proxy.enter_context(
                proxied(args.store_url, args.store_delay_ms, commands)
            )
        for rate in rates:
            count = max(1, int(rate * args.seconds))
            if args.moto or args.localstack:
                server = moto_server if args.moto else localstack_server
                with server(args.log_dir) as (url, process):
                    ours = run_ours(
                        receiver,
                        rate,
                        count,
                        args.lead,
                        args.store_url,
                        url,
                        args.log_dir,
                        args.profile_dir,
                        process.pid,
                        commands=commands,
                    )
                    peer_name = "moto_server" if args.moto else "LocalStack"
                    ours["backend"] = f"sqlite store + SQS queues on {peer_name}"
            else:
                ours = run_ours(
                    receiver,
                    rate,
                    count,
                    args.lead,
                    args.store_url,
                    args.queue_url,
                    args.log_dir,
                    args.profile_dir,
                    executors=args.executors,
                    commands=commands,
                    store_pid=args.server_pid,
                )
            run: dict[str, Any] = {"rate": rate, "count": count, "ours": ours}
            if not args.no_peer:
                peer = run_peer(receiver, rate, count, min(args.lead, 3.0), args.profile_dir)
                run["apscheduler"] = peer
                run["ratio_ours_to_apscheduler"] = {
                    "sustained": ratio(ours["sustained_per_second"], peer["sustained_per_second"]),
                    "lateness_p99": ratio(ours["lateness_ms"]["p99"], peer["lateness_ms"]["p99"]),
                    "rss_peak": ratio(ours["rss_mb"]["peak"], peer["rss_mb"]["peak"]),
                }
            runs.append(run)
            print(_row_text(run), flush=True)
    finally:
        receiver.stop()
        proxy.close()
    rows = []
    for run in runs:
        for who in ("ours", "apscheduler"):
            if who not in run:
                continue
            figures = run[who]
            rows.append(
                [
                    f"{run['rate']:g}/s x {run['count']:,}",
                    figures["backend"],
                    figures["sustained_per_second"],
                    figures["lateness_ms"]["p50"],
                    figures["lateness_ms"]["p95"],
                    figures["lateness_ms"]["p99"],
                    figures["lateness_ms"]["max"],
                    figures["errors"],
                    f"{figures['rss_mb']['at_start']:.0f} -> {figures['rss_mb']['peak']:.0f}",
                ]
            )
    print(
        table(
            [
                "offered",
                "system",
                "fires/s sustained",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
                "errors",
                "RSS MB at start -> peak",
            ],
            rows,
        )
    )
    result = {"runs": runs, "seconds": args.seconds, "lead": args.lead}
    report("firing", result, args.json)
    return result


def _row_text(run: dict[str, Any]) -> str:
    ours = run["ours"]
    text = (
        f"rate {run['rate']:g}/s n={run['count']}: ours {ours['sustained_per_second']:.0f}/s "
        f"p99 {ours['lateness_ms']['p99']:.1f} ms max {ours['lateness_ms']['max']:.1f} ms "
        f"errors {ours['errors']} rss {ours['rss_mb']['peak']:.0f} MB "
        f"cpu/fire {ours['cpu_us_per_fire']['executor']:.0f} us"
    )
    if ours["executors_started_late_seconds"] >= 0.1:
        text += f" (executors started {ours['executors_started_late_seconds']:.1f} s late)"
    if "store_commands" in ours:
        counted = ours["store_commands"]
        text += f" store commands/fire {counted['per_item']:.2f} {counted['by_command']}"
    shares = {
        name: seconds / ours["firing_window_seconds"]
        for name, seconds in ours["cpu_seconds"].items()
        if name != "executor"
    }
    text += "".join(f" {name} CPU {share:.0%}" for name, share in shares.items())
    text += " executor by thread (us/fire): " + ", ".join(
        f"{name} {us:.0f}" for name, us in ours["executor_cpu_us_per_fire_by_thread"].items()
    )
    if "apscheduler" in run:
        peer = run["apscheduler"]
        text += (
            f" | apscheduler {peer['sustained_per_second']:.0f}/s "
            f"p99 {peer['lateness_ms']['p99']:.1f} ms errors {peer['errors']} "
            f"cpu/fire {peer['cpu_us_per_fire']['apscheduler']:.0f} us"
        )
    return text


if __name__ == "__main__":
    main()
