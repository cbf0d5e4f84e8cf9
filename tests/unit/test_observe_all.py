"""``shared.metrics.observe_all``: a batch of values in a histogram, exposed exactly as the same
values observed one by one (what a scrape of ``/metrics`` shows)."""

from __future__ import annotations

import inspect

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from shared.metrics import DURATION_BUCKETS, observe_all

# On bucket bounds, between them, zero, past the last finite bound.
VALUES = [0.0, 0.0005, 0.0007, 0.001, 0.003, 0.25, 0.2500001, 9.99, 10.0, 12.5, 600.0] * 3


def exposition(observe: str) -> tuple[str, float]:
    """The exposition but the sum, and the sum (added in another order: equal to rounding)."""
    registry = CollectorRegistry()
    histogram = Histogram(
        "scheduler_webhook_duration_seconds", "d", buckets=DURATION_BUCKETS, registry=registry
    )
    if observe == "one by one":
        for value in VALUES:
            histogram.observe(value)
    else:
        observe_all(histogram, VALUES[:7])
        observe_all(histogram, [])
        observe_all(histogram, VALUES[7:])
    lines = generate_latest(registry).decode().splitlines()
    [total] = [line for line in lines if line.startswith("scheduler_webhook_duration_seconds_sum")]
    kept = "\n".join(line for line in lines if "_created" not in line and line != total)
    return kept, float(total.split()[-1])


def test_a_batch_is_exposed_as_the_values_one_by_one() -> None:
    batched, batched_sum = exposition("in batches")
    one_by_one, one_by_one_sum = exposition("one by one")
    assert batched == one_by_one
    assert batched_sum == pytest.approx(one_by_one_sum) == pytest.approx(sum(VALUES))
    assert 'scheduler_webhook_duration_seconds_bucket{le="0.001"} 12.0' in batched
    assert 'scheduler_webhook_duration_seconds_bucket{le="+Inf"} 33.0' in batched
    assert "scheduler_webhook_duration_seconds_count 33.0" in batched


def test_the_private_attributes_observe_all_uses_are_there_and_used_by_observe() -> None:
    """``observe_all`` writes where ``Histogram.observe`` does, through prometheus_client's
    private attributes (see its docstring): should a release rename them or stop using them,
    this says which, rather than the executor failing at its first settled batch or its
    histograms missing what ``observe`` now keeps elsewhere."""
    histogram = Histogram("guarded_seconds", "d", buckets=DURATION_BUCKETS, registry=None)
    assert list(histogram._upper_bounds) == [*DURATION_BUCKETS, float("inf")]
    assert len(histogram._buckets) == len(histogram._upper_bounds)
    for value in (histogram._sum, *histogram._buckets):
        assert callable(value.inc) and callable(value.get)
    observe = inspect.getsource(Histogram.observe)
    for used in ("self._sum.inc(amount)", "self._upper_bounds", "self._buckets[i].inc(1)"):
        assert used in observe, f"Histogram.observe no longer uses {used}: check observe_all"
