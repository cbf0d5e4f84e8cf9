"""CPU per fire of the executor observer's three histograms (webhook duration, lateness,
processing): ``shared.metrics.observe_all`` per settled batch against prometheus_client's public
``Histogram.observe`` per value, alternating, the median of ``--rounds`` rounds of ``--fires``
fires, for settled batches of 1, 10 and 50. Process CPU time, which other work on the machine
does not inflate much.

    .venv/bin/python -m bench.histograms [--rounds 7] [--fires 60000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Histogram

from shared.metrics import DURATION_BUCKETS, LATENESS_BUCKETS, observe_all

BATCHES = (1, 10, 50)


def one_by_one(histogram: Histogram, values: Sequence[float]) -> None:
    for value in values:
        histogram.observe(value)


def microseconds_per_fire(
    observe: Callable[[Histogram, Sequence[float]], None], batch: int, fires: int
) -> float:
    registry = CollectorRegistry()
    histograms = [
        Histogram(f"bench_{number}_seconds", "d", buckets=buckets, registry=registry)
        for number, buckets in enumerate((DURATION_BUCKETS, LATENESS_BUCKETS, DURATION_BUCKETS))
    ]
    rng = random.Random(batch)
    values = [[rng.uniform(0.0, 0.2) for _ in range(batch)] for _ in histograms]
    started = time.process_time()
    for _ in range(fires // batch):
        for histogram, batch_values in zip(histograms, values, strict=True):
            observe(histogram, batch_values)
    return (time.process_time() - started) / fires * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--fires", type=int, default=60_000)
    args = parser.parse_args()
    for batch in BATCHES:
        batched: list[float] = []
        public: list[float] = []
        for _ in range(args.rounds):
            batched.append(microseconds_per_fire(observe_all, batch, args.fires))
            public.append(microseconds_per_fire(one_by_one, batch, args.fires))
        print(
            f"batches of {batch:2d}: observe_all {statistics.median(batched):.2f} us/fire, "
            f"Histogram.observe per value {statistics.median(public):.2f} us/fire"
        )


if __name__ == "__main__":
    main()
