"""Skips with intent (issue 27 item 2): the next N occurrences or one named occurrence,
shown on the schedule as what is pending, undone before they are due, refused naming the field,
kept to their tenant; skipped by the executors at their time, even when already sent ahead."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.timeutil import iso_z
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver

ACME = {"X-API-Key": "sk_acme_0123456789abcdef"}
GLOBEX = {"X-API-Key": "sk_globex_0123456789abcdef"}
KEYS = (f"acme:{ACME['X-API-Key']}", f"globex:{GLOBEX['X-API-Key']}")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def next_hour(api: ApiUnderTest) -> datetime:
    return (api.clock.now() + timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)


def hourly(
    api: ApiUnderTest, schedule_id: str, first: datetime | None = None, **schedule: Any
) -> datetime:
    """An hourly schedule from ``first`` (default: the next whole hour); its first time."""
    first = first or next_hour(api)
    timing = {"interval": {"number": 1, "unit": "hour"}, "start": iso_z(first), **schedule}
    body = {"schedule": timing, "payload": {"method": "POST", "url": "https://example.com/h"}}
    response = api.client.put(f"{API}/schedule/{schedule_id}", json=body, headers=ACME)
    assert response.status_code == 202, response.get_json()
    api.apply()
    return first


def skip(api: ApiUnderTest, schedule_id: str, body: Any, headers: Any = ACME) -> Any:
    return api.client.post(f"{API}/schedule/{schedule_id}/skip", json=body, headers=headers)


def fields_of(response: Any) -> list[str]:
    assert response.status_code == 400, response.get_json()
    return [error["field"] for error in response.get_json()["errors"]]


def test_skip_the_next_n_or_one_named_shown_as_pending_and_undone(api: ApiUnderTest) -> None:
    first = hourly(api, "h1")
    hour = timedelta(hours=1)
    answer = skip(api, "h1", {"count": 2})
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["skips"] == [iso_z(first), iso_z(first + hour)]
    # Again: the next two not skipped yet; and one named, further on.
    skip(api, "h1", {"count": 2})
    assert skip(api, "h1", {"at": iso_z(first + 9 * hour)}).status_code == 202
    shown = api.client.get(f"{API}/schedule/h1", headers=ACME).get_json()["skips"]
    assert shown == [iso_z(first + k * hour) for k in (0, 1, 2, 3, 9)]
    # Undo one, then all.
    undone = api.client.delete(
        f"{API}/schedule/h1/skip?at={iso_z(first + hour)}", headers=ACME
    ).get_json()
    assert undone["skips"] == [iso_z(first + k * hour) for k in (0, 2, 3, 9)]
    assert api.client.delete(f"{API}/schedule/h1/skip", headers=ACME).get_json()["skips"] == []


def test_a_bounded_rule_or_a_one_time_schedule_skips_what_it_has(api: ApiUnderTest) -> None:
    # Three times before its end, whatever the minute the test runs in (an end read from the
    # clock took in a fourth in the last minute of an hour).
    first = next_hour(api)
    hourly(api, "h2", first, end=iso_z(first + timedelta(hours=2, minutes=30)))
    answer = skip(api, "h2", {"count": 50}).get_json()
    assert answer["skips"] == [iso_z(first + timedelta(hours=k)) for k in range(3)]
    at = iso_z(api.clock.now() + timedelta(days=1))
    body = {"schedule": {"at": at}, "payload": {"method": "POST", "url": "https://e.com/x"}}
    api.client.put(f"{API}/schedule/once", json=body, headers=ACME)
    api.apply()
    assert skip(api, "once", {"count": 5}).get_json()["skips"] == [at]
    assert fields_of(skip(api, "once", {"count": 1})) == ["count"]  # none left


def test_bad_skips_are_refused_naming_the_field_and_nothing_changes(api: ApiUnderTest) -> None:
    first = hourly(api, "h3")
    cases = [
        ({}, "count"),
        ({"count": 1, "at": iso_z(first)}, "count"),
        ({"count": 0}, "count"),
        ({"count": 1001}, "count"),
        ({"count": "2"}, "count"),
        ({"at": iso_z(first + timedelta(minutes=30))}, "at"),  # not one of its times
        ({"at": iso_z(first - timedelta(hours=2))}, "at"),  # passed
        ({"at": "soon"}, "at"),
        ({"at": iso_z(first), "why": "x"}, "why"),
    ]
    for body, field in cases:
        assert fields_of(skip(api, "h3", body)) == [field], body
    assert fields_of(api.client.delete(f"{API}/schedule/h3/skip?at={iso_z(first)}", headers=ACME))
    assert api.client.get(f"{API}/schedule/h3", headers=ACME).get_json()["skips"] == []


def test_another_tenant_can_neither_skip_nor_undo_nor_see(api: ApiUnderTest) -> None:
    first = hourly(api, "h4")
    assert skip(api, "h4", {"count": 1}, GLOBEX).status_code == 404
    assert skip(api, "h4", {"count": 1}).status_code == 202
    assert api.client.delete(f"{API}/schedule/h4/skip", headers=GLOBEX).status_code == 404
    assert api.client.get(f"{API}/schedule/h4", headers=GLOBEX).status_code == 404
    shown = api.client.get(f"{API}/schedule/h4", headers=ACME).get_json()["skips"]
    assert shown == [iso_z(first)]


def test_an_occurrence_already_sent_ahead_is_skipped_at_its_time(tmp_path: Path) -> None:
    # Sent 10 s ahead: the skip lands while its message waits on queue 2.
    settings = sqlite_settings(tmp_path, lookahead_seconds=10.0)
    with running_receiver() as receiver, running_pipeline(settings) as pipeline:
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
        body = {
            "schedule": {
                "interval": {"number": 1, "unit": "second"},
                "start": iso_z(start),
                "end": iso_z(start + timedelta(seconds=5)),
            },
            "payload": {"method": "POST", "url": f"{receiver.url}/s"},
        }
        schedule_id = pipeline.client.post(f"{API}/schedule", json=body).get_json()["id"]
        stored = pipeline.wait_until_stored(schedule_id)
        deadline = time.monotonic() + 10
        while pipeline.backends.store.get_schedule("default", schedule_id).occurrence_count < 6:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "not sent ahead"
            time.sleep(0.1)
        skipped_at = [start + timedelta(seconds=k) for k in (2, 3)]
        answer = pipeline.client.post(
            f"{API}/schedule/{schedule_id}/skip", json={"at": iso_z(skipped_at[0])}
        )
        assert answer.status_code == 202, answer.get_json()
        pipeline.client.post(
            f"{API}/schedule/{schedule_id}/skip", json={"at": iso_z(skipped_at[1])}
        )
        receiver.wait_for(4, timeout=15)
        time.sleep(1.5)
        skipped = pipeline.client.get(
            f"{API}/schedule/{schedule_id}/executions?status=skipped"
        ).get_json()["items"]
    assert stored is not None
    called = sorted(call.headers["x-scheduler-scheduled-time"] for call in receiver.calls)
    assert called == [iso_z(start + timedelta(seconds=k)) for k in (0, 1, 4, 5)]
    assert sorted(item["scheduled_time"] for item in skipped) == [iso_z(t) for t in skipped_at]
    assert all(item["superseded"] and "skip" in item["error"] for item in skipped)
