"""What a worker counts (its ``stats``), said once for the three workers: each worker declares
its counts as data, a name with the Prometheus series the count moves, and reports to one
``Counts``, which keeps the number and moves the series together.

Tests and benchmarks read a count by its name (``processor.stats.poisoned``); ``/metrics`` shows
the series as before: a labelled series appears at its first count, as
``counter.labels(value).inc()`` made it appear where the count was made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from prometheus_client import Counter

Series = Counter | tuple[Counter, str]
"""A series a count moves: a counter without labels (or a label's child made already), or a
counter with one label and the label's value, whose child is made at the first count."""


class Counts:
    """A worker's counts by the names ``declared`` gives, each with the series it moves; a
    count is read as an attribute (``stats.sent``) and added to with ``add``. One thread adds
    (each worker's loop)."""

    def __init__(self, declared: Mapping[str, Sequence[Series]]) -> None:
        self._counts = dict.fromkeys(declared, 0)
        self._series = {name: list(series) for name, series in declared.items()}

    def add(self, name: str, count: int = 1) -> None:
        """``count`` more of ``name`` (a name not declared is a ``KeyError``), and its series
        moved by as many; nothing moves for none."""
        if not count:
            return
        self._counts[name] += count
        series = self._series[name]
        for index, moved in enumerate(series):
            if isinstance(moved, tuple):
                counter, value = moved
                moved = series[index] = counter.labels(value)
            moved.inc(count)

    def __getattr__(self, name: str) -> int:
        # Called for a name not found otherwise: a count's (never a private one, so a
        # ``Counts`` not yet initialised, as ``copy`` makes one, does not look itself up).
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._counts[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={count}" for name, count in self._counts.items())
        return f"Counts({counts})"
