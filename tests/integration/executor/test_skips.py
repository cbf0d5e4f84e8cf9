"""Occurrences the poller sent ahead of their time and that a change, pause or delete superseded:
not runs. Counted (on the schedule and by a metric), listed only with ``?status=skipped``, and
logged once per change, not once per occurrence."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from tests.support.harness import API, Pipeline, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver
from tests.support.schedules import every_second_body


def listed(pipeline: Pipeline, schedule_id: str, status: str | None = None) -> list[Any]:
    query = f"&status={status}" if status else ""
    items: list[Any] = []
    cursor = ""
    while True:
        page = pipeline.client.get(
            f"{API}/schedule/{schedule_id}/executions?limit=200{query}{cursor}"
        ).get_json()
        items += page["items"]
        if not page["next_cursor"]:
            return items
        cursor = f"&cursor={page['next_cursor']}"


def superseded_total(cause: str) -> float:
    value = REGISTRY.get_sample_value("scheduler_occurrences_superseded_total", {"cause": cause})
    return value or 0.0


def test_a_patch_and_a_pause_leave_runs_in_the_history_and_one_log_line_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    before = {cause: superseded_total(cause) for cause in ("changed", "paused")}
    # Occurrences go out up to 10 s ahead (the harness's look-ahead): each change supersedes some.
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        schedule_id = created.get_json()["id"]
        receiver.wait_for(2, timeout=6)
        # Sent to the executors up to the look-ahead early: more than have run, and said so.
        before_patch = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
        assert before_patch["occurrences_sent"] > before_patch["runs"] + 2
        patched = pipeline.client.patch(
            f"{API}/schedule/{schedule_id}",
            json={"payload": {"body": {"task": "ping", "n": 2}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert patched.status_code == 202
        time.sleep(3)  # occurrences of the first revision fall due meanwhile
        assert pipeline.client.post(f"{API}/schedule/{schedule_id}/pause").status_code == 202
        time.sleep(3)
        runs = listed(pipeline, schedule_id)
        skipped = listed(pipeline, schedule_id, "skipped")
        schedule = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
        calls = len(receiver.calls)

    # The history is the runs: each one the receiver got, nothing else.
    assert runs and {run["status"] for run in runs} == {"succeeded"}
    assert len(runs) == calls
    assert not any(run["superseded"] for run in runs)
    # The superseded, on request: of the patch, then of the pause, never called.
    assert all(item["superseded"] and item["attempts"] == 0 for item in skipped)
    reasons = [item["error"] for item in skipped]
    changed = [reason for reason in reasons if reason.startswith("schedule changed (revision")]
    paused = [reason for reason in reasons if reason == "schedule paused"]
    assert len(changed) >= 2 and len(paused) >= 2
    assert len(changed) + len(paused) == len(skipped)
    # Counted on the schedule and by the metric.
    assert schedule["superseded"] == len(skipped)
    assert superseded_total("changed") - before["changed"] == len(changed)
    assert superseded_total("paused") - before["paused"] == len(paused)
    # One line per change.
    lines = [r for r in caplog.records if getattr(r, "event", None) == "occurrences_superseded"]
    assert [getattr(line, "reason", None) for line in lines] == [changed[0], "schedule paused"]
    assert not [r for r in caplog.records if getattr(r, "event", None) == "occurrence_skipped"]


def test_occurrences_of_a_deleted_schedule_are_superseded_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        schedule_id = created.get_json()["id"]
        receiver.wait_for(2, timeout=6)
        assert pipeline.client.delete(f"{API}/schedule/{schedule_id}").status_code == 202
        time.sleep(2.5)  # occurrences dispatched before the delete fall due meanwhile
        skipped = listed(pipeline, schedule_id, "skipped")
        runs = listed(pipeline, schedule_id)
    assert len(skipped) >= 2
    assert all(item["error"] == "schedule deleted" and item["superseded"] for item in skipped)
    assert runs and all(run["attempts"] >= 1 for run in runs)
    lines = [r for r in caplog.records if getattr(r, "event", None) == "occurrences_superseded"]
    assert len(lines) == 1 and schedule_id in lines[0].getMessage()
