"""End to end (issue 27 item 3), on the embedded backends as ``scheduler dev`` runs them and on
the wire peers (nx-27017 + LocalStack): a daily 09:00 schedule excluding today fires on the
next business day, once, at its local time, and not today; the preview shows the shifted times
first. The four components share a clock the test moves (real time plus an offset): the
shifted day is a day away."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from scheduler_cli.components import build_executor, build_poller, build_processor
from scheduler_service.app import create_app
from shared.backends import Backends, open_backends
from shared.lifecycle import Shutdown
from shared.settings import Settings
from shared.timeutil import UTC, parse_iso
from tests.support.api import SteppedClock
from tests.support.harness import API, FAST, sqlite_settings
from tests.support.peers import WIRE_VARIANTS, wire_backends
from tests.support.receiver import running_receiver
from tests.support.schedules import ON_TIME_SECONDS

# "Today": Wednesday 30 December 2026, 08:59:55 in Berlin (CET, UTC+1).
TODAY = datetime(2026, 12, 30, 7, 59, 55, tzinfo=UTC)
WEDNESDAY_0900 = datetime(2026, 12, 30, 8, 0, tzinfo=UTC)
THURSDAY_0900 = datetime(2026, 12, 31, 8, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", *WIRE_VARIANTS])
def backends(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Settings, Backends]]:
    if request.param == "sqlite":
        settings = sqlite_settings(tmp_path)
        opened = open_backends(settings)
        yield settings, opened
        opened.close()
        return
    with wire_backends(request, monkeypatch, tmp_path, request.param) as wire:
        settings = wire.settings(Settings.from_env({}, **FAST))
        opened = wire.open(settings)
        yield settings, opened
        opened.close()


@contextmanager
def pipeline_at(
    settings: Settings, backends: Backends, clock: SteppedClock
) -> Iterator[FlaskClient]:
    app = create_app(settings, backends, clock)
    shutdown = Shutdown()
    workers = (
        build_processor(settings, backends, clock),
        build_poller(settings, backends, clock),
        build_executor(settings, backends, clock),
    )
    threads = [threading.Thread(target=w.run, args=(shutdown,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    try:
        yield app.test_client()
    finally:
        shutdown.request()
        for thread in threads:
            thread.join(timeout=10)


def real_time_of(moment: datetime, clock: SteppedClock) -> float:
    """When the shared clock shows ``moment``, by the receiver's (real) clock."""
    return (moment - clock.offset).timestamp()


def test_a_schedule_excluding_today_fires_on_the_next_business_day_only(
    backends: tuple[Settings, Backends],
) -> None:
    clock = SteppedClock()
    clock.offset = TODAY - datetime.now(UTC)
    with running_receiver() as receiver, pipeline_at(*backends, clock) as client:
        made = client.post(f"{API}/calendars", json={"name": "closed", "dates": ["2026-12-30"]})
        assert made.status_code == 201, made.get_json()
        body = {
            "name": "daily",
            "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Berlin"},
            "calendar": {"exclude": ["closed"], "shift": "next_business_day"},
            "payload": {"method": "POST", "url": f"{receiver.url}/daily"},
        }
        preview = client.post(f"{API}/schedule/preview", json={**body, "count": 3}).get_json()
        assert [item["local"] for item in preview["occurrences"]] == [
            "2026-12-31T09:00:00.000+01:00",  # today's, moved, and Thursday's own: once
            "2027-01-01T09:00:00.000+01:00",
            "2027-01-04T09:00:00.000+01:00",  # Monday: the weekend is not business days
        ]
        created = client.post(f"{API}/schedule", json=body)
        assert created.status_code == 202, created.get_json()
        assert parse_iso(created.get_json()["next_schedule_time"]) == THURSDAY_0900
        # Today's 09:00 comes and goes: no call.
        today_0900 = real_time_of(WEDNESDAY_0900, clock)
        time.sleep(max(0.0, today_0900 - time.time()) + 1.0)
        assert receiver.calls == []
        # The next morning, just before 09:00: it fires at 09:00, once.
        clock.offset += THURSDAY_0900 - timedelta(seconds=2) - clock.now()
        due = real_time_of(THURSDAY_0900, clock)
        [call] = receiver.wait_for(1, timeout=8)
        assert call.path == "/daily"
        assert call.headers["idempotency-key"].endswith(":2026-12-31T08:00:00.000Z")
        assert 0 <= call.received_at - due <= ON_TIME_SECONDS, call.received_at - due
        time.sleep(1.0)
        assert len(receiver.calls) == 1
