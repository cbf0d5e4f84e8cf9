"""The console for daily work: search, sort, row and bulk actions; a schedule's history by page
and status; its definition in words; times with how far they are; dead letters by name, with
a filter and bulk replay or discard; a form of every field; backfill.

(tests/browser drives the same pages in Chromium, at 390 px too.)
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduler_service.console.presenting import relative, status_word, wall
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence, OverlapPolicy
from shared.ports import Advance, ClaimRequest
from shared.timeutil import UTC, iso_z
from tests.integration.console.test_console import (
    ACME_KEY,
    CONFIRMED,
    GLOBEX_KEY,
    KEY_HEADER,
    errors_beside_fields,
    form,
    listed,
    log_in,
    text,
)
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        log_in(api.client, ACME_KEY)
        yield api


def create(api: ApiUnderTest, schedule_id: str, **values: str) -> None:
    answer = api.client.post("/console/schedules/new", data=form(id=schedule_id, **values))
    assert answer.status_code == 303, errors_beside_fields(text(answer))


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([^"]+)"', html)


def notice(html: str) -> str:
    found = re.search(r'<p class="notice" id="done">(.*?)</p>', html, re.S)
    assert found is not None, "no notice"
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_the_list_searches_name_tag_and_url_host_and_sorts_either_way(api: ApiUnderTest) -> None:
    create(
        api,
        "a1",
        name="Nightly report",
        tags="",
        **{"payload.url": "https://billing.example.com/r"},
    )
    create(
        api, "b2", name="cleanup", tags="reports", **{"payload.url": "https://ops.example.org/c"}
    )
    create(
        api,
        "c3",
        name="weekly REPORT",
        tags="",
        **{"payload.url": "https://ops.example.org/w?k=s3"},
    )
    create(api, "d4", name="zzz", tags="other")
    api.apply()
    assert rows(text(api.client.get("/console/schedules"))) == ["b2", "a1", "c3", "d4"]
    assert rows(text(api.client.get("/console/schedules?sort=-name"))) == ["d4", "c3", "a1", "b2"]
    assert rows(text(api.client.get("/console/schedules?q=report"))) == ["a1", "c3"]
    assert rows(text(api.client.get("/console/schedules?q=reports"))) == ["b2"]  # a tag
    assert rows(text(api.client.get("/console/schedules?q=ops.example.org"))) == ["b2", "c3"]
    pasted = text(api.client.get("/console/schedules?q=https://billing.example.com/other"))
    assert rows(pasted) == ["a1"]
    assert rows(text(api.client.get("/console/schedules?q=k%3Ds3"))) == []  # sealed
    page = text(api.client.get("/console/schedules?q=ops"))
    assert "POST ops.example.org/c" in page and 'class="tag"' in page  # the URL and tags
    sorted_ids = rows(text(api.client.get("/console/schedules?sort=-created")))
    assert sorted(sorted_ids) == ["a1", "b2", "c3", "d4"]
    for bad in ("sort=sideways", "per_page=7", "status=sleeping", "q=" + "x" * 201):
        answer = api.client.get(f"/console/schedules?{bad}")
        assert answer.status_code == 400 and bad.partition("=")[0] in errors_beside_fields(
            text(answer)
        )


def test_a_sorted_list_pages_in_its_order_and_refuses_another_orders_cursor(
    api: ApiUnderTest,
) -> None:
    for number in range(30):
        create(api, f"s{number:02}", name=f"job {number:02}")
    api.apply()
    first = text(api.client.get("/console/schedules?sort=-name&per_page=25"))
    assert rows(first) == [f"s{number:02}" for number in range(29, 4, -1)]
    link = re.search(r'id="next-page" href="([^"]+)"', first)
    assert link is not None and "sort=-name" in unescape(link.group(1))
    second = text(api.client.get(unescape(link.group(1))))
    assert rows(second) == ["s04", "s03", "s02", "s01", "s00"]
    cursor = parse_qs(urlsplit(unescape(link.group(1))).query)["cursor"][0]
    other = api.client.get("/console/schedules", query_string={"cursor": cursor, "sort": "name"})
    assert other.status_code == 400 and "cursor" in errors_beside_fields(text(other))


def test_bulk_pause_resume_and_delete_the_tenants_ticked_schedules(api: ApiUnderTest) -> None:
    for schedule_id in ("a", "b", "c"):
        create(api, schedule_id, name=f"job {schedule_id}")
    api.apply()
    globex = api.app.test_client()
    log_in(globex, GLOBEX_KEY)
    globex.post("/console/schedules/new", data=form(id="theirs"))
    api.apply()
    back = "/console/schedules?q=job&sort=-name"
    paused = api.client.post(
        "/console/schedules/bulk",
        data={"action": "pause", "id": ["a", "b", "theirs"], "next": back},
    )
    assert paused.status_code == 303
    target = urlsplit(paused.headers["Location"])
    query = parse_qs(target.query)
    assert query["q"] == ["job"] and query["sort"] == ["-name"]  # back to the same list
    assert query["bulk"] == ["pause"] and query["done"] == ["2"] and query["missing"] == ["theirs"]
    said = notice(text(api.client.get(paused.headers["Location"])))
    assert "Paused 2 schedules" in said and "theirs" in said
    paused_page = text(api.client.get("/console/schedules?status=paused"))
    assert rows(paused_page) == ["a", "b"]
    theirs = globex.get("/console/schedules/theirs")
    assert 'data-status="active"' in text(theirs)

    resumed = api.client.post("/console/schedules/bulk", data={"action": "resume", "id": ["a"]})
    assert resumed.status_code == 303
    assert rows(text(api.client.get("/console/schedules?status=active"))) == ["a", "c"]

    asked = api.client.post("/console/schedules/bulk", data={"action": "delete", "id": ["a", "c"]})
    assert asked.status_code == 200
    assert "Delete 2 schedules for good?" in text(asked)
    assert re.findall(r"<li>([^<]+)</li>", text(asked)) == ["job a", "job c"]
    assert rows(text(api.client.get("/console/schedules"))) == ["a", "b", "c"]
    deleted = api.client.post(
        "/console/schedules/bulk", data={"action": "delete", "id": ["a", "c"], **CONFIRMED}
    )
    assert deleted.status_code == 303
    assert rows(text(api.client.get("/console/schedules"))) == ["b"]

    too_many = api.client.post(
        "/console/schedules/bulk", data={"action": "pause", "id": [f"x{n}" for n in range(201)]}
    )
    assert too_many.status_code == 400 and "At most 200" in text(too_many)
    unknown = api.client.post("/console/schedules/bulk", data={"action": "trigger", "id": ["b"]})
    assert unknown.status_code == 400
    elsewhere = api.client.post(
        "/console/schedules/bulk",
        data={"action": "delete", "id": ["b"], **CONFIRMED},
        headers={"Origin": "https://evil.test"},
    )
    assert elsewhere.status_code == 403
    assert rows(text(api.client.get("/console/schedules"))) == ["b"]


def test_row_actions_go_back_to_the_list_they_were_taken_from(api: ApiUnderTest) -> None:
    create(api, "row")
    api.apply()
    page = text(api.client.get("/console/schedules?q=nightly"))
    pause = re.search(r'formaction="(/console/schedules/row/pause)"', page)
    assert pause is not None and 'name="next" value="/console/schedules?q=nightly"' in page
    answer = api.client.post(pause.group(1), data={"next": "/console/schedules?q=nightly"})
    assert answer.headers["Location"] == "/console/schedules?q=nightly"
    away = api.client.post("/console/schedules/row/resume", data={"next": "https://evil.test/"})
    assert away.headers["Location"] == "/console/schedules/row"
    gone = api.client.post(
        "/console/schedules/row/delete", data={"next": "/console/schedules?q=x", **CONFIRMED}
    )
    assert gone.headers["Location"] == "/console/schedules?q=x&deleted=row"


def record(api: ApiUnderTest, schedule_id: str, moment: datetime, status: ExecutionStatus) -> str:
    """An occurrence of the schedule at ``moment`` that ended in ``status``."""
    stored = api.backends.store.get_schedule("acme", schedule_id)
    assert stored is not None
    occurrence = Occurrence("acme", schedule_id, stored.revision, moment)
    started = moment + timedelta(milliseconds=20)
    execution = api.backends.store.begin_attempt(
        occurrence, "x", started, started + timedelta(seconds=30)
    )
    assert execution is not None
    code = 200 if status is ExecutionStatus.SUCCEEDED else 503
    outcome = AttemptOutcome(status, started + timedelta(milliseconds=40), answer=Answer(code))
    assert api.backends.store.finish_attempt(execution, "x", outcome)
    return occurrence.occurrence_id


def test_the_history_pages_through_every_run_and_filters_by_status(api: ApiUnderTest) -> None:
    create(api, "busy")
    api.apply()
    start = api.clock.now().replace(microsecond=0) - timedelta(hours=2)
    ids = [
        record(
            api,
            "busy",
            start + timedelta(minutes=minute),
            ExecutionStatus.FAILED if minute % 4 == 0 else ExecutionStatus.SUCCEEDED,
        )
        for minute in range(60)
    ]
    newest_first = list(reversed(ids))

    def runs(html: str) -> list[str]:
        return [unescape(found) for found in re.findall(r'href="/console/runs/([^"]+)"', html)]

    first = text(api.client.get("/console/schedules/busy/history"))
    assert [unquote(i) for i in runs(first)] == newest_first[:50]
    older = re.search(r'id="next-page" href="([^"]+)"', first)
    assert older is not None
    second = text(api.client.get(unescape(older.group(1))))
    assert [unquote(i) for i in runs(second)] == newest_first[50:]
    assert 'id="next-page"' not in second
    failed = text(api.client.get("/console/schedules/busy/history?status=failed"))
    assert [unquote(i) for i in runs(failed)] == [i for i in newest_first if ids.index(i) % 4 == 0]
    assert set(re.findall(r'<tr class="run" data-status="([a-z]+)"', failed)) == {"failed"}
    assert "No run in this status" in text(
        api.client.get("/console/schedules/busy/history?status=retrying")
    )
    for bad in ("status=lost", "cursor=nonsense"):
        answer = api.client.get(f"/console/schedules/busy/history?{bad}")
        assert answer.status_code == 400
    # The schedule's page shows the latest 25 and links to the rest.
    page = text(api.client.get("/console/schedules/busy"))
    assert page.count('<tr class="run"') == 25 and 'id="all-runs"' in page
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert other.get("/console/schedules/busy/history").status_code == 404


def unquote(found: str) -> str:
    return found.replace("%3A", ":")


def test_the_definition_reads_as_words_with_the_raw_json_a_click_away(api: ApiUnderTest) -> None:
    create(
        api,
        "worded",
        **{
            "payload.queryParameters": '{"token": "abc123secretvalue0000000000", "day": "mon"}',
            "jitter_seconds": "30",
            "overlap": "skip",
            "pause_after_failures": "3",
            "misfire.grace_seconds": "60",
            "metadata": '{"team": "billing"}',
        },
    )
    api.apply()
    page = text(api.client.get("/console/schedules/worded"))
    summary = re.search(r'<div id="definition-summary".*?</div>', page, re.S)
    assert summary is not None
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", unescape(summary.group(0))))
    for expected in (
        "fires At 02:00 every day, Europe/Paris",
        "cron line 0 2 * * *",
        "time zone Europe/Paris",
        "missed runs one run fires for all that were missed; a call more than 60 s late is skipped",
        "jitter each call up to 30 s late",
        "overlap a run due while an earlier one is in progress is skipped",
        "request POST https://example.com/report",
        "query parameters token: ********, day: mon",
        "headers Authorization: ********, X-Team: ops",
        "attempts up to 3, waiting 1 s doubling to at most 300 s between them",
        "pauses itself after 3 failed occurrences in a row",
        "failures reported to nowhere",
        "tags reports, nightly",
        'metadata {"team": "billing"}',
    ):
        assert expected in words, expected
    assert "s3cret" not in page and "abc123secret" not in page
    raw = re.search(r'<details id="raw">.*?<pre id="definition">(.*?)</pre>', page, re.S)
    assert raw is not None
    shown = json.loads(unescape(raw.group(1)))
    answer = api.client.get(f"{API}/schedule/worded", headers=KEY_HEADER).get_json()
    assert list(shown) == list(answer)  # the API's order, not alphabetical
    assert {key: value for key, value in shown.items() if key != "next_schedule_time"} == {
        key: value for key, value in answer.items() if key != "next_schedule_time"
    }


def test_times_are_given_with_how_far_they_are_in_one_format() -> None:
    now = datetime(2026, 5, 1, 7, 0, 0, tzinfo=UTC)
    assert relative("2026-05-01T07:03:10.000Z", now) == "in 3 min"
    assert relative("2026-05-01T06:59:59.500Z", now) == "now"
    assert relative("2026-05-01T05:00:00.000Z", now) == "2 h ago"
    assert relative("2026-05-01T05:30:00.000Z", now) == "90 min ago"
    assert relative("2026-05-04T07:00:00.000Z", now) == "in 3 d"
    assert relative("2026-05-02T19:00:00.000Z", now) == "in 36 h"
    assert relative("2026-05-01T07:00:42.000Z", now) == "in 42 s"
    assert wall("2026-05-01T12:30:00+05:30") == "2026-05-01 12:30:00 +05:30"
    assert wall("2026-05-01T07:00:00+00:00") == "2026-05-01 07:00:00 UTC"
    assert wall("2026-05-01T12:30:00.250+05:30") == "2026-05-01 12:30:00 +05:30"
    assert wall("2026-05-01T07:00:00.250+00:00") == "2026-05-01 07:00:00 UTC"


def test_pages_show_each_time_in_utc_with_how_far_it_is(api: ApiUnderTest) -> None:
    # Away from a five-minute boundary, so that the next time is still ahead when the page is read.
    now = api.clock.now()
    api.clock.advance(300 - (now.minute % 5 * 60 + now.second) % 300 + 60)
    create(api, "timed", **{"schedule.cron": "*/5 * * * *"})
    api.apply()
    page = text(api.client.get("/console/schedules"))
    shown = re.search(
        r'<time datetime="([^"]+Z)" data-when [^>]*><span class="abs">([^<]+)</span> '
        r'<span class="rel">([^<]+)</span></time>',
        page,
    )
    assert shown is not None
    moment = datetime.fromisoformat(shown.group(1).replace("Z", "+00:00"))
    assert shown.group(2) == moment.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert re.fullmatch(r"in \d+ (s|min)", shown.group(3))
    schedule = text(api.client.get("/console/schedules/timed"))
    times = re.findall(r"data-zone-time>([^<]+)</time>", schedule)
    assert len(times) == 10 and all(re.fullmatch(r"\S+ \S+ \+0[12]:00", t) for t in times)


def test_a_one_shot_whose_only_run_failed_shows_failed_not_completed(api: ApiUnderTest) -> None:
    at = (api.clock.now() + timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S")
    create(api, "once", notation="at", **{"schedule.at": at, "schedule.timezone": "UTC"})
    api.apply()
    store = api.backends.store
    now = api.clock.now()
    claimed = store.claim_due_schedules(
        ClaimRequest(now + timedelta(hours=1), now, 10, "p", now + timedelta(minutes=1))
    )
    assert [s.schedule_id for s in claimed] == ["once"]
    assert store.advance_schedules([Advance(claimed[0], None, 1)], "p", now) == [True]
    store.record_run("acme", "once", succeeded=False, at=now)
    answer = api.client.get(f"{API}/schedule/once", headers=KEY_HEADER).get_json()
    assert (answer["status"], answer["last_status"]) == ("completed", "failed")  # the API's
    listed_page = text(api.client.get("/console/schedules"))
    row = re.search(r'<tr data-id="once">.*?</tr>', listed_page, re.S)
    assert row is not None
    assert re.search(
        r'<span class="status status-failed" title="nothing left to fire, and its last run '
        r'failed" data-status="failed">failed</span>',
        row.group(0),
    )
    assert re.search(
        r"<h1>[^<]*<span [^>]*data-status=\"failed\"",
        text(api.client.get("/console/schedules/once")),
    )
    assert status_word({"status": "completed", "last_status": "succeeded"}).word == "completed"
    assert status_word({"status": "active", "last_status": "failed"}).word == "active"


def dead_letter(api: ApiUnderTest, schedule_id: str, minutes_ago: int, tenant: str = "acme") -> str:
    moment = api.clock.now().replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)
    stored = api.backends.store.get_schedule(tenant, schedule_id)
    assert stored is not None
    occurrence = Occurrence(tenant, schedule_id, stored.revision, moment)
    execution = api.backends.store.begin_attempt(occurrence, "x", moment, moment + timedelta(1))
    assert execution is not None
    outcome = AttemptOutcome(ExecutionStatus.FAILED, moment, answer=Answer(410), error="HTTP 410")
    api.backends.store.finish_attempt(execution, "x", outcome)
    return occurrence.occurrence_id


def test_dead_letters_by_name_filtered_and_replayed_or_discarded_together(
    api: ApiUnderTest,
) -> None:
    create(api, "inv", name="Invoices run")
    create(api, "rep", name="Reports run", **{"payload.url": "https://reports.example.net/x"})
    api.apply()
    invoices = [dead_letter(api, "inv", minutes) for minutes in (1, 3)]
    reports = [dead_letter(api, "rep", minutes) for minutes in (2, 4)]
    page = text(api.client.get("/console/dead-letters"))
    assert listed(page) == [invoices[0], reports[0], invoices[1], reports[1]]
    names = re.findall(r'<a class="name" href="/console/schedules/(\w+)">([^<]+)</a>', page)
    assert names == [("inv", "Invoices run"), ("rep", "Reports run")] * 2
    assert listed(text(api.client.get("/console/dead-letters?schedule=invoices"))) == invoices
    assert listed(text(api.client.get("/console/dead-letters?schedule=rep"))) == reports
    by_host = text(api.client.get("/console/dead-letters?schedule=reports.example.net"))
    assert listed(by_host) == reports
    assert "No dead letter of these schedules" in text(
        api.client.get("/console/dead-letters?schedule=nothing-like-it")
    )

    globex = api.app.test_client()
    log_in(globex, GLOBEX_KEY)
    globex.post("/console/schedules/new", data=form(id="theirs"))
    api.apply()
    theirs = dead_letter(api, "theirs", 1, tenant="globex")
    replayed = api.client.post(
        "/console/dead-letters/bulk",
        data={
            "action": "replay",
            "id": [invoices[0], reports[0], theirs],
            "next": "/console/dead-letters?schedule=run",
        },
    )
    assert replayed.status_code == 303
    assert urlsplit(replayed.headers["Location"]).path == "/console/dead-letters"
    said = notice(text(api.client.get(replayed.headers["Location"])))
    assert said.startswith("Replayed 2; 1 were no longer dead letters")
    assert api.occurrences_queued() == 2
    assert listed(text(globex.get("/console/dead-letters"))) == [theirs]

    asked = api.client.post(
        "/console/dead-letters/bulk", data={"action": "discard", "id": invoices[1:] + reports[1:]}
    )
    assert asked.status_code == 200 and "Discard 2 dead letters?" in text(asked)
    assert listed(text(api.client.get("/console/dead-letters"))) == [invoices[1], reports[1]]
    discarded = api.client.post(
        "/console/dead-letters/bulk",
        data={"action": "discard", "id": invoices[1:] + reports[1:], **CONFIRMED},
    )
    assert discarded.status_code == 303
    assert notice(text(api.client.get(discarded.headers["Location"]))) == "Discarded 2."
    assert listed(text(api.client.get("/console/dead-letters"))) == []


EVERY_FIELD = {
    "name": "every field",
    "description": "all of it",
    "tags": "a, b",
    "notation": "at",
    "schedule.at": "2031-03-30T02:30",
    "schedule.timezone": "Europe/Paris",
    "misfire.policy": "skip",
    "misfire.grace_seconds": "90",
    "jitter_seconds": "12.5",
    "overlap": "buffer_one",
    "payload.method": "PUT",
    "payload.url": "https://hooks.example.com/every",
    "payload.queryParameters": '{"day": "mon", "api_key": "k-123"}',
    "payload.headers": '{"X-Team": "ops"}',
    "payload.body": '{"n": 1}',
    "payload.timeout_seconds": "7.5",
    "payload.calls_per_host": "4",
    "retry.max_attempts": "7",
    "retry.backoff_seconds": "2",
    "retry.max_backoff_seconds": "60",
    "pause_after_failures": "5",
    "on_failure.url": "https://alerts.example.com/hook",
    "on_failure.headers": '{"Authorization": "Bearer alert-token"}',
    "priority": "8",
    "metadata": '{"owner": "ops", "n": 2}',
}


def test_the_form_sets_every_field_and_an_edit_shows_and_keeps_them(api: ApiUnderTest) -> None:
    created = api.client.post("/console/schedules/new", data={"id": "every", **EVERY_FIELD})
    assert created.status_code == 303, errors_beside_fields(text(created))
    api.apply()
    stored = api.backends.store.get_schedule("acme", "every")
    assert stored is not None
    definition = stored.live_definition
    # A wall time in its zone.
    assert (definition.timing.kind, definition.timing.value) == ("at", datetime(2031, 3, 30, 2, 30))
    assert definition.timing.timezone == "Europe/Paris"
    assert (definition.misfire.policy.value, definition.misfire.grace_seconds) == ("skip", 90)
    assert definition.jitter_seconds == 12.5 and definition.pause_after_failures == 5
    assert definition.overlap is OverlapPolicy.BUFFER_ONE
    payload = definition.payload
    assert (payload.method, payload.timeout_seconds, payload.calls_per_host) == ("PUT", 7.5, 4)
    assert payload.query == {"day": "mon", "api_key": "k-123"} and payload.body == {"n": 1}
    assert definition.retry.to_document() == {
        "max_attempts": 7,
        "backoff_seconds": 2.0,
        "max_backoff_seconds": 60.0,
    }
    assert definition.on_failure is not None
    assert definition.on_failure.headers == {"Authorization": "Bearer alert-token"}
    assert (definition.priority, definition.tags) == (8, ("a", "b"))
    assert definition.metadata == {"owner": "ops", "n": 2}
    # The schedule page shows the priority with what it does.
    page = unescape(text(api.client.get("/console/schedules/every")))
    shown = re.search(r"<dt>priority</dt><dd>([^<]*)</dd>", page)
    assert shown is not None and shown.group(1).startswith("8 of 0 to 9: ")
    assert "the higher goes first" in shown.group(1)

    edit = text(api.client.get("/console/schedules/every/edit"))
    values = {
        name: unescape(value)
        for name, value in re.findall(r'name="([^"]+)" type="[a-z-]+" value="([^"]*)"', edit)
    }
    areas = {
        name: unescape(value)
        for name, value in re.findall(r'name="([^"]+)" rows="3"[^>]*>([^<]*)</textarea>', edit)
    }
    assert values["schedule.at"] == "2031-03-30T02:30:00"
    assert values["jitter_seconds"] == "12.5" and values["misfire.grace_seconds"] == "90"
    assert values["on_failure.url"] == "https://alerts.example.com/hook"
    assert "alert-token" not in edit and "k-123" not in edit
    assert json.loads(areas["payload.queryParameters"]) == {"day": "mon", "api_key": "********"}
    assert re.search(r'<option value="Europe/Paris" selected>', edit)
    assert '<option value="skip" selected>' in edit
    assert '<option value="buffer_one" selected>' in edit
    # Sent back as shown (masked), nothing changes.
    sent = {
        **values,
        **areas,
        "notation": "at",
        "misfire.policy": "skip",
        "overlap": "buffer_one",
        "payload.method": "PUT",
        "schedule.timezone": "Europe/Paris",
    }
    saved = api.client.post("/console/schedules/every/edit", data=sent)
    assert saved.status_code == 303, errors_beside_fields(text(saved))
    api.apply()
    again = api.backends.store.get_schedule("acme", "every")
    assert again is not None and again.revision > stored.revision
    assert again.live_definition.payload == payload
    assert again.live_definition.on_failure == definition.on_failure
    assert again.live_definition.retry == definition.retry
    assert again.live_definition.overlap is OverlapPolicy.BUFFER_ONE
    # Emptied, an input is the API's default (null where null means never).
    cleared = api.client.post(
        "/console/schedules/every/edit",
        data={**sent, "pause_after_failures": "", "on_failure.url": "", "on_failure.headers": ""},
    )
    assert cleared.status_code == 303, errors_beside_fields(text(cleared))
    api.apply()
    last = api.backends.store.get_schedule("acme", "every")
    assert last is not None
    assert last.live_definition.pause_after_failures is None
    assert last.live_definition.on_failure is None


def test_the_blueprint_form_uses_date_and_time_pickers(api: ApiUnderTest) -> None:
    body = {
        "name": "seed",
        "schedule": {
            "start_date": "05/02/2030",
            "end_date": "05/04/2030",
            "timeZone": "Asia/Calcutta",
            "time_of_day": "11:53",
            "am_pm": "PM",
            "repeat_interval": {"number": 2, "unit": "minute"},
        },
        "payload": {"method": "POST", "url": "https://example.com/seed"},
    }
    api.client.put(f"{API}/schedule/seed", json=body, headers=KEY_HEADER)
    api.apply()
    edit = text(api.client.get("/console/schedules/seed/edit"))
    assert 'name="schedule.start_date" type="date" value="2030-05-02"' in edit
    assert 'name="schedule.time_of_day" type="time" value="23:53"' in edit
    # A zone link the list may not hold is kept, and chosen.
    assert '<option value="Asia/Calcutta" selected>' in edit
    saved = api.client.post(
        "/console/schedules/seed/edit",
        data={
            "notation": "blueprint",
            "schedule.start_date": "2030-05-02",
            "schedule.end_date": "2030-05-04",
            "schedule.time_of_day": "23:53",
            "schedule.timeZone": "Asia/Calcutta",
            "schedule.repeat_interval.number": "2",
            "schedule.repeat_interval.unit": "minute",
        },
    )
    assert saved.status_code == 303, errors_beside_fields(text(saved))
    api.apply()
    stored = api.backends.store.get_schedule("acme", "seed")
    assert stored is not None
    sent = stored.live_definition.request["schedule"]
    assert (sent["start_date"], sent["time_of_day"]) == ("05/02/2030", "23:53")
    assert stored.live_definition.timing.start == datetime(2030, 5, 2, 23, 53)


def test_a_backfill_from_the_console_runs_what_did_not_run(api: ApiUnderTest) -> None:
    create(api, "every10", **{"schedule.cron": "*/10 * * * *", "schedule.timezone": "UTC"})
    api.apply()
    form_page = text(api.client.get("/console/schedules/every10/backfill"))
    assert '<option value="UTC" selected>' in form_page
    now = api.clock.now()
    end = now.replace(minute=now.minute - now.minute % 10, second=0, microsecond=0)
    start = end - timedelta(hours=1)
    ran = record(api, "every10", start, ExecutionStatus.SUCCEEDED)
    answer = api.client.post(
        "/console/schedules/every10/backfill",
        data={
            "from": start.strftime("%Y-%m-%dT%H:%M"),
            "to": end.strftime("%Y-%m-%dT%H:%M"),
            "zone": "UTC",
            "policy": "fire_all",
        },
    )
    assert answer.status_code == 200
    shown = text(answer)
    queued = re.findall(r"<li><code>(every10:[^<]+)</code></li>", shown)
    expected = [f"every10:{iso_z(start + timedelta(minutes=m))}" for m in range(10, 60, 10)]
    assert queued == expected and api.occurrences_queued() == 5
    assert f"<code>{ran}</code>: already succeeded" in shown
    future = api.client.post(
        "/console/schedules/every10/backfill",
        data={
            "from": start.strftime("%Y-%m-%dT%H:%M"),
            "to": (now + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
            "zone": "UTC",
            "policy": "fire_once",
        },
    )
    assert future.status_code == 422
    assert "in the future" in errors_beside_fields(text(future))["to"]
    bad = api.client.post(
        "/console/schedules/every10/backfill",
        data={"from": "yesterday", "to": "", "zone": "Mars/Olympus", "policy": "fire_all"},
    )
    assert bad.status_code == 422 and "zone" in errors_beside_fields(text(bad))
    assert api.occurrences_queued() == 5


def test_every_page_a_tenant_sees_is_its_own(api: ApiUnderTest) -> None:
    create(api, "mine")
    api.apply()
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    for path in (
        "/console/schedules/mine/history",
        "/console/schedules/mine/backfill",
        "/console/schedules/mine/edit",
    ):
        assert other.get(path).status_code == 404, path
    answer: Any = other.post(
        "/console/schedules/mine/backfill",
        data={"from": "2026-01-01T00:00", "to": "2026-01-02T00:00", "zone": "UTC"},
    )
    assert answer.status_code == 404
    assert "mine" not in text(other.get("/console/schedules?q=nightly"))


def test_a_past_one_time_is_refused_beside_its_time_unless_the_box_says_fire_it(
    api: ApiUnderTest,
) -> None:
    past = (api.clock.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    values = form(notation="at", **{"schedule.at": past, "schedule.timezone": "UTC"})
    refused = api.client.post("/console/schedules/new", data=values)
    assert refused.status_code == 422
    assert "fire_if_past" in errors_beside_fields(text(refused))["schedule.at"]
    assert 'name="schedule.fire_if_past" type="checkbox" value="true" >' in text(refused)
    ticked = api.client.post(
        "/console/schedules/new", data={**values, "id": "late", "schedule.fire_if_past": "true"}
    )
    assert ticked.status_code == 303, errors_beside_fields(text(ticked))
    api.apply()
    stored = api.backends.store.get_schedule("acme", "late")
    assert stored is not None and stored.live_definition.request["schedule"]["fire_if_past"]
    edit = text(api.client.get("/console/schedules/late/edit"))
    assert 'name="schedule.fire_if_past" type="checkbox" value="true" checked>' in edit


def test_each_notation_reads_as_its_own_words(api: ApiUnderTest) -> None:
    start = (api.clock.now() + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    notations = {
        "by-at": {"notation": "at", "schedule.at": start},
        "by-interval": {
            "notation": "interval",
            "schedule.interval.number": "90",
            "schedule.interval.unit": "minute",
            "schedule.start": start,
        },
        "by-rrule": {"notation": "rrule", "schedule.rrule": "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"},
    }
    for schedule_id, values in notations.items():
        create(api, schedule_id, **values)
    api.apply()
    expected = {
        "by-at": ("once, at", ["cron line", "every", "RRULE", "from"]),
        "by-interval": ("every 90 minute", ["cron line", "once, at", "RRULE"]),
        "by-rrule": ("RRULE FREQ=DAILY;BYHOUR=9;BYMINUTE=0", ["cron line", "once, at", "every"]),
    }
    for schedule_id, (shown, absent) in expected.items():
        page = text(api.client.get(f"/console/schedules/{schedule_id}"))
        summary = re.search(r'<div id="definition-summary".*?<h3>Call', page, re.S)
        assert summary is not None
        words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", unescape(summary.group(0))))
        assert shown in words, words
        assert not any(f" {label} " in words for label in absent), words
        assert "None" not in words
    at = text(api.client.get("/console/schedules/by-at"))
    assert re.search(r"<dt>once, at</dt><dd><time datetime=\"[^\"]+Z\" data-when", at)
