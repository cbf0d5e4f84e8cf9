"""Log lines: one JSON object per event with its context, or readable text in dev."""

from __future__ import annotations

import json
import logging

from shared.logs import JsonFormatter, TextFormatter


def record(**extra: object) -> logging.LogRecord:
    entry = logging.LogRecord(
        "execution_worker", logging.INFO, __file__, 1, "occurrence %s", ("ok",), None
    )
    for key, value in extra.items():
        setattr(entry, key, value)
    return entry


def test_json_lines_carry_the_event_and_its_context() -> None:
    line = JsonFormatter().format(
        record(
            event="occurrence_succeeded",
            schedule_id="s1",
            occurrence_id="s1:2026-01-01T00:00:00.000Z",
            tenant="t",
        )
    )
    entry = json.loads(line)
    assert "\n" not in line
    assert entry["message"] == "occurrence ok"
    assert entry["level"] == "info"
    assert entry["event"] == "occurrence_succeeded"
    assert (entry["schedule_id"], entry["tenant"]) == ("s1", "t")
    assert entry["occurrence_id"] == "s1:2026-01-01T00:00:00.000Z"
    assert entry["time"].endswith("+00:00")


def test_text_lines_are_readable() -> None:
    line = TextFormatter().format(record(event="x", schedule_id="s1", http_status=None))
    assert "INFO" in line and "occurrence ok" in line and "schedule_id=s1" in line
    assert "http_status" not in line and "event" not in line
