"""The API's application layer (``ScheduleService``) over the embedded backends, and what one
request costs it: a create reads its timing and builds its recurrence once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import shared.recurrence
import shared.validation
from shared.recurrence import Bounded
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

PAYLOAD = {"method": "POST", "url": "https://hooks.example.com/run"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path) as under_test:
        yield under_test


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many recurrences are built, and how many cron lines and rules read, from now on."""
    counts: Counter[str] = Counter()
    bounded_init = Bounded.__init__

    def counting_init(self: Bounded, *args: Any, **kwargs: Any) -> None:
        counts["recurrence"] += 1
        bounded_init(self, *args, **kwargs)

    monkeypatch.setattr(Bounded, "__init__", counting_init)
    for reader, count_as in (("cron_recurrence", "cron line"), ("parse_rrule", "rule")):
        original = getattr(shared.recurrence, reader)

        def counting(
            *args: Any, _original: Any = original, _name: str = count_as, **kwargs: Any
        ) -> Any:
            counts[_name] += 1
            return _original(*args, **kwargs)

        for module in (shared.recurrence, shared.validation):
            monkeypatch.setattr(module, reader, counting)
    return counts


@pytest.mark.parametrize(
    ("schedule", "read"),
    [
        ({"cron": "H 9 * * MON-FRI", "timezone": "Europe/Paris"}, "cron line"),
        ({"cron": "@every 90m", "start": "2030-01-01T00:00:00Z"}, "cron line"),
        ({"rrule": "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=10"}, "rule"),
        ({"interval": {"number": 2, "unit": "days"}}, None),
    ],
)
def test_a_create_builds_its_recurrence_once(
    api: ApiUnderTest, built: Counter[str], schedule: dict[str, Any], read: str | None
) -> None:
    for method, path in (("post", "/schedule"), ("put", "/schedule/once")):
        built.clear()
        response = getattr(api.client, method)(
            f"{API}{path}", json={"schedule": schedule, "payload": PAYLOAD}
        )
        assert response.status_code == 202, response.get_json()
        assert response.get_json()["next_schedule_time"] is not None
        expected = {"recurrence": 1, **({read: 1} if read else {})}
        assert dict(built) == expected, (method, schedule)
