"""A schedule's change history in the console: its newest changes on its page, every change a
page at a time, the console named as the actor of what it did, a tenant's own only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.console.test_console import ACME_KEY, GLOBEX_KEY, KEY_HEADER, form, log_in
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ROW = re.compile(r'<tr class="change" data-action="([a-z_]+)">(.*?)</tr>', re.DOTALL)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        yield api


def rows(html: str) -> list[tuple[str, str]]:
    """Each change's action and its row's text, tags left out."""
    return [
        (action, " ".join(re.sub(r"<[^>]+>", " ", row).split()))
        for action, row in ROW.findall(html)
    ]


def test_the_schedule_page_shows_who_changed_what(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    assert api.client.post("/console/schedules/new", data=form(id="nightly")).status_code == 303
    api.apply()
    patch = {"payload": {"headers": {"Authorization": "Bearer n3w-s3cret-token"}}}
    assert api.client.patch(f"{API}/schedule/nightly", json=patch, headers=KEY_HEADER).status_code
    api.apply()
    assert api.client.post("/console/schedules/nightly/pause").status_code in (302, 303)

    # The schedule's page asks for its newest changes once shown (and links to every change).
    schedule = api.client.get("/console/schedules/nightly").get_data(as_text=True)
    assert 'hx-get="/console/schedules/nightly/changes/recent"' in schedule
    assert 'href="/console/schedules/nightly/changes"' in schedule
    page = api.client.get("/console/schedules/nightly/changes/recent").get_data(as_text=True)
    shown = rows(page)
    assert [action for action, _ in shown] == ["pause", "patch", "create"]
    paused, patched, created = (text for _, text in shown)
    assert " now console: SCHEDULER_API_KEYS " in paused
    assert 'state : "active" → "paused"' in paused
    assert " SCHEDULER_API_KEYS " in patched and "console" not in patched
    assert "payload.headers.Authorization : changed (secret)" in patched
    assert "payload.headers.X-Team" in created and '"ops"' in created
    assert "s3cret-token" not in page and "n3w-s3cret" not in page


def test_every_change_a_page_at_a_time_and_a_deleted_schedules_too(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="busy"))
    api.apply()
    for _ in range(30):
        api.client.post("/console/schedules/busy/pause")
        api.client.post("/console/schedules/busy/resume")
    api.client.post("/console/schedules/busy/delete", data={"confirmed": "yes"})

    first = api.client.get("/console/schedules/busy/changes")
    assert first.status_code == 200
    html = first.get_data(as_text=True)
    assert "(deleted)" in html
    actions = [action for action, _ in rows(html)]
    assert len(actions) == 50 and actions[:3] == ["delete", "resume", "pause"]
    older = re.search(r'id="older-changes" href="([^"]+)"', html)
    assert older is not None
    rest = [
        action
        for action, _ in rows(
            api.client.get(older.group(1).replace("&amp;", "&")).get_data(as_text=True)
        )
    ]
    assert len(rest) == 12 and rest[-1] == "create"
    refused = api.client.get("/console/schedules/busy/changes?cursor=nonsense")
    assert refused.status_code == 400


def test_another_tenant_sees_no_change(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="acme-only"))
    api.apply()
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert other.get("/console/schedules/acme-only/changes").status_code == 404
    assert other.get("/console/schedules/acme-only/changes/recent").status_code == 404
