"""``managed_by``: the label of what keeps a schedule (``scheduler apply``), taken by the API,
shown back, kept by a PATCH that does not name it, refused with the field named when malformed,
shown on the console's schedule page, and warned about before a console edit."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.console.test_console import ACME_KEY, form, log_in, text
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

HEADERS = {"X-API-Key": ACME_KEY}
BODY: dict[str, Any] = {
    "name": "invoices",
    "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/invoices"},
    "managed_by": "github.com/acme/schedules",
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=(f"acme:{ACME_KEY}",)) as api:
        yield api


def test_the_api_takes_shows_and_keeps_the_label(api: ApiUnderTest) -> None:
    assert api.client.put(f"{API}/schedule/inv", json=BODY, headers=HEADERS).status_code == 202
    api.apply()
    shown = api.client.get(f"{API}/schedule/inv", headers=HEADERS).get_json()
    assert shown["managed_by"] == "github.com/acme/schedules"

    patched = api.client.patch(f"{API}/schedule/inv", json={"name": "invoices 2"}, headers=HEADERS)
    assert patched.status_code == 202
    api.apply()
    shown = api.client.get(f"{API}/schedule/inv", headers=HEADERS).get_json()
    assert (shown["name"], shown["managed_by"]) == ("invoices 2", "github.com/acme/schedules")

    cleared = api.client.patch(f"{API}/schedule/inv", json={"managed_by": None}, headers=HEADERS)
    assert cleared.status_code == 202
    api.apply()
    assert api.client.get(f"{API}/schedule/inv", headers=HEADERS).get_json()["managed_by"] is None


def test_a_malformed_label_is_a_400_naming_it_and_stores_nothing(api: ApiUnderTest) -> None:
    for label in ("", "has space", "-leading", "x" * 101, 7):
        answer = api.client.put(
            f"{API}/schedule/bad", json={**BODY, "managed_by": label}, headers=HEADERS
        )
        assert answer.status_code == 400, label
        assert [error["field"] for error in answer.get_json()["errors"]] == ["managed_by"]
    api.apply()
    assert api.backends.store.get_schedule("acme", "bad") is None


def test_the_console_shows_the_label_and_warns_before_an_edit(api: ApiUnderTest) -> None:
    assert api.client.put(f"{API}/schedule/inv", json=BODY, headers=HEADERS).status_code == 202
    assert (
        api.client.put(
            f"{API}/schedule/byhand", json={**BODY, "managed_by": None}, headers=HEADERS
        ).status_code
        == 202
    )
    api.apply()
    log_in(api.client, ACME_KEY)

    page = text(api.client.get("/console/schedules/inv"))
    assert re.search(r"<dt>managed by</dt><dd><code>github.com/acme/schedules</code>", page)
    edit = text(api.client.get("/console/schedules/inv/edit"))
    assert 'id="managed-warning"' in edit and "managed by <code>github.com/acme" in edit
    assert 'name="managed_by" type="text" value="github.com/acme/schedules"' in edit

    assert "managed by" not in text(api.client.get("/console/schedules/byhand"))
    assert 'id="managed-warning"' not in text(api.client.get("/console/schedules/byhand/edit"))

    # Saved from the console with its label left as shown, the schedule stays managed.
    values = form(**{"managed_by": "github.com/acme/schedules"})
    assert api.client.post("/console/schedules/inv/edit", data=values).status_code == 303
    api.apply()
    stored = api.backends.store.get_schedule("acme", "inv")
    assert stored is not None and stored.live_definition.managed_by == "github.com/acme/schedules"
