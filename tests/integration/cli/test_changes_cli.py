"""A schedule's change history through the Python client and ``scheduler schedules changes ID``,
against a served API with a stored key, as a user runs them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from scheduler_client import NotFound, SchedulerClient
from scheduler_service import auth
from shared.ports import ApiKey, Role
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.cli import run
from tests.support.serving import serving

KEY = "sk_cli_0123456789abcdef0123"
SECRET = "tok3n-0f-the-receiver-Qw7"
BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/run",
        "headers": {"Authorization": f"Bearer {SECRET}"},
    },
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ApiUnderTest, str]]:
    with api_under_test(tmp_path, api_auth="keys") as api, serving(api.app) as url:
        api.backends.store.add_api_key(
            ApiKey(auth.hash_key(KEY), "acme", "deploy-bot", datetime.now(UTC), Role.WRITE)
        )
        yield api, url


def test_the_client_and_the_cli_show_the_history(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    client = SchedulerClient(url, KEY)
    client.replace("report", BODY)
    api.apply()
    client.update("report", {"payload": {"url": "https://hooks.example.com/v2"}})
    api.apply()
    client.update("report", {"payload": {"headers": {"Authorization": "Bearer another-0ne-Zx9"}}})
    api.apply()
    client.pause("report")

    changes = list(client.changes("report", limit=2))
    assert [change["action"] for change in changes] == ["pause", "patch", "patch", "create"]
    assert {change["actor"]["name"] for change in changes} == {"deploy-bot"}
    first = client.changes_page("report", limit=1)
    assert [change["action"] for change in first["items"]] == ["pause"]
    assert first["schedule_status"] == "paused" and first["next_cursor"]
    second = client.changes_page("report", limit=1, cursor=first["next_cursor"])
    assert second["items"] == changes[1:2]
    with pytest.raises(NotFound):
        list(client.changes("nobody"))

    code, out, err = run(capfd, "schedules", "changes", "report", "--url", url, "--api-key", KEY)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["TIME", "(UTC)", "ACTOR", "ACTION", "REVISION", "FIELDS"]
    key_id = auth.hash_key(KEY)[:12]
    assert [line.split()[1:4] for line in lines[1:]] == [
        ["deploy-bot", f"({key_id})", action] for action in ("pause", "patch", "patch", "create")
    ]
    assert lines[1].endswith("state: active -> paused")
    assert lines[2].endswith("payload.headers.Authorization: changed (secret)")
    assert "payload.url: https://hooks.example.com/run -> https://hooks.example.com/v2" in lines[3]
    assert SECRET not in out and "another-0ne" not in out

    code, out, err = run(
        capfd, "schedules", "changes", "report", "--url", url, "--api-key", KEY, "--limit", "3"
    )
    assert len(out.splitlines()) == 1 + 3
    assert "3 shown; there are more" in err
    cursor = err.split("--cursor ")[1].split()[0]
    code, out, _ = run(
        capfd,
        "schedules",
        "changes",
        "report",
        *("--url", url, "--api-key", KEY, "--limit", "3", "--cursor", cursor),
    )
    assert [line.split()[3] for line in out.splitlines()[1:]] == ["create"]

    code, out, _ = run(
        capfd, "schedules", "changes", "report", "--url", url, "--api-key", KEY, "--json"
    )
    answer = json.loads(out)
    assert [item["action"] for item in answer["items"]] == ["pause", "patch", "patch", "create"]
    assert answer["items"][0]["fields"] == [
        {"path": "state", "old": "active", "new": "paused", "secret": False}
    ]

    code, _, err = run(capfd, "schedules", "changes", "nobody", "--url", url, "--api-key", KEY)
    assert code == 1 and err.startswith("404")
