"""Run every benchmark, one after the other, each writing its figures to ``--out``.

    python -m bench.run_all                       # SQLite, the figures in BENCHMARKS.md
    python -m bench.run_all --store-url mongodb://127.0.0.1:27017
    python -m bench.run_all --quick               # every benchmark at a small size

Runs: firing (100, 500, 1,000, 2,000 per second, APScheduler 3 side by side), firing once more
with the queues on moto's server (unless ``--no-moto`` or a queue URL is given), creation,
dispatch, storage, request bodies, console pages, costly rules, what each kind of API
request costs, and bulk operations over 100,000 schedules.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import (
    api_requests,
    bodies,
    bulk,
    console,
    costly_rules,
    creation,
    dispatch,
    firing,
    storage,
)
from bench.common import ROOT, machine_line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store-url", help="mongodb://… (default: SQLite)")
    parser.add_argument("--queue-url", help="sqs+http://… (default: SQLite)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a quick look")
    parser.add_argument("--no-moto", action="store_true", help="skip the run on moto's server")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    backends: list[str] = []
    if args.store_url:
        backends += ["--store-url", args.store_url]
    if args.queue_url:
        backends += ["--queue-url", args.queue_url]
    print(machine_line(), flush=True)

    def out(name: str) -> list[str]:
        return ["--json", str(args.out / f"{name}.json")]

    quick = args.quick
    firing.main(
        [*backends, *out("firing")] + (["--rates", "100,500", "--seconds", "3"] if quick else [])
    )
    if not args.no_moto and not args.queue_url:
        firing.main(
            [
                *backends,
                *out("firing-moto"),
                *["--moto", "--no-peer", "--rates", "20" if quick else "20,100"],
            ]
        )
    creation.main([*backends, *out("creation")] + (["--count", "2000"] if quick else []))
    dispatch.main(
        [*backends, *out("dispatch")]
        + (["--due", "2000", "--sizes", "10000,100000", "--rounds", "5"] if quick else [])
    )
    storage.main([*backends, *out("storage")] + (["--count", "2000"] if quick else []))
    bodies.main([*out("bodies")] + (["--sizes", "20480,262144", "--repeat", "1"] if quick else []))
    console.main([*backends, *out("console")] + (["--repeat", "3"] if quick else []))
    costly_rules.main([*out("costly_rules")] + (["--reads", "1"] if quick else []))
    api_requests.main(
        [*out("api_requests")] + (["--requests", "50", "--rounds", "2"] if quick else [])
    )
    bulk.main([*backends, *out("bulk")] + (["--schedules", "5000"] if quick else []))


if __name__ == "__main__":
    main()
