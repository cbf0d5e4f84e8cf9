"""A schedule's ``calendar`` through the API (issue 27 item 3): names only the tenant's own
calendars (``calendar.exclude.<i>`` otherwise), its times shifted in the create's answer, the
preview, a read and a backfill; a calendar's change re-plans the schedules naming it; a
calendar in use is not deleted (409 naming them)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from polling_worker.worker import Poller
from shared.timeutil import UTC
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME = {"X-API-Key": "sk_acme_admin_0123456789abcdef"}
GLOBEX = {"X-API-Key": "sk_globex_admin_0123456789abcdef"}
KEYS = (f"acme/admin:{ACME['X-API-Key']}", f"globex/admin:{GLOBEX['X-API-Key']}")
CALENDARS = f"{API}/calendars"
# Thursdays 09:00 in Berlin; the year end's holidays (Th 24 and Th 31 December 2026).
THURSDAYS = {"cron": "0 9 * * 4", "timezone": "Europe/Berlin", "start": "2026-12-01T00:00:00"}
HOLIDAYS = ["2026-12-24", "2026-12-25", "2026-12-31", "2027-01-01"]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        # The week before Christmas 2026, whatever the day the test runs.
        at = datetime(2026, 12, 21, 12, 0, tzinfo=UTC)
        under_test.clock.offset = at - datetime.now(UTC)
        yield under_test


def body(shift: str = "next_business_day", *names: str) -> dict[str, Any]:
    return {
        "name": "weekly report",
        "schedule": THURSDAYS,
        "calendar": {"exclude": list(names or ("holidays",)), "shift": shift},
        "payload": {"method": "POST", "url": "https://hooks.example.com/report"},
    }


def make_calendar(api: ApiUnderTest, headers: dict[str, str] = ACME, **fields: Any) -> None:
    made = api.client.post(
        CALENDARS, json={"name": "holidays", "dates": HOLIDAYS, **fields}, headers=headers
    )
    assert made.status_code == 201, made.get_json()


def errors_of(answer: Any) -> dict[str, str]:
    assert answer.status_code == 400, answer.get_json()
    return {item["field"]: item["message"] for item in answer.get_json()["errors"]}


def test_a_schedule_names_only_calendars_its_tenant_has(api: ApiUnderTest) -> None:
    make_calendar(api, GLOBEX)  # globex's, of the same name: not acme's to use
    refused = api.client.put(f"{API}/schedule/report", json=body(), headers=ACME)
    assert errors_of(refused) == {
        "calendar.exclude.0": "no calendar 'holidays': make it with POST /calendars"
    }
    make_calendar(api)
    # Each name is named by its place in the body as sent, as every list item is.
    refused = api.client.put(
        f"{API}/schedule/report", json=body("skip", "holidays", "closures"), headers=ACME
    )
    assert list(errors_of(refused)) == ["calendar.exclude.1"]
    refused = api.client.put(
        f"{API}/schedule/report",
        json=body("skip", "holidays", "holidays", "closures"),
        headers=ACME,
    )
    assert errors_of(refused) == {"calendar.exclude.1": "'holidays' is named already"}
    for calendar, field in (
        ({"exclude": []}, "calendar.exclude"),
        ({"exclude": ["holidays"], "shift": "sometimes"}, "calendar.shift"),
        ({"exclude": ["holidays"], "skip": True}, "calendar.skip"),
        ({"exclude": ["no such name!"]}, "calendar.exclude.0"),
        ({"exclude": [f"c{n}" for n in range(11)]}, "calendar.exclude"),
    ):
        answer = api.client.put(
            f"{API}/schedule/report", json={**body(), "calendar": calendar}, headers=ACME
        )
        assert field in errors_of(answer), (calendar, answer.get_json())
    assert api.client.get(f"{API}/schedule/report", headers=ACME).status_code == 404


def test_the_create_the_read_and_the_preview_give_the_shifted_times(api: ApiUnderTest) -> None:
    make_calendar(api)
    created = api.client.put(f"{API}/schedule/report", json=body(), headers=ACME)
    assert created.status_code == 202, created.get_json()
    # Th 24 December is a holiday: Monday 28 at 09:00 CET.
    assert created.get_json()["next_schedule_time"] == "2026-12-28T08:00:00.000Z"
    api.apply()
    read = api.client.get(f"{API}/schedule/report", headers=ACME).get_json()
    assert read["calendar"] == {"exclude": ["holidays"], "shift": "next_business_day"}
    assert read["next_schedule_time"] == "2026-12-28T08:00:00.000Z"
    preview = api.client.post(
        f"{API}/schedule/preview",
        json={"schedule": THURSDAYS, "calendar": body("previous_business_day")["calendar"]},
        headers=ACME,
    ).get_json()
    assert [item["utc"] for item in preview["occurrences"][:3]] == [
        "2026-12-23T08:00:00.000Z",
        "2026-12-30T08:00:00.000Z",
        "2027-01-07T08:00:00.000Z",
    ]
    # A preview naming another tenant's calendar learns nothing of it.
    refused = api.client.post(
        f"{API}/schedule/preview",
        json={"schedule": THURSDAYS, "calendar": body()["calendar"]},
        headers=GLOBEX,
    )
    assert "calendar.exclude.0" in errors_of(refused)


def test_a_schedule_that_never_fires_on_a_business_day_is_refused(api: ApiUnderTest) -> None:
    make_calendar(api)
    saturdays = {**body("skip"), "schedule": {"cron": "0 9 * * 6", "timezone": "Europe/Berlin"}}
    errors = errors_of(api.client.put(f"{API}/schedule/report", json=saturdays, headers=ACME))
    assert errors == {
        "calendar": "the schedule never fires on a business day: each of its times falls on a "
        "day off and shift is skip"
    }


def test_a_patch_adds_changes_and_removes_the_calendar(api: ApiUnderTest) -> None:
    make_calendar(api)
    plain = {key: value for key, value in body().items() if key != "calendar"}
    assert api.client.put(f"{API}/schedule/report", json=plain, headers=ACME).status_code == 202
    api.apply()
    url = f"{API}/schedule/report"
    patched = api.client.patch(url, json={"calendar": {"exclude": ["holidays"]}}, headers=ACME)
    assert patched.status_code == 202, patched.get_json()
    assert patched.get_json()["next_schedule_time"] == "2027-01-07T08:00:00.000Z"  # skip
    api.apply()
    shifted = api.client.patch(
        url, json={"calendar": {"shift": "previous_business_day"}}, headers=ACME
    )
    assert shifted.get_json()["next_schedule_time"] == "2026-12-23T08:00:00.000Z"
    api.apply()
    removed = api.client.patch(url, json={"calendar": None}, headers=ACME)
    assert removed.get_json()["next_schedule_time"] == "2026-12-24T08:00:00.000Z"
    api.apply()
    assert api.client.get(url, headers=ACME).get_json()["calendar"] is None


def test_a_calendar_in_use_is_not_deleted_and_names_its_schedules(api: ApiUnderTest) -> None:
    make_calendar(api)
    for name in ("report", "digest"):
        assert api.client.put(f"{API}/schedule/{name}", json=body(), headers=ACME).status_code == (
            202
        )
    api.apply()
    refused = api.client.delete(f"{CALENDARS}/holidays", headers=ACME)
    assert refused.status_code == 409
    assert refused.get_json()["detail"] == (
        "2 schedule(s) name calendar 'holidays' in calendar.exclude (digest, report): remove it "
        "from them first"
    )
    # Another tenant's calendar of the same name is free to go: nothing of it is in use.
    make_calendar(api, GLOBEX)
    assert api.client.delete(f"{CALENDARS}/holidays", headers=GLOBEX).status_code == 204
    for name in ("report", "digest"):
        assert api.client.delete(f"{API}/schedule/{name}", headers=ACME).status_code == 202
    assert api.client.delete(f"{CALENDARS}/holidays", headers=ACME).status_code == 204


def test_a_calendars_change_brings_the_next_time_of_its_schedules_back_to_be_computed(
    api: ApiUnderTest,
) -> None:
    make_calendar(api)
    assert api.client.put(f"{API}/schedule/report", json=body(), headers=ACME).status_code == 202
    api.apply()
    store = api.backends.store
    before = store.get_schedule("acme", "report")
    assert before is not None and before.next_schedule_time == datetime(2026, 12, 28, 8, tzinfo=UTC)
    # Christmas Eve is a working day after all.
    asked = api.clock.now()
    replaced = api.client.put(f"{CALENDARS}/holidays", json={"dates": HOLIDAYS[1:]}, headers=ACME)
    assert replaced.status_code == 200
    after = store.get_schedule("acme", "report")
    assert after is not None and after.next_schedule_time is not None
    assert asked <= after.next_schedule_time <= api.clock.now()
    # The poller's next plan computes it with the new dates: Thursday 24 at 09:00.
    poller = Poller(store, api.backends.queues.occurrences, api.settings, api.clock)
    poller.poll_once()
    planned = store.get_schedule("acme", "report")
    assert planned is not None
    assert planned.next_schedule_time == datetime(2026, 12, 24, 8, tzinfo=UTC)


def test_a_backfill_runs_the_times_the_calendar_gave(api: ApiUnderTest) -> None:
    make_calendar(api)
    api.clock.offset += timedelta(days=20)  # 2027-01-10
    assert api.client.put(f"{API}/schedule/report", json=body(), headers=ACME).status_code == 202
    api.apply()
    done = api.client.post(
        f"{API}/schedule/report/backfill",
        json={"from": "2026-12-20T00:00:00Z", "to": "2027-01-10T00:00:00Z"},
        headers=ACME,
    )
    assert done.status_code == 202, done.get_json()
    assert done.get_json()["queued"] == [
        "report:2026-12-28T08:00:00.000Z",
        "report:2027-01-04T08:00:00.000Z",
        "report:2027-01-07T08:00:00.000Z",
    ]


def test_a_skip_names_the_times_the_calendar_gives(api: ApiUnderTest) -> None:
    # Thursdays 09:00 Berlin, moved to the next business day: Th 24 December (a holiday) fires
    # Monday 28, Th 31 December Monday 4 January (Friday 1 is a holiday too), then Th 7.
    make_calendar(api)
    assert api.client.put(f"{API}/schedule/report", json=body(), headers=ACME).status_code == 202
    api.apply()
    skip = f"{API}/schedule/report/skip"
    refused = api.client.post(skip, json={"at": "2026-12-24T08:00:00Z"}, headers=ACME)
    assert errors_of(refused) == {
        "at": "2026-12-24T08:00:00.000Z is not an occurrence of this schedule (the next is "
        "2026-12-28T08:00:00.000Z)"
    }
    skipped = api.client.post(skip, json={"at": "2026-12-28T08:00:00Z"}, headers=ACME)
    assert skipped.status_code == 202, skipped.get_json()
    assert skipped.get_json()["skips"] == ["2026-12-28T08:00:00.000Z"]
    assert api.client.delete(skip, headers=ACME).status_code == 202
    counted = api.client.post(skip, json={"count": 3}, headers=ACME)
    assert counted.status_code == 202, counted.get_json()
    assert counted.get_json()["skips"] == [
        "2026-12-28T08:00:00.000Z",
        "2027-01-04T08:00:00.000Z",
        "2027-01-07T08:00:00.000Z",
    ]


@pytest.mark.parametrize(
    ("shift", "end", "until", "status"),
    [
        # Ending with 2026: Th 24 December moves to Monday 28, Th 31 December to Monday
        # 4 January, past the end: nothing is left after the 28th.
        ("next_business_day", "2027-01-01T00:00:00", "2026-12-29T00:00:00Z", 400),
        ("next_business_day", "2027-01-01T00:00:00", "2026-12-27T00:00:00Z", 202),
        # Ending before Th 31 December 00:00: its 09:00, moved back to Wednesday 30, still fires.
        ("previous_business_day", "2026-12-31T00:00:00", "2026-12-28T00:00:00Z", 202),
        ("previous_business_day", "2026-12-31T00:00:00", "2026-12-30T09:00:00Z", 400),
    ],
)
def test_a_pause_until_is_refused_only_after_the_last_time_the_calendar_gives(
    api: ApiUnderTest, shift: str, end: str, until: str, status: int
) -> None:
    make_calendar(api)
    ending = {**body(shift), "schedule": {**THURSDAYS, "end": end}}
    assert api.client.put(f"{API}/schedule/report", json=ending, headers=ACME).status_code == 202
    api.apply()
    paused = api.client.post(
        f"{API}/schedule/report/pause", json={"until": until, "note": "year end"}, headers=ACME
    )
    assert paused.status_code == status, paused.get_json()
    if status == 400:
        assert errors_of(paused) == {
            "until": f"{until[:-1]}.000Z is after the schedule's last occurrence: delete it"
        }
    else:
        assert paused.get_json()["paused_until"] == f"{until[:-1]}.000Z"
