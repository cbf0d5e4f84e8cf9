"""What the executor logs of each outcome: successes at DEBUG only, retries and failures above."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import Call, running_receiver
from tests.support.schedules import every_second_body


def _events(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [record for record in caplog.records if getattr(record, "event", None) == event]


def test_a_success_is_logged_at_debug_with_its_context(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        schedule_id = created.get_json()["id"]
        receiver.wait_for(2, timeout=6)
    succeeded = _events(caplog, "occurrence_succeeded")
    assert succeeded
    assert {record.levelno for record in succeeded} == {logging.DEBUG}
    context = vars(succeeded[0])
    assert context["schedule_id"] == schedule_id
    assert context["http_status"] == 200
    assert context["occurrence_id"].startswith(f"{schedule_id}:")


def test_retries_and_failures_are_logged_above_debug(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)

    def refuse(call: Call) -> tuple[int, dict[str, str]]:
        return 500, {}

    body = {
        **every_second_body(""),
        "retry": {"max_attempts": 2, "backoff_seconds": 0.05},
    }
    with (
        running_receiver(refuse) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        body["payload"] = {**body["payload"], "url": f"{receiver.url}/hooks/failing"}
        assert pipeline.client.post(f"{API}/schedule", json=body).status_code == 202
        receiver.wait_for(2, timeout=6)
        deadline = time.monotonic() + 6
        while not _events(caplog, "occurrence_failed") and time.monotonic() < deadline:
            time.sleep(0.05)
    assert {record.levelno for record in _events(caplog, "occurrence_retrying")} == {
        logging.WARNING
    }
    assert {record.levelno for record in _events(caplog, "occurrence_failed")} == {logging.ERROR}
    assert not _events(caplog, "occurrence_succeeded")
