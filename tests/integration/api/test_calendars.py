"""``/calendars`` (issue 27 item 3): a tenant's business calendars, made from dates or from an
iCalendar file of holidays, read, replaced and deleted by admin keys; every bound a 400 naming
its field; another tenant's calendar neither seen, replaced nor deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.calendars import MAX_CALENDARS, MAX_DATES
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ADMIN = {"X-API-Key": "sk_acme_admin_0123456789abcdef"}
WRITER = {"X-API-Key": "sk_acme_write_0123456789abcdef"}
GLOBEX = {"X-API-Key": "sk_globex_admin_0123456789abcdef"}
KEYS = (
    f"acme/admin:{ADMIN['X-API-Key']}",
    f"acme/write:{WRITER['X-API-Key']}",
    f"globex/admin:{GLOBEX['X-API-Key']}",
)
CALENDARS = f"{API}/calendars"
HOLIDAYS_ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//acme//holidays//EN
BEGIN:VEVENT
UID:christmas@acme
DTSTART;VALUE=DATE:20241225
DTEND;VALUE=DATE:20241227
RRULE:FREQ=YEARLY
EXDATE;VALUE=DATE:20281225
SUMMARY:Christmas and Boxing Day
END:VEVENT
BEGIN:VEVENT
UID:new-year-2027@acme
DTSTART;VALUE=DATE:20270101
SUMMARY:New Year
END:VEVENT
END:VCALENDAR
"""


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def create(api: ApiUnderTest, body: dict[str, Any], headers: dict[str, str] = ADMIN) -> Any:
    return api.client.post(CALENDARS, json=body, headers=headers)


def test_a_calendar_is_made_read_replaced_and_deleted(api: ApiUnderTest) -> None:
    made = create(
        api,
        {"name": "de-holidays", "description": "Berlin", "dates": ["2026-12-25", "2026-05-01"]},
    )
    assert made.status_code == 201, made.get_json()
    assert made.headers["Location"] == f"{CALENDARS}/de-holidays"
    assert made.get_json()["dates"] == ["2026-05-01", "2026-12-25"]
    assert made.get_json()["revision"] == 1
    listing = api.client.get(CALENDARS, headers=ADMIN).get_json()["items"]
    assert [(item["name"], item["date_count"], item["first_date"]) for item in listing] == [
        ("de-holidays", 2, "2026-05-01")
    ]
    assert "dates" not in listing[0]
    replaced = api.client.put(
        f"{CALENDARS}/de-holidays", json={"dates": ["2026-12-24", "2026-12-24"]}, headers=ADMIN
    )
    assert replaced.status_code == 200, replaced.get_json()
    read = api.client.get(f"{CALENDARS}/de-holidays", headers=ADMIN).get_json()
    assert (read["dates"], read["revision"], read["description"]) == (["2026-12-24"], 2, "")
    assert api.client.delete(f"{CALENDARS}/de-holidays", headers=ADMIN).status_code == 204
    assert api.client.get(f"{CALENDARS}/de-holidays", headers=ADMIN).status_code == 404
    assert api.client.delete(f"{CALENDARS}/de-holidays", headers=ADMIN).status_code == 404
    assert api.client.get(CALENDARS, headers=ADMIN).get_json()["items"] == []


def test_a_calendar_from_an_icalendar_file_holds_its_all_day_events(api: ApiUnderTest) -> None:
    made = create(api, {"name": "holidays", "ics": HOLIDAYS_ICS})
    assert made.status_code == 201, made.get_json()
    dates = made.get_json()["dates"]
    this_year = int(api.clock.now().strftime("%Y"))
    # From the start of last year to ten years ahead, each event's days to its DTEND.
    assert dates[:2] == [f"{this_year - 1}-12-25", f"{this_year - 1}-12-26"]
    assert dates[-2:] == [f"{this_year + 10}-12-25", f"{this_year + 10}-12-26"]
    assert "2027-01-01" in dates
    # EXDATE takes the whole occurrence of 2028 out, both its days.
    assert "2028-12-25" not in dates and "2028-12-26" not in dates
    assert len(dates) == 2 * (12 - 1) + 1


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"dates": ["2026-12-25"]}, "name", "Missing data"),
        ({"name": "bad name", "dates": []}, "name", "letters, digits"),
        ({"name": "h", "dates": ["2026-02-30"]}, "dates.0", "date"),
        ({"name": "h", "dates": ["25.12.2026"]}, "dates.0", "date"),
        ({"name": "h"}, "dates", "one of the two"),
        ({"name": "h", "dates": [], "ics": HOLIDAYS_ICS}, "ics", "one of the two"),
        ({"name": "h", "dates": ["2026-01-01"] * (MAX_DATES + 1)}, "dates", "Longer than"),
        ({"name": "h", "ics": "not a calendar"}, "ics", "not an iCalendar file"),
        (
            {"name": "h", "ics": HOLIDAYS_ICS.replace("FREQ=YEARLY", "FREQ=HOURLY")},
            "ics",
            "recurs DAILY at most",
        ),
        (
            {"name": "h", "ics": HOLIDAYS_ICS.replace("FREQ=YEARLY", "FREQ=DAILY")},
            "ics",
            "at most 1000",
        ),
        (
            {"name": "h", "ics": HOLIDAYS_ICS.replace(";VALUE=DATE:20270101", ":20270101T090000Z")},
            "ics",
            "event 2 (New Year): DTSTART is 2027-01-01 09:00:00+00:00: a calendar holds whole days",
        ),
        ({"name": "h", "dates": [], "colour": "red"}, "colour", "Unknown field"),
    ],
)
def test_a_bad_calendar_is_a_400_naming_its_field(
    api: ApiUnderTest, body: dict[str, Any], field: str, words: str
) -> None:
    refused = create(api, body)
    assert refused.status_code == 400, refused.get_json()
    errors = {item["field"]: item["message"] for item in refused.get_json()["errors"]}
    assert field in errors, errors
    assert words in errors[field], errors
    assert api.client.get(CALENDARS, headers=ADMIN).get_json()["items"] == []


