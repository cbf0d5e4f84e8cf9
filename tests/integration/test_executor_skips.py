"""After a delete, the occurrences already dispatched are skipped quietly, and recorded."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from shared.model import ExecutionStatus
from tests.integration.test_pipeline_embedded import every_second_body
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver


def test_occurrences_of_a_deleted_schedule_are_skipped_without_a_log_line_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        schedule_id = created.get_json()["id"]
        receiver.wait_for(2, timeout=6)
        assert pipeline.client.delete(f"{API}/schedule/{schedule_id}").status_code == 202
        time.sleep(2.5)  # occurrences dispatched before the delete fall due meanwhile
        records = pipeline.backends.store.list_executions("default", schedule_id, 100, None)
    skipped = [r for r in records.items if r.status is ExecutionStatus.SKIPPED]
    assert len(skipped) >= 2
    assert all(r.error == "schedule deleted" for r in skipped)
    assert not [r for r in caplog.records if "schedule deleted" in r.getMessage()]
