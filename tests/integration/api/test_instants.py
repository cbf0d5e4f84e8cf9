"""Every instant the API reads is read by one strict parser (``shared.timeutil.parse_iso``): a
text that is not an ISO-8601 date-time as written (``08:00:001``, which Python's
``fromisoformat`` reads as 08:00:00) is a 400 naming its field, and nothing stored changes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest

from shared.timeutil import iso_z
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

SCHEDULE = f"{API}/schedule/s1"
BODY: dict[str, Any] = {
    "schedule": {"cron": "0 2 * * *", "timezone": "UTC"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
}
# Each read as another instant, or as none, by a lenient parser.
MALFORMED = [
    "2027-01-01T08:00:001Z",
    "2027-01-01T08:00:00:00Z",
    "2027-01-01T0800Z",
    "20270101T080000Z",
    "2027-W01-1T08:00Z",
    "2027-01-01T08Z",
    "2027-01-01T08:00:00.Z",
    "2027-01-01T08:00:00Z ",
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path_factory.mktemp("instants")) as under_test:
        answer = under_test.client.put(SCHEDULE, json=BODY)
        assert answer.status_code == 202, answer.get_json()
        under_test.apply()
        yield under_test


def stored(api: ApiUnderTest) -> Any:
    answer = api.client.get(SCHEDULE)
    assert answer.status_code == 200
    return answer.get_json()


def assert_names(answer: Any, field: str) -> None:
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert answer.mimetype == "application/problem+json"
    named = [error["field"] for error in answer.get_json()["errors"]]
    assert named == [field], answer.get_json()


def later(api: ApiUnderTest) -> str:
    return iso_z(api.clock.now() + timedelta(days=3))


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_instant_in_a_schedule_is_a_400_naming_it(api: ApiUnderTest, text: str) -> None:
    before = stored(api)
    at = {**BODY, "schedule": {"at": text}}
    assert_names(api.client.put(SCHEDULE, json=at), "schedule.at")
    bounded = {**BODY, "schedule": {**BODY["schedule"], "start": text}}
    assert_names(api.client.put(SCHEDULE, json=bounded), "schedule.start")
    bounded = {**BODY, "schedule": {**BODY["schedule"], "end": text}}
    assert_names(api.client.post(f"{API}/schedule", json=bounded), "schedule.end")
    api.apply()
    assert stored(api) == before


@pytest.mark.parametrize("text", MALFORMED)
def test_a_malformed_instant_in_an_action_is_a_400_naming_it(api: ApiUnderTest, text: str) -> None:
    before = stored(api)
    assert_names(api.client.post(f"{SCHEDULE}/pause", json={"until": text}), "until")
    assert_names(api.client.post(f"{SCHEDULE}/skip", json={"at": text}), "at")
    assert_names(api.client.delete(f"{SCHEDULE}/skip?at={quote(text)}"), "at")
    window = {"from": text, "to": later(api)}
    assert_names(api.client.post(f"{SCHEDULE}/backfill", json=window), "from")
    preview = {"schedule": BODY["schedule"], "after": text}
    assert_names(api.client.post(f"{API}/schedule/preview", json=preview), "after")
    assert_names(api.client.get(f"{API}/schedules?next_after={quote(text)}"), "next_after")
    api.apply()
    assert stored(api) == before


def test_well_formed_instants_are_read_as_written(api: ApiUnderTest) -> None:
    for text in ("2027-01-01T08:00Z", "2027-01-01T08:00:00.5+05:30", "2027-01-01 08:00:00Z"):
        preview = {"schedule": {"at": text}, "count": 1}
        answer = api.client.post(f"{API}/schedule/preview", json=preview)
        assert answer.status_code == 200, (text, answer.get_json())
