"""A worker's counts (``shared.counts.Counts``): the number its tests read and the Prometheus
series an operator reads move together, and a labelled series shows only once counted."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, generate_latest

from shared.counts import Counts


def scraped(registry: CollectorRegistry) -> list[str]:
    """The sample lines of a scrape of ``registry`` (but the ``_created`` timestamps)."""
    text = generate_latest(registry).decode()
    return [
        line
        for line in text.splitlines()
        if line and not line.startswith("#") and "_created" not in line
    ]


def test_a_count_moves_its_series_and_a_labelled_one_shows_at_its_first_count() -> None:
    registry = CollectorRegistry()
    results = Counter("things_total", "Things, by result.", ["result"], registry=registry)
    plain = Counter("plain_total", "Plain things.", registry=registry)
    stats = Counts({"kept": [(results, "kept"), plain], "lost": [(results, "lost")], "seen": []})

    assert scraped(registry) == ["plain_total 0.0"]
    stats.add("kept", 3)
    stats.add("kept")
    stats.add("lost", 0)
    stats.add("seen", 2)

    assert (stats.kept, stats.lost, stats.seen) == (4, 0, 2)
    assert scraped(registry) == [
        'things_total{result="kept"} 4.0',
        "plain_total 4.0",
    ]
    assert repr(stats) == "Counts(kept=4, lost=0, seen=2)"


def test_only_the_declared_counts_exist() -> None:
    stats = Counts({"kept": []})
    with pytest.raises(KeyError):
        stats.add("kpet")
    with pytest.raises(AttributeError):
        _ = stats.kpet