def test_the_bounds_of_a_tenants_calendars(api: ApiUnderTest) -> None:
    a_thousand = [f"2026-{month:02}-{day:02}" for month in range(1, 13) for day in range(1, 29)]
    assert create(api, {"name": "h", "dates": a_thousand}).status_code == 201
    for index in range(1, MAX_CALENDARS):
        assert create(api, {"name": f"c{index}", "dates": []}).status_code == 201
    refused = create(api, {"name": "one-more", "dates": []})
    assert refused.status_code == 400
    assert refused.get_json()["errors"] == [
        {"field": "name", "message": f"a tenant keeps at most {MAX_CALENDARS} calendars"}
    ]
    # Another tenant's count is its own.
    assert create(api, {"name": "one-more", "dates": []}, GLOBEX).status_code == 201


def test_a_name_is_made_once_and_a_put_keeps_the_paths_name(api: ApiUnderTest) -> None:
    assert create(api, {"name": "h", "dates": ["2026-12-25"]}).status_code == 201
    again = create(api, {"name": "h", "dates": []})
    assert again.status_code == 409 and "replace it with PUT" in again.get_json()["detail"]
    renamed = api.client.put(f"{CALENDARS}/h", json={"name": "g", "dates": []}, headers=ADMIN)
    assert renamed.status_code == 400
    assert renamed.get_json()["errors"][0]["field"] == "name"
    missing = api.client.put(f"{CALENDARS}/nowhere", json={"dates": []}, headers=ADMIN)
    assert missing.status_code == 404
    assert api.client.get(f"{CALENDARS}/h", headers=ADMIN).get_json()["dates"] == ["2026-12-25"]


def test_only_admin_keys_manage_calendars(api: ApiUnderTest) -> None:
    assert create(api, {"name": "h", "dates": []}).status_code == 201
    for method, url in (
        ("GET", CALENDARS),
        ("POST", CALENDARS),
        ("GET", f"{CALENDARS}/h"),
        ("PUT", f"{CALENDARS}/h"),
        ("DELETE", f"{CALENDARS}/h"),
    ):
        refused = api.client.open(url, method=method, json={"dates": []}, headers=WRITER)
        assert refused.status_code == 403, (method, url)
        assert refused.get_json()["required_role"] == "admin"
    assert api.client.get(f"{CALENDARS}/h", headers=ADMIN).status_code == 200


def test_a_tenant_neither_sees_replaces_nor_deletes_anothers_calendar(api: ApiUnderTest) -> None:
    assert create(api, {"name": "h", "dates": ["2026-12-25"]}).status_code == 201
    assert api.client.get(CALENDARS, headers=GLOBEX).get_json()["items"] == []
    assert api.client.get(f"{CALENDARS}/h", headers=GLOBEX).status_code == 404
    replace = api.client.put(f"{CALENDARS}/h", json={"dates": []}, headers=GLOBEX)
    assert replace.status_code == 404
    assert api.client.delete(f"{CALENDARS}/h", headers=GLOBEX).status_code == 404
    # Its own of the same name is another calendar.
    assert create(api, {"name": "h", "dates": ["2027-01-01"]}, GLOBEX).status_code == 201
    assert api.client.get(f"{CALENDARS}/h", headers=ADMIN).get_json()["dates"] == ["2026-12-25"]
    assert api.client.get(f"{CALENDARS}/h", headers=GLOBEX).get_json()["dates"] == ["2027-01-01"]
