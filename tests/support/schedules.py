"""Schedules as tests send them through the API of a running pipeline
(``tests.support.harness``), and what they read back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shared.timeutil import iso_z
from tests.support.harness import API, Pipeline

# Retries a test can wait out: five attempts within a second.
QUICK_RETRY = {"max_attempts": 5, "backoff_seconds": 0.05, "max_backoff_seconds": 0.2}
# A call may arrive this much after its scheduled time (the bar).
ON_TIME_SECONDS = 0.25


def at_in(seconds: float) -> str:
    """The instant ``seconds`` from now, as a body writes it."""
    return iso_z(datetime.now(UTC) + timedelta(seconds=seconds))


def hourly_cron_away_from_now() -> tuple[str, int]:
    """An hourly cron (``"M * * * *"``) and its minute M, half an hour from now's minute: none
    of its times comes in the next 29 minutes, so a test that runs minutes sees only the
    occurrences it triggers or backfills. (``"0 * * * *"`` or ``"*/15 * * * *"`` fired by
    itself whenever a test ran across an hour or a quarter hour.)"""
    minute = (datetime.now(UTC).minute + 30) % 60
    return f"{minute} * * * *", minute


def body(url: str, schedule: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A schedule that POSTs to ``url`` (once, half a second from now, unless ``schedule``
    says otherwise), with quick retries."""
    return {
        "schedule": schedule or {"at": at_in(0.5)},
        "payload": {"method": "POST", "url": url, "body": {"k": "v"}},
        "retry": QUICK_RETRY,
        **extra,
    }


def every_second_body(url: str) -> dict[str, Any]:
    """A schedule that calls ``{url}/hooks/heartbeat`` every second, with a method, headers, a
    query and a body to check."""
    return {
        "name": "heartbeat",
        "schedule": {"interval": {"number": 1, "unit": "second"}, "timezone": "Europe/Berlin"},
        "payload": {
            "method": "PATCH",
            "url": f"{url}/hooks/heartbeat?fixed=yes",
            "headers": {"X-Team": "payments"},
            "queryParameters": {"region": "eu", "ids": ["1", "2"]},
            "body": {"task": "ping", "n": 1},
        },
    }


def create(pipeline: Pipeline, payload: dict[str, Any]) -> str:
    """Create the schedule ``payload`` describes and wait until it is stored; its id."""
    response = pipeline.client.post(f"{API}/schedule", json=payload)
    assert response.status_code == 202, response.get_data(as_text=True)
    schedule_id: str = response.get_json()["id"]
    pipeline.wait_until_stored(schedule_id)
    return schedule_id


def history(
    pipeline: Pipeline, schedule_id: str, status: str | None = None
) -> list[dict[str, Any]]:
    """The run history (with ``status``, the records in it), newest first; empty while the
    schedule is not stored yet."""
    query = f"?status={status}" if status else ""
    response = pipeline.client.get(f"{API}/schedule/{schedule_id}/executions{query}")
    if response.status_code == 404:
        return []
    items: list[dict[str, Any]] = response.get_json()["items"]
    return items


def final_status(pipeline: Pipeline, schedule_id: str) -> str | None:
    """The status of the schedule's latest run; ``None`` before any."""
    records = history(pipeline, schedule_id)
    return records[0]["status"] if records else None


def view(pipeline: Pipeline, schedule_id: str) -> dict[str, Any]:
    """The schedule as ``GET /schedule/{id}`` shows it."""
    answer: dict[str, Any] = pipeline.client.get(f"{API}/schedule/{schedule_id}").get_json()
    return answer
