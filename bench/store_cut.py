"""A store outage: MongoDB cut off for a while as occurrences fall due, and what it costs.

Four ``scheduler`` processes (api, processor, poller, executor, default settings unless told)
reach MongoDB through a proxy that can cut it off (``tests/support/cutting_proxy.py``: every
connection reset, new ones refused, then listening again), the queues on SQS. Once they have
started, ``--count`` one-time schedules are stored, falling due over ``--spread`` seconds from
``--lead`` seconds later; ``--cut-after`` seconds after the first is due the store is cut off
for ``--cut-seconds``. The receiver (``bench.receiver``, its own process) records each arrival
by its own clock.

Reported: lateness (arrival - scheduled) p50/p95/p99/max over all occurrences; from the restore
to the first arrival after it, and to the last arrival of those due before the restore; the
first arrivals in each second from the restore (without a cut, from the first time due); missing
and doubled occurrences (by ``Idempotency-Key``).

    python -m bench.store_cut                        # nx-27017 and LocalStack from .peers/
    python -m bench.store_cut --store-url mongodb://127.0.0.1:27017 --queue-url sqs+http://…
    python -m bench.store_cut --no-cut               # the same run without the outage

Loopback only. Without URLs it starts nx-27017 and LocalStack from ``.peers/``
(``scripts/peers install``) in a temporary directory, as the tests do.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.common import (
    ROOT,
    Component,
    backend,
    common_arguments,
    free_port,
    report,
    summary,
    table,
)
from bench.receiver import Arrival, ReceiverProcess
from bench.seed import one_time_rows, seed, spaced
from shared.backends import open_backends
from shared.timeutil import iso_z, parse_iso
from tests.support.cutting_proxy import CuttingProxy

COMPONENTS = ("api", "processor", "poller", "executor")


def cut_figures(
    arrivals: list[Arrival], expected: set[str], restored: float | None
) -> dict[str, Any]:
    """Figures of one run from the receiver's record; ``restored``: when the store came back
    (epoch seconds), ``None`` without a cut."""
    first: dict[str, tuple[float, float]] = {}
    doubled = 0
    for arrived, scheduled, key in arrivals:
        if key not in expected:
            continue
        if key in first:
            doubled += 1
            continue
        first[key] = (arrived, parse_iso(scheduled).timestamp())
    lateness = [(arrived - due) * 1000.0 for arrived, due in first.values()]
    figures: dict[str, Any] = {
        "expected": len(expected),
        "fired": len(first),
        "missing": len(expected) - len(first),
        "doubled": doubled,
        "lateness_ms": summary(lateness),
    }
    if restored is not None:
        after = [arrived for arrived, _ in first.values() if arrived >= restored]
        waited = [arrived for arrived, due in first.values() if due < restored <= arrived]
        figures["restore_to_first_fire_s"] = min(after) - restored if after else None
        figures["restore_to_last_overdue_fire_s"] = max(waited) - restored if waited else None
        figures["fired_after_restore"] = len(after)
    # How fast the backlog went: first fires in each second from the restore (without a cut,
    # from the first time due), the first 30 seconds.
    since = restored if restored is not None else min((due for _, due in first.values()), default=0)
    per_second = [0] * 30
    for arrived, _ in first.values():
        second = int(arrived - since)
        if 0 <= second < len(per_second):
            per_second[second] += 1
    figures["fires_per_second"] = per_second
    return figures


@contextmanager
def wire_peers(directory: Path) -> Iterator[tuple[str, str]]:
    """nx-27017 and LocalStack from ``.peers/``, as the tests start them: (store, queue URL)."""
    from tests.support.peers import start_localstack, start_nx_27017

    (directory / "nx-27017").mkdir()
    (directory / "localstack").mkdir()
    mongo = start_nx_27017(directory / "nx-27017")
    try:
        sqs = start_localstack(directory / "localstack")
        try:
            yield mongo.url, "sqs+" + sqs.url + "?region=us-east-1"
        finally:
            sqs.stop()
    finally:
        mongo.stop()


def wait_until_started(components: list[Component], timeout: float = 120.0) -> None:
    """Until each process logged that it started (under load that takes a while): the cut must
    not land on their start."""
    deadline = time.monotonic() + timeout
    for component in components:
        word = "Listening at" if component.command == "api" else f"{component.command} started"
        while word not in component.log_path.read_text(errors="replace"):
            if component.popen.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{component.command} did not start:\n{component.output_tail()}")
            time.sleep(0.1)


def run(
    store_url: str,
    queue_url: str,
    args: argparse.Namespace,
    log_dir: Path,
    receiver: ReceiverProcess,
) -> dict[str, Any]:
    """One run: seed, start the four processes, cut and restore, count what arrived."""
    receiver.reset()
    target = urlsplit(store_url)
    with (
        CuttingProxy((target.hostname or "127.0.0.1", target.port or 27017)) as proxy,
        backend(store_url, queue_url) as where,
    ):
        settings = where.settings()
        backends = open_backends(settings)
        components: list[Component] = []
        restored: float | None = None
        try:
            env = {
                **where.settings_env(**args.settings),
                "SCHEDULER_STORE_URL": proxy.url_for(store_url),
                "SCHEDULER_API_AUTH": "none",
                "SCHEDULER_PORT": str(args.api_port),
                "SCHEDULER_API_WORKERS": "1",
            }
            components = [Component(name, env, log_dir) for name in COMPONENTS]
            wait_until_started(components)
            accepted = datetime.now(UTC)
            start = accepted + timedelta(seconds=args.lead)
            per_second = args.count / args.spread
            rows = list(
                one_time_rows(f"{receiver.url}/hook", spaced(start, args.count, per_second), "cut")
            )
            seed(backends.store, rows, accepted)
            expected = {f"{schedule_id}:{iso_z(at)}" for schedule_id, _, at in rows}
            time.sleep(max(0.0, start.timestamp() + args.cut_after - time.time()))
            if args.cut_seconds > 0:
                proxy.cut()
                time.sleep(args.cut_seconds)
                proxy.restore()
                restored = time.time()
            receiver.wait_for(args.count, time.time() + args.wait)
            time.sleep(1.0)  # late duplicates, if any
        finally:
            for component in components:
                component.stop()
            backends.close()
    figures = cut_figures(receiver.dump(), expected, restored)
    figures["backend"] = where.label
    return figures


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_arguments(parser)
    parser.add_argument("--count", type=int, default=1000, help="one-time schedules")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds they fall due over")
    parser.add_argument("--lead", type=float, default=5.0, help="seconds from seeding to due")
    parser.add_argument("--cut-after", type=float, default=1.0, help="seconds after the first")
    parser.add_argument("--cut-seconds", type=float, default=15.0, help="how long it lasts")
    parser.add_argument("--no-cut", action="store_true", help="the same run without the cut")
    parser.add_argument("--runs", type=int, default=1, help="runs, one after the other")
    parser.add_argument("--wait", type=float, default=90.0, help="longest wait after restoring")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of the processes, e.g. lookahead_seconds=2 (SCHEDULER_LOOKAHEAD_SECONDS)",
    )
    parser.add_argument("--log-dir", type=Path, default=ROOT / "bench" / "logs")
    args = parser.parse_args(argv)
    if args.no_cut:
        args.cut_seconds = 0.0
    args.settings = dict(item.split("=", 1) for item in args.set)
    if bool(args.store_url) != bool(args.queue_url):
        parser.error("--store-url and --queue-url go together (or neither: peers from .peers/)")
    if args.store_url and not args.store_url.startswith("mongodb"):
        parser.error("--store-url: a mongodb:// URL")
    args.log_dir.mkdir(parents=True, exist_ok=True)
    args.api_port = free_port()
    receiver = ReceiverProcess()
    runs: list[dict[str, Any]] = []
    with ExitStack() as stack:
        stack.callback(receiver.stop)
        if args.store_url:
            store_url, queue_url = args.store_url, args.queue_url
        else:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cut-")))
            store_url, queue_url = stack.enter_context(wire_peers(directory))
        for _ in range(args.runs):
            figures = run(store_url, queue_url, args, args.log_dir, receiver)
            runs.append(figures)
            print(figures, flush=True)
    rows = [
        [
            f"{args.count:,} over {args.spread:g} s, cut {args.cut_seconds:g} s",
            figures["lateness_ms"]["p50"],
            figures["lateness_ms"]["p99"],
            figures["lateness_ms"]["max"],
            figures.get("restore_to_first_fire_s", "-"),
            figures.get("restore_to_last_overdue_fire_s", "-"),
            figures["missing"],
            figures["doubled"],
        ]
        for figures in runs
    ]
    print(
        table(
            [
                "run",
                "p50 ms",
                "p99 ms",
                "max ms",
                "restore → first fire s",
                "restore → last overdue fire s",
                "lost",
                "doubled",
            ],
            rows,
        )
    )
    result = {
        "runs": runs,
        "count": args.count,
        "spread_seconds": args.spread,
        "cut_after_seconds": args.cut_after,
        "cut_seconds": args.cut_seconds,
        "settings": args.settings,
    }
    report("store_cut", result, args.json)
    return result


if __name__ == "__main__":
    main()
