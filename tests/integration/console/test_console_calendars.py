"""The console's calendars (issue 27 item 3): an admin makes, replaces and deletes the tenant's
calendars on their page; the schedule form takes a calendar and the schedule's page shows it
with its next times on business days; another tenant sees none of it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from shared.timeutil import UTC
from tests.support.api import ApiUnderTest, api_under_test

ACME_ADMIN = "sk_console_acme_admin_0123456789"
ACME_WRITER = "sk_console_acme_write_0123456789"
GLOBEX = "sk_console_globex_0123456789"

# The schedule form of a weekly report, Thursdays at 09:00 in Berlin, without its calendar.
WEEKLY = {
    "id": "weekly",
    "name": "weekly report",
    "notation": "cron",
    "schedule.cron": "0 9 * * 4",
    "schedule.timezone": "Europe/Berlin",
    "payload.method": "POST",
    "payload.url": "https://example.com/report",
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme/admin:{ACME_ADMIN}", f"acme/write:{ACME_WRITER}", f"globex/admin:{GLOBEX}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        api.clock.offset = datetime(2026, 12, 21, 12, 0, tzinfo=UTC) - datetime.now(UTC)
        yield api


def signed_in(api: ApiUnderTest, key: str) -> FlaskClient:
    client = api.app.test_client()
    answer = client.post("/console/login", data={"api_key": key, "next": "/console/"})
    assert answer.status_code == 303
    return client


def text(answer: Any) -> str:
    body: str = answer.get_data(as_text=True)
    return body


def test_an_admin_makes_replaces_and_deletes_calendars(api: ApiUnderTest) -> None:
    admin = signed_in(api, ACME_ADMIN)
    assert 'id="no-calendars"' in text(admin.get("/console/calendars"))
    saved = admin.post(
        "/console/calendars",
        data={"name": "holidays", "dates": "2026-12-24, 2026-12-25\n2026-12-31", "ics": ""},
    )
    assert saved.status_code == 303
    page = text(admin.get(saved.headers["Location"]))
    assert 'data-name="holidays"' in page and "3 date(s), 2026-12-24 … 2026-12-31" in page
    # The same name again replaces it.
    admin.post("/console/calendars", data={"name": "holidays", "dates": "2027-01-01"})
    assert "1 date(s), 2027-01-01" in text(admin.get("/console/calendars"))
    refused = admin.post("/console/calendars", data={"name": "x", "dates": "24.12.2026"})
    assert refused.status_code == 400 and "is not a date (YYYY-MM-DD)" in text(refused)
    # Globex sees nothing of it; a writer of acme cannot open the page.
    assert 'data-name="holidays"' not in text(signed_in(api, GLOBEX).get("/console/calendars"))
    assert signed_in(api, ACME_WRITER).get("/console/calendars").status_code == 403
    deleted = admin.post("/console/calendars/holidays/delete")
    assert deleted.status_code == 303
    assert 'id="no-calendars"' in text(admin.get("/console/calendars"))


def test_the_schedule_form_takes_a_calendar_and_the_page_shows_its_times(
    api: ApiUnderTest,
) -> None:
    admin = signed_in(api, ACME_ADMIN)
    admin.post("/console/calendars", data={"name": "holidays", "dates": "2026-12-24 2026-12-31"})
    form = {
        **WEEKLY,
        "misfire.policy": "fire_once",
        "calendar.exclude": "holidays",
        "calendar.shift": "next_business_day",
    }
    created = admin.post("/console/schedules/new", data=form)
    assert created.status_code == 303, text(created)
    api.apply()
    page = text(admin.get("/console/schedules/weekly"))
    assert "not weekends nor the dates of holidays" in page
    times = re.findall(r'<li><time datetime="([^"]+)"', page)
    # Thursday 24 and 31 are off: each moves to the Friday after.
    assert times[:3] == [
        "2026-12-25T08:00:00.000Z",
        "2027-01-01T08:00:00.000Z",
        "2027-01-07T08:00:00.000Z",
    ]
    edit = text(admin.get("/console/schedules/weekly/edit"))
    assert re.search(r'name="calendar.exclude" type="text" value="holidays"', edit)
    assert re.search(r'<option value="next_business_day" selected>', edit)
    # The calendar in use is not deleted: the page says which schedule names it.
    refused = admin.post("/console/calendars/holidays/delete")
    assert refused.status_code == 409 and "(weekly)" in text(refused)
    # Emptied, the form takes the calendar off.
    admin.post("/console/schedules/weekly/edit", data={**form, "calendar.exclude": ""})
    api.apply()
    stored = api.backends.store.get_schedule("acme", "weekly")
    assert stored is not None and stored.live_definition.calendar is None


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ("closures", "no calendar 'closures'"),
        ("holidays, closures", "no calendar 'closures'"),
        ("holidays, no such name!", "a calendar's name is"),
        ("holidays, holidays", "'holidays' is named already"),
    ],
)
def test_a_calendar_the_form_cannot_use_is_named_beside_its_input(
    api: ApiUnderTest, typed: str, says: str
) -> None:
    admin = signed_in(api, ACME_ADMIN)
    admin.post("/console/calendars", data={"name": "holidays", "dates": "2026-12-24"})
    form = {**WEEKLY, "calendar.exclude": typed, "calendar.shift": "skip"}
    refused = admin.post("/console/schedules/new", data=form)
    assert refused.status_code == 422
    page = text(refused)
    beside = re.findall(r'<p class="error" data-field="([^"]+)">([^<]+)</p>', page)
    assert [field for field, _ in beside] == ["calendar.exclude"], beside
    assert unescape(beside[0][1]).startswith(says), beside
    assert re.search(r'name="calendar.exclude" type="text" value="([^"]*)"', page).group(1) == (
        typed.replace("'", "&#39;")
    )
    assert api.queued() == 0
