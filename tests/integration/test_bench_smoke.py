"""Every benchmark runs, at a trivial size, so that ``bench/`` cannot rot.

No figure is asserted (timings on a shared machine prove nothing): only that each benchmark
completes and counts what it did without errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import creation, dispatch, firing, storage

pytestmark = pytest.mark.slow


def test_firing_with_the_peer(tmp_path: Path) -> None:
    result = firing.main(
        [
            "--rates",
            "40",
            "--seconds",
            "0.5",
            "--lead",
            "2.5",
            "--log-dir",
            str(tmp_path),
            "--json",
            str(tmp_path / "firing.json"),
        ]
    )
    [run] = result["runs"]
    for system in ("ours", "apscheduler"):
        figures = run[system]
        assert figures["fired"] == figures["expected"] == 20, figures
        assert figures["errors"] == 0, figures
    assert (tmp_path / "firing.json").exists()


def test_creation(tmp_path: Path) -> None:
    result = creation.main(
        ["--count", "40", "--warmup", "10", "--connections", "4", "--log-dir", str(tmp_path)]
    )
    assert result["errors"] == 0, result
    assert result["stored"] == 40


def test_dispatch() -> None:
    result = dispatch.main(["--due", "300", "--sizes", "1000", "--rounds", "2"])
    assert result["enqueue"]["sent"] == 300
    [cost] = result["claim_cost"]
    assert cost["claimed_per_round"] == 200
    assert "schedules_due" in cost["query_plan"]


def test_storage() -> None:
    result = storage.main(["--count", "30"])
    for record in ("schedule", "execution", "queued_occurrence"):
        assert result["bytes"][record]["total"] > 0
