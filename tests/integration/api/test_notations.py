"""Every notation of the registry (``shared.notations.NOTATIONS``) works through the API as a
user writes it: created, and reached by a PATCH from each other notation, with the same answer
each way. A notation added without what PATCH needs to tell its form fails here."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from pkgutil import iter_modules
from typing import Any

import pytest

import shared.notations
from scheduler_client.types import Timing as ClientTiming
from scheduler_service.presenting.schemas import TimingViewSchema
from shared.notations import NOTATIONS
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

# One schedule object per notation, by name: every registered notation needs one here.
EXAMPLES: dict[str, dict[str, Any]] = {
    "at": {"at": "2031-03-01T09:00:00", "timezone": "Europe/Paris"},
    "interval": {"interval": {"number": 2, "unit": "hours"}, "start": "2031-01-01T00:00:00Z"},
    "cron": {"cron": "30 9 * * 1-5", "timezone": "Asia/Kolkata", "end": "2032-01-01T00:00:00"},
    "rrule": {"rrule": "FREQ=WEEKLY;BYDAY=MO;BYHOUR=9;BYMINUTE=0", "timezone": "America/Chicago"},
    "blueprint": {
        "start_date": "05/02/2031",
        "end_date": "05/04/2031",
        "timeZone": "Asia/Calcutta",
        "time_of_day": "11:53",
        "am_pm": "AM",
        "repeat_interval": {"number": 2, "unit": "minute"},
    },
}
PAYLOAD = {"method": "POST", "url": "https://hooks.example.com/run"}
# What a schedule's answer says of when it fires.
WHEN = ("schedule", "timing", "timezone", "schedule_description", "next_schedule_time")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path) as under_test:
        yield under_test


def when(api: ApiUnderTest, schedule_id: str) -> dict[str, Any]:
    answer = api.client.get(f"{API}/schedule/{schedule_id}").get_json()
    return {name: answer[name] for name in WHEN}


def test_every_notation_module_is_registered_and_has_an_example_here() -> None:
    modules = [
        import_module(f"shared.notations.{info.name}")
        for info in iter_modules(shared.notations.__path__)
    ]
    defined = {module.NOTATION.name for module in modules if hasattr(module, "NOTATION")}
    assert {notation.name for notation in NOTATIONS} == defined == EXAMPLES.keys()
    assert len({notation.form for notation in NOTATIONS}) == len(NOTATIONS)


def test_the_docs_and_the_client_know_every_notation() -> None:
    """What cannot read the registry names each notation: the time semantics (prose) and the
    client's type of an answer's ``timing`` (a package of its own)."""
    semantics = (Path(__file__).parents[3] / "docs" / "time-semantics.md").read_text()
    assert [n.form for n in NOTATIONS if f"`{n.form}`" not in semantics] == []
    assert set(ClientTiming.__annotations__) == set(TimingViewSchema().fields)


@pytest.mark.parametrize("target", [notation.name for notation in NOTATIONS])
def test_a_patch_naming_a_notation_replaces_any_other_whole(api: ApiUnderTest, target: str) -> None:
    schedule = EXAMPLES[target]
    created = api.client.put(
        f"{API}/schedule/direct", json={"schedule": schedule, "payload": PAYLOAD}
    )
    assert created.status_code == 202, created.get_json()
    api.apply()
    expected = when(api, "direct")
    assert expected["schedule"] == schedule
    assert expected["next_schedule_time"] is not None
    for source in EXAMPLES.keys() - {target}:
        schedule_id = f"from-{source}"
        body = {"schedule": EXAMPLES[source], "payload": PAYLOAD}
        assert api.client.put(f"{API}/schedule/{schedule_id}", json=body).status_code == 202
        api.apply()
        patched = api.client.patch(f"{API}/schedule/{schedule_id}", json={"schedule": schedule})
        assert patched.status_code == 202, (source, patched.get_json())
        api.apply()
        assert when(api, schedule_id) == expected, source
