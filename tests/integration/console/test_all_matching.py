"""The console acts on "all N matching this search" through the bulk operation: the count is
shown beside the list and confirmed before anything changes; another tenant's schedules never
match; a search that stops part way asks to go on from where it stopped."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduler_service.console import bulk_actions
from scheduler_service.service import bulk
from tests.integration.console.test_console import (
    ACME_KEY,
    CONFIRMED,
    GLOBEX_KEY,
    form,
    log_in,
    text,
)
from tests.integration.console.test_daily_work import create, notice, rows
from tests.support.api import ApiUnderTest, api_under_test


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        log_in(api.client, ACME_KEY)
        for number in range(6):
            create(api, f"bill-{number}", name=f"billing job {number}")
        create(api, "other", name="search job")
        globex = api.app.test_client()
        log_in(globex, GLOBEX_KEY)
        globex.post("/console/schedules/new", data=form(id="theirs", name="billing theirs"))
        api.apply()
        yield api


def statuses(api: ApiUnderTest) -> dict[str, str]:
    page = text(api.client.get("/console/schedules?per_page=200&sort=id"))
    return dict(re.findall(r'<tr data-id="([^"]+)".*?data-status="(\w+)"', page, re.S))


def test_all_matching_is_counted_confirmed_then_done(api: ApiUnderTest) -> None:
    listed = text(api.client.get("/console/schedules?q=billing&per_page=25"))
    assert "All 6 matching this search:" in listed
    assert "matching this search" not in text(api.client.get("/console/schedules"))
    # As the list's form sends them: its filters, empty ones too.
    fields = {
        "q": "billing",
        "sort": "",
        "status": "",
        "tag": "",
        "next_after": "",
        "next": "/console/schedules?q=billing",
    }

    asked = api.client.post("/console/schedules/all-matching", data={"action": "pause", **fields})
    assert asked.status_code == 200
    assert "Pause all 6 schedules matching this search?" in text(asked)
    assert set(statuses(api).values()) == {"active"}  # nothing changed yet

    done = api.client.post(
        "/console/schedules/all-matching", data={"action": "pause", **fields, **CONFIRMED}
    )
    assert done.status_code == 303
    query = parse_qs(urlsplit(done.headers["Location"]).query)
    assert query["q"] == ["billing"] and query["bulk"] == ["pause"] and query["done"] == ["6"]
    assert notice(text(api.client.get(done.headers["Location"]))) == "Paused 6 schedules."
    assert statuses(api) == {**{f"bill-{n}": "paused" for n in range(6)}, "other": "active"}
    # Who paused them is said as for a pause from a schedule's page.
    paused = api.backends.store.get_schedule("acme", "bill-0")
    assert paused is not None and paused.pause_set_by == "console"

    again = api.client.post(
        "/console/schedules/all-matching", data={"action": "pause", **fields, **CONFIRMED}
    )
    said = notice(text(api.client.get(again.headers["Location"])))
    assert said == "Paused 0 schedules; 6 already so."
    theirs = api.app.test_client()
    log_in(theirs, GLOBEX_KEY)
    assert 'data-status="active"' in text(theirs.get("/console/schedules/theirs"))


def test_all_matching_never_means_every_schedule(api: ApiUnderTest) -> None:
    refused = api.client.post(
        "/console/schedules/all-matching", data={"action": "delete", "sort": "name", **CONFIRMED}
    )
    assert refused.status_code == 400 and "all matching never means every" in text(refused)
    unknown = api.client.post(
        "/console/schedules/all-matching", data={"action": "trigger", "q": "billing"}
    )
    assert unknown.status_code == 400
    assert len(rows(text(api.client.get("/console/schedules")))) == 7


def test_a_long_one_asks_to_go_on_from_where_it_stopped(
    api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "PAGE", 4)
    monkeypatch.setattr(bulk, "TIME_BUDGET", 0.0)
    monkeypatch.setattr(bulk_actions, "ALL_MATCHING_SECONDS", 0.0)
    fields = {"action": "delete", "q": "billing", **CONFIRMED}
    asked = api.client.post("/console/schedules/all-matching", data=fields)
    page = text(asked)
    assert "Deleted 4 so far (0 already so); more match this search. Go on?" in page
    token = re.search(r'name="continue" value="([^"]+)"', page)
    assert token is not None
    assert sorted(statuses(api)) == ["bill-4", "bill-5", "other"]
    went_on = api.client.post(
        "/console/schedules/all-matching", data={**fields, "continue": token.group(1)}
    )
    assert went_on.status_code == 303
    assert sorted(statuses(api)) == ["other"]
