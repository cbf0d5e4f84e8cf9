"""``next_schedule_time`` is the next time the schedule fires, never how far the poller has sent
occurrences ahead (that is ``dispatch_cursor``)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scheduler_cli.components import build_poller
from shared.timeutil import parse_iso
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

EVERY_10S: dict[str, Any] = {
    "name": "ticker",
    "schedule": {"cron": "@every 10s"},
    "payload": {"method": "GET", "url": "https://hooks.example.com/tick"},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, lookahead_seconds=300.0) as under_test:
        yield under_test


def shown(api: ApiUnderTest, schedule_id: str) -> dict[str, Any]:
    response = api.client.get(f"{API}/schedule/{schedule_id}")
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def instant(text: str | None) -> datetime:
    assert text is not None
    return parse_iso(text)


def test_next_time_is_the_next_fire_not_the_dispatch_cursor(api: ApiUnderTest) -> None:
    accepted = api.client.put(f"{API}/schedule/tick", json=EVERY_10S).get_json()
    first = instant(accepted["next_schedule_time"])
    api.apply()
    poller = build_poller(api.settings, api.backends, api.clock)
    assert poller.poll_once() == 1  # sends every occurrence of the next five minutes
    view = shown(api, "tick")
    assert instant(view["next_schedule_time"]) == first
    assert instant(view["dispatch_cursor"]) > first + timedelta(minutes=4)

    # Right after the first fire, the next is ten seconds on, though it was sent long ago.
    api.clock.advance((first - api.clock.now()).total_seconds() + 0.5)
    assert instant(shown(api, "tick")["next_schedule_time"]) == first + timedelta(seconds=10)
    listed = api.client.get(f"{API}/schedules").get_json()["items"][0]
    assert instant(listed["next_schedule_time"]) == first + timedelta(seconds=10)
    assert listed["next_schedule_time_local"].startswith(
        (first + timedelta(seconds=10)).strftime("%Y-%m-%dT%H:%M:%S")
    )

    # Paused, it fires nothing.
    api.client.post(f"{API}/schedule/tick/pause")
    assert shown(api, "tick")["next_schedule_time"] is None


def test_a_schedule_whose_last_occurrences_are_sent_still_shows_them(api: ApiUnderTest) -> None:
    body = {**EVERY_10S, "schedule": {"cron": "@every 10s", "max_occurrences": 3}}
    first = instant(
        api.client.put(f"{API}/schedule/three", json=body).get_json()["next_schedule_time"]
    )
    api.apply()
    build_poller(api.settings, api.backends, api.clock).poll_once()
    view = shown(api, "three")
    assert (view["status"], view["dispatch_cursor"]) == ("completed", None)
    assert instant(view["next_schedule_time"]) == first

    api.clock.advance((first - api.clock.now()).total_seconds() + 10.5)
    assert instant(shown(api, "three")["next_schedule_time"]) == first + timedelta(seconds=20)
    # After the third, nothing: not the fourth time of the rule, which is never sent.
    api.clock.advance(10)
    assert shown(api, "three")["next_schedule_time"] is None


def test_the_openapi_document_says_what_next_schedule_time_is(api: ApiUnderTest) -> None:
    schemas = api.client.get("/openapi.json").get_json()["components"]["schemas"]
    described = schemas["ScheduleView"]["properties"]
    assert "next time the schedule will fire" in described["next_schedule_time"]["description"]
    assert "poller" in described["dispatch_cursor"]["description"]
    assert (
        "first time it will fire"
        in schemas["Accepted"]["properties"]["next_schedule_time"]["description"]
    )
