"""The metrics an operator watches move when a schedule fires."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.adapters.sqlite_queue import SqliteQueue
from shared.logs import JsonFormatter
from shared.metrics import BackendCollector
from shared.model import Every, Payload, ScheduleDefinition, Timing, Unit
from shared.ports import Queues, QueueSpec
from tests.support.harness import API, TEST_SECRETS, Pipeline, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver


def scrape(pipeline: Pipeline) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = pipeline.client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_firing_moves_the_lateness_histogram_and_the_outcome_counters(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, schedule_counts_seconds=0)
    with running_receiver() as receiver, running_pipeline(settings) as pipeline:
        before = scrape(pipeline)
        body = {
            "schedule": {"cron": "@every 1s"},
            "payload": {"method": "POST", "url": f"{receiver.url}/m"},
        }
        assert pipeline.client.post(f"{API}/schedule", json=body).status_code == 202
        receiver.wait_for(2, timeout=5)
        deadline = time.monotonic() + 3
        after = scrape(pipeline)

        def moved(name: str, **labels: str) -> float:
            key = (name, tuple(sorted(labels.items())))
            return after.get(key, 0.0) - before.get(key, 0.0)

        # The second call has arrived; its outcome is recorded a moment later.
        while moved("scheduler_executions_total", outcome="succeeded") < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
            after = scrape(pipeline)

    assert moved("scheduler_fire_lateness_seconds_count") >= 2
    # Fired on time: every one of them within a quarter of a second.
    assert moved("scheduler_fire_lateness_seconds_bucket", le="0.25") >= 2
    assert moved("scheduler_executions_total", outcome="succeeded") >= 2
    assert moved("scheduler_webhook_responses_total", status_class="2xx") >= 2
    assert moved("scheduler_poller_occurrences_sent_total") >= 2
    assert moved("scheduler_processor_mutations_total", result="applied") == 1
    assert after[("scheduler_schedules", (("status", "active"),))] == 1
    assert ("scheduler_queue_messages", (("queue", "occurrences"), ("state", "delayed"))) in after


def test_secret_header_values_never_reach_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "Bearer sk_live_TOPSECRET"
    with (
        running_receiver(lambda call: (500, {})) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        body = {
            "schedule": {"cron": "@every 1s"},
            "payload": {
                "method": "POST",
                "url": f"{receiver.url}/s",
                "headers": {"Authorization": secret, "X-Api-Key": "TOPSECRET-2"},
            },
            "retry": {"max_attempts": 2, "backoff_seconds": 0.05},
        }
        created = pipeline.client.post(f"{API}/schedule", json=body)
        schedule_id = created.get_json()["id"]
        calls = receiver.wait_for(3, timeout=6)
        assert calls[0].headers["authorization"] == secret
        shown = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
        assert "TOPSECRET" not in json.dumps(shown)
    assert caplog.records
    for entry in caplog.records:
        assert "TOPSECRET" not in JsonFormatter().format(entry)


def test_the_schedules_gauge_counts_the_store_at_most_once_per_max_age(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "store.db")
    counted = []

    class CountingStore(SqliteStore):
        def count_schedules(self) -> Mapping[str, int]:
            counted.append(1)
            return super().count_schedules()

    store = CountingStore(database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    queues = Queues(*(SqliteQueue(database, QueueSpec(name)) for name in ("q1", "q2", "dl")))
    for queue in (queues.mutations, queues.occurrences, queues.dead_letters):
        queue.create()
    now = [100.0]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BackendCollector(store, queues, 30.0, monotonic=lambda: now[0]))

    def active() -> float | None:
        return registry.get_sample_value("scheduler_schedules", {"status": "active"})

    assert active() == 0
    definition = ScheduleDefinition(
        Timing("UTC", interval=Every(1, Unit.DAY)), Payload("GET", "https://example.com/")
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    store.apply_definition(("default", "daily", 1, definition, at, at))
    now[0] += 29
    assert active() == 0  # the counts of the last scrape, not a new scan
    now[0] += 1
    assert active() == 1
    assert len(counted) == 2
    database.close()
