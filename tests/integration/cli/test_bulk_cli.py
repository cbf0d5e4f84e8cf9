"""Bulk operations from the client and the command line, against a served API: the client
follows the API's parts to the end, the CLI shows the count first, asks, then acts."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_client import InvalidRequest, SchedulerClient
from scheduler_service.service import bulk
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.cli import run
from tests.support.harness import API
from tests.support.serving import serving


def body(name: str, tag: str) -> dict[str, Any]:
    return {
        "name": name,
        "schedule": {"cron": "0 9 * * *"},
        "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
        "tags": [tag],
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ApiUnderTest, str]]:
    with api_under_test(tmp_path) as api, serving(api.app) as url:
        for number in range(7):
            put = api.client.put(
                f"{API}/schedule/b{number}", json=body(f"bill {number}", "billing")
            )
            assert put.status_code == 202
        assert (
            api.client.put(f"{API}/schedule/s1", json=body("search", "search")).status_code == 202
        )
        api.apply()
        yield api, url


def statuses(api: ApiUnderTest) -> dict[str, str]:
    listed = api.client.get(f"{API}/schedules?limit=100").get_json()["items"]
    return {item["id"]: item["status"] for item in listed}


def test_the_client_follows_the_parts_to_the_end(
    served: tuple[ApiUnderTest, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, url = served
    monkeypatch.setattr(bulk, "PAGE", 3)
    monkeypatch.setattr(bulk, "TIME_BUDGET", 0.0)
    with SchedulerClient(url) as client:
        assert client.bulk_dry_run("pause", {"tag": "billing"})["matched"] == 7
        done = client.bulk("pause", {"tag": "billing"})
        assert (done["done"], done.get("parts"), done["changed"], done["unchanged"]) == (
            True,
            3,
            7,
            0,
        )
        assert done["changed_ids"] == [f"b{n}" for n in range(7)]
        # One part again, under the same key and from the same place: the same answer.
        first = client.bulk_part("resume", {"tag": "billing"}, idempotency_key="k1")
        again = client.bulk_part("resume", {"tag": "billing"}, idempotency_key="k1")
        assert again == first and first["changed"] == 3
        with pytest.raises(InvalidRequest) as refused:
            client.bulk("delete", {})
        assert [error.field for error in refused.value.errors] == ["selector"]
    assert statuses(api) == {
        **{f"b{n}": "active" if n < 3 else "paused" for n in range(7)},
        "s1": "active",
    }


def test_the_cli_shows_the_count_asks_then_acts(
    served: tuple[ApiUnderTest, str],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api, url = served
    code, out, _ = run(
        capfd, "schedules", "bulk", "pause", "--tag", "billing", "--dry-run", "--url", url
    )
    assert (code, out) == (0, "7 schedules match (b0, b1, b2, b3, b4, …)\n")

    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, _ = run(capfd, "schedules", "bulk", "pause", "--tag", "billing", "--url", url)
    assert code == 1
    assert out.endswith("pause 7 schedules? [y/N] nothing changed\n")
    assert set(statuses(api).values()) == {"active"}

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, _ = run(
        capfd,
        "schedules",
        "bulk",
        "pause",
        "--tag",
        "billing",
        "--id",
        "b1",
        "--id",
        "b2",
        "--url",
        url,
    )
    assert code == 0
    assert out.splitlines()[-1].endswith("2 changed, 0 unchanged, 0 failed (2 gone over in 1 part)")
    assert [one for one, status in statuses(api).items() if status == "paused"] == ["b1", "b2"]

    code, out, err = run(
        capfd,
        "schedules",
        "bulk",
        "patch",
        "--name-prefix",
        "bill",
        "--status",
        "paused",
        "--patch",
        '{"priority": 1}',
        "--yes",
        "--url",
        url,
    )
    assert code == 0 and "2 changed" in out, err
    api.apply()
    assert [
        api.client.get(f"{API}/schedule/{one}").get_json()["priority"] for one in ("b1", "b3")
    ] == [1, 5]


def test_the_cli_names_what_is_wrong(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api, url = served
    code, _, err = run(capfd, "schedules", "bulk", "delete", "--yes", "--url", url)
    assert code == 1 and "selector" in err and "every schedule" in err
    patch = tmp_path / "patch.json"
    patch.write_text(json.dumps({"payload": {"url": "ftp://hooks.example.com/"}}))
    code, _, err = run(
        capfd,
        "schedules",
        "bulk",
        "patch",
        "--tag",
        "billing",
        "--patch",
        str(patch),
        "--yes",
        "--url",
        url,
    )
    assert code == 1 and "patch.payload.url" in err, err
    code, _, err = run(capfd, "schedules", "bulk", "patch", "--tag", "billing", "--url", url)
    assert (code, err) == (1, "scheduler: bulk patch needs --patch: the fields to change\n")
    assert api.queued() == 0
    assert set(statuses(api).values()) == {"active"}
