"""Every benchmark runs, at a trivial size, so that ``bench/`` cannot rot.

No figure is asserted (timings on a shared machine prove nothing): only that each benchmark
completes and counts what it did without errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import (
    api_requests,
    bodies,
    bulk,
    console,
    costly_rules,
    creation,
    delivery_cpu,
    dispatch,
    firing,
    histograms,
    priority,
    slow_clients,
    storage,
    store_cut,
    store_rounds,
)
from tests.support.peers import Peer

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


def test_firing_counts_the_store_commands_through_the_delaying_proxy(
    tmp_path: Path, nx_27017: Peer
) -> None:
    result = firing.main(
        [
            "--store-url",
            nx_27017.url,
            "--store-delay-ms",
            "1",
            "--server-pid",
            str(nx_27017.process.pid),
            "--no-peer",
            "--rates",
            "40",
            "--seconds",
            "0.5",
            "--lead",
            "3",
            "--log-dir",
            str(tmp_path),
        ]
    )
    [run] = result["runs"]
    figures = run["ours"]
    assert figures["fired"] == figures["expected"] == 20, figures
    assert figures["errors"] == 0, figures
    counted = figures["store_commands"]
    # The poller's claim and the executor's records went through the proxy, the seeding did not.
    assert {"find", "update", "insert"} <= counted["by_command"].keys(), counted
    assert counted["handshakes"] > 0, counted
    assert counted["total"] > 0, counted
    assert counted["per_item"] == pytest.approx(counted["total"] / 20), counted
    assert figures["cpu_seconds"]["store_server"] > 0, figures


def test_creation(tmp_path: Path) -> None:
    result = creation.main(
        ["--count", "40", "--warmup", "10", "--connections", "4", "--log-dir", str(tmp_path)]
    )
    assert result["errors"] == 0, result
    assert result["stored"] == 40


def test_creation_counts_the_store_commands_through_the_delaying_proxy(
    tmp_path: Path, nx_27017: Peer
) -> None:
    result = creation.main(
        [
            "--store-url",
            nx_27017.url,
            "--store-delay-ms",
            "1",
            "--count",
            "30",
            "--warmup",
            "5",
            "--connections",
            "4",
            "--log-dir",
            str(tmp_path),
        ]
    )
    assert result["errors"] == 0, result
    assert result["stored"] == 30
    counted = result["store_commands"]
    # The processor stores each batch it receives with one insert (new schedules need no
    # guarded upsert): at most one command per create, fewer when creates arrive together; the
    # warm-up's 5 are not counted. The API reserves each create's slot of the tenant's quota
    # with one guarded update (the tenant is far from its quota).
    assert 1 <= counted["by_command"]["insert"] <= 30, counted
    assert counted["by_command"]["update"] == 30, counted
    assert counted["per_item"] == pytest.approx(counted["total"] / 30), counted


def test_store_rounds_counts_and_claims_with_two_pollers(nx_27017: Peer) -> None:
    counted = store_rounds.count_commands(nx_27017.url, 6, 3)
    assert counted["succeeded"] == counted["claimed"] == 6, counted
    # The pollers are processes of their own: they open what the seeding sealed.
    rate = store_rounds.claim_rate(nx_27017.url, 20, 10, 2, None)
    assert rate["claimed"] == 20, rate
    assert rate["left_unclaimed"] == 0, rate


def test_delivery_cpu() -> None:
    figures = delivery_cpu.main(["--rounds", "2", "--deliveries", "50"])
    assert figures["succeeded"] == 100 and 0 < figures["best_us"] <= figures["median_us"]


def test_priority(tmp_path: Path) -> None:
    figures = priority.main(["--count", "60", "--urgent", "6", "--log-dir", str(tmp_path)])
    assert figures["missing"] == figures["duplicates"] == 0, figures
    assert 6 <= figures["last_priority_9_call"] <= 60


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


def test_console_pages(nx_27017: Peer) -> None:
    small = ["--schedules", "30", "--runs", "5", "--dead-letters", "3", "--repeat", "1"]
    result = console.main(["--store-url", nx_27017.url, *small])
    pages = result["pages"]
    assert set(pages) == set(console.PAGES)
    assert all(page["store_commands"] <= 3 for page in pages.values()), pages


def test_api_requests() -> None:
    result = api_requests.main(["--requests", "3", "--rounds", "1"])
    figures = result["cpu_us_per_request"]
    assert set(figures) == {
        "create (one-time)",
        "replace (cron)",
        "get",
        "list (50)",
        "history",
        "patch",
        "preview",
        "invalid create (400)",
    }
    assert all(value > 0 for value in figures.values()), figures


def test_bodies() -> None:
    result = bodies.main(["--sizes", "4096", "--repeat", "1"])
    statuses = {(item["shape"], item["in"]): item["status"] for item in result["results"]}
    assert statuses[("escaped quotes, unclosed", "body")] == 400
    assert statuses[("empty arrays", "payload.body")] == 202


def test_costly_rules() -> None:
    result = costly_rules.main(["--reads", "1"])
    answers = {item["case"]: item["status"] for item in result["cases"]}
    assert answers["list of 45 costly schedules"] == 200
    assert answers["FREQ=DAILY;BYEASTER=365"] == 400
    assert not any(item["killed"] for item in result["cases"])


def test_slow_clients() -> None:
    result = slow_clients.main(
        [
            *["--target", "dev", "--half-sent", "20", "--hold", "1", "--settle", "0.5"],
            *["--trickle", "2", "--trickle-interval", "0.5", "--trickle-seconds", "1"],
            *["--bound", "5", "--busy", "1", "--busy-seconds", "1"],
        ]
    )
    assert result["held"]["connections"] == 20
    assert result["beyond_bound"]["next_request"] == 503
    assert result["busy"]["costly_requests_answered"] >= 1


def test_store_cut(tmp_path: Path, nx_27017: Peer, localstack: Peer) -> None:
    result = store_cut.main(
        [
            "--store-url",
            nx_27017.url,
            "--queue-url",
            f"sqs+{localstack.url}?region=us-east-1",
            "--count",
            "10",
            "--spread",
            "1",
            "--lead",
            "6",
            "--cut-seconds",
            "1",
            "--log-dir",
            str(tmp_path),
        ]
    )
    [run] = result["runs"]
    assert run["fired"] == run["expected"] == 10, run
    assert run["missing"] == run["doubled"] == 0, run


def test_bulk_operations(nx_27017: Peer) -> None:
    small = ["--schedules", "30", "--others", "5", "--single", "5"]
    result = bulk.main(["--store-url", nx_27017.url, *small])
    steps = {step["step"]: step for step in result["steps"]}
    assert steps["dry run"]["outcome"] == 30
    for name in ("pause", "resume", "patch", "delete"):
        assert steps[name]["outcome"]["changed"] == 30, steps[name]
    # One listing, one bulk write and one insert of the change history a page; one request
    # each costs 4 commands a schedule (3, and its change's insert).
    assert steps["pause"]["store_commands"] <= 4, steps["pause"]
    assert result["single_pause"]["store_commands_per_schedule"] == 4


def test_histograms_times_both_ways_of_observing() -> None:
    for observe in (histograms.observe_all, histograms.one_by_one):
        assert histograms.microseconds_per_fire(observe, 10, 200) >= 0.0
