"""The console's pages over the API's service: keys, tenants, forms, errors beside their fields.

(tests/browser drives the same pages in Chromium.)
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from flask.testing import FlaskClient

from scheduler_service.console.overview import Overview
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME_KEY = "sk_console_acme_0123456789"
GLOBEX_KEY = "sk_console_globex_0123456789"
KEY_HEADER = {"Authorization": f"Bearer {ACME_KEY}"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(tmp_path, api_auth="keys", api_keys=keys) as api:
        yield api


def log_in(client: FlaskClient, key: str) -> None:
    answer = client.post("/console/login", data={"api_key": key, "next": "/console/"})
    assert answer.status_code == 303, answer.get_data(as_text=True)


def form(**values: str) -> dict[str, str]:
    base = {
        "name": "nightly report",
        "notation": "cron",
        "schedule.cron": "0 2 * * *",
        "schedule.timezone": "Europe/Paris",
        "payload.method": "POST",
        "payload.url": "https://example.com/report",
        "payload.headers": '{"Authorization": "Bearer s3cret-token", "X-Team": "ops"}',
        "payload.body": '{"report": "nightly"}',
        "retry.max_attempts": "3",
        "misfire.policy": "fire_once",
        "priority": "5",
        "tags": "reports, nightly",
    }
    return {**base, **values}


def errors_beside_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<p class="error" data-field="([^"]+)">([^<]+)</p>', html))


def text(answer: Any) -> str:
    body: str = answer.get_data(as_text=True)
    return body


def test_without_a_key_every_page_asks_for_one_and_a_wrong_key_is_refused(
    api: ApiUnderTest,
) -> None:
    bare = api.client.get("/console")
    assert bare.status_code == 308 and bare.headers["Location"].endswith("/console/")
    answer = api.client.get("/console/schedules?status=active")
    assert answer.status_code == 302
    assert answer.headers["Location"].startswith("/console/login?next=/console/schedules")
    refused = api.client.post("/console/login", data={"api_key": "sk_wrong_0123456789"})
    assert refused.status_code == 401 and "unknown API key" in text(refused)
    htmx = api.client.post("/console/schedules/x/pause", headers={"HX-Request": "true"})
    assert htmx.headers["HX-Redirect"].startswith("/console/login")


def test_the_key_is_kept_in_a_strict_http_only_cookie_for_the_console_only(
    api: ApiUnderTest,
) -> None:
    answer = api.client.post(
        "/console/login", data={"api_key": ACME_KEY, "next": "/console/schedules"}
    )
    assert answer.headers["Location"] == "/console/schedules"
    cookie = answer.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    assert "Expires" not in cookie and "Max-Age" not in cookie and "Secure" not in cookie
    assert api.client.get("/console/").status_code == 200
    # Never a redirect off the console after logging in.
    away = api.client.post("/console/login", data={"api_key": ACME_KEY, "next": "//evil.test/"})
    assert away.headers["Location"] == "/console/"
    # The API itself does not take the cookie.
    assert api.client.get("/scheduler-service/v1/schedules").status_code == 401


def session_cookie(client: FlaskClient) -> str:
    cookie = client.get_cookie("scheduler_console_session", path="/console")
    assert cookie is not None
    return cookie.value


def with_session(client: FlaskClient, value: str) -> FlaskClient:
    client.set_cookie("scheduler_console_session", value, path="/console")
    return client


def test_the_session_cookie_never_shows_the_key(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    value = session_cookie(api.client)
    assert ACME_KEY not in value
    assert ACME_KEY.encode() not in base64.urlsafe_b64decode(value.partition(".")[2])
    assert with_session(api.app.test_client(), value).get("/console/").status_code == 200
    # Altered, or sealed by the same box for another purpose: no session.
    altered = value[:-6] + ("AAAAAA" if not value.endswith("AAAAAA") else "BBBBBB")
    issued = api.clock.now().timestamp()
    session = json.dumps({"key": ACME_KEY, "issued": issued})
    elsewhere = api.backends.secrets.seal_text(session, "another-purpose")
    for forged in (altered, elsewhere, ACME_KEY):
        answer = with_session(api.app.test_client(), forged).get("/console/")
        assert answer.status_code == 302 and "/console/login" in answer.headers["Location"]
    # Over HTTPS the cookie is Secure.
    secure = api.app.test_client().post(
        "/console/login", data={"api_key": ACME_KEY}, base_url="https://localhost"
    )
    assert "Secure" in secure.headers["Set-Cookie"]


def test_a_session_lasts_twelve_hours_and_logout_ends_it(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.clock.advance(11.9 * 3600)
    assert api.client.get("/console/").status_code == 200
    api.clock.advance(0.2 * 3600)
    assert api.client.get("/console/").status_code == 302
    log_in(api.client, ACME_KEY)
    assert api.client.get("/console/").status_code == 200
    out = api.client.post("/console/logout")
    assert out.status_code == 303 and "scheduler_console_session=;" in out.headers["Set-Cookie"]
    assert api.client.get_cookie("scheduler_console_session", path="/console") is None
    assert api.client.get("/console/").status_code == 302


def test_console_pages_count_against_the_tenants_rate_limit(tmp_path: Path) -> None:
    keys = (f"acme:{ACME_KEY}", f"globex:{GLOBEX_KEY}")
    with api_under_test(
        tmp_path, api_auth="keys", api_keys=keys, tenant_rate_limit="4/minute"
    ) as api:
        log_in(api.client, ACME_KEY)
        assert [api.client.get("/console/").status_code for _ in range(3)] == [200] * 3
        # The API's requests and the console's share the tenant's count.
        assert api.client.get(f"{API}/schedules", headers=KEY_HEADER).status_code == 200
        limited = api.client.get("/console/schedules")
        assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
        assert "rate limit" in text(limited)
        assert api.client.get(f"{API}/schedules", headers=KEY_HEADER).status_code == 429
        other = api.app.test_client()
        log_in(other, GLOBEX_KEY)
        assert other.get("/console/").status_code == 200


def test_a_form_with_errors_shows_each_beside_its_field_and_creates_nothing(
    api: ApiUnderTest,
) -> None:
    log_in(api.client, ACME_KEY)
    answer = api.client.post(
        "/console/schedules/new",
        data=form(**{"payload.headers": "{not json", "retry.max_attempts": "zero"}),
    )
    assert answer.status_code == 422
    errors = errors_beside_fields(text(answer))
    assert errors["payload.headers"].startswith("not valid JSON")
    assert "retry.max_attempts" in errors
    assert 'value="nightly report"' in text(answer)  # what was typed is kept
    assert api.queued() == 0

    cron = api.client.post("/console/schedules/new", data=form(**{"schedule.cron": "0 9 31 2 *"}))
    assert cron.status_code == 422
    assert "never fires" in errors_beside_fields(text(cron))["schedule.cron"]
    assert api.queued() == 0


def test_create_then_view_edit_pause_and_delete_through_the_console(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    created = api.client.post("/console/schedules/new", data=form(id="nightly"))
    assert created.status_code == 303
    assert created.headers["Location"] == "/console/schedules/nightly?accepted=1"
    assert api.client.get(created.headers["Location"]).status_code == 202  # being created
    api.apply()

    page = text(api.client.get("/console/schedules/nightly"))
    assert "At 02:00 every day, Europe/Paris" in page
    assert "s3cret-token" not in page and "********" in page
    assert len(re.findall(r"<li><time", page)) == 10  # the next 10 times
    # The trace its calls continue (a new one: a form sends no traceparent), as the API says.
    trace_id = api.client.get(f"{API}/schedule/nightly", headers=KEY_HEADER).get_json()["trace_id"]
    assert re.fullmatch("[0-9a-f]{32}", trace_id)
    assert re.search(rf"trace id</\w+>\s*<\w+[^>]*><code>{trace_id}</code>", page), page

    edit = text(api.client.get("/console/schedules/nightly/edit"))
    values = dict(re.findall(r'name="([^"]+)" type="text" value="([^"]*)"', edit))
    assert values["schedule.cron"] == "0 2 * * *"
    headers = re.search(r'name="payload.headers"[^>]*>([^<]*)</textarea>', edit)
    assert headers is not None and "s3cret" not in headers.group(1)
    # Sent back as shown (masked), the secret stays; the new cron line is taken.
    masked = headers.group(1).replace("&#34;", '"').replace("&quot;", '"')
    saved = api.client.post(
        "/console/schedules/nightly/edit",
        data=form(**{"schedule.cron": "30 3 * * *", "payload.headers": masked}),
    )
    assert saved.status_code == 303
    api.apply()
    stored = api.backends.store.get_schedule("acme", "nightly")
    assert stored is not None
    assert stored.live_definition.payload.headers["Authorization"] == "Bearer s3cret-token"
    assert "At 03:30" in text(api.client.get("/console/schedules/nightly"))

    paused = api.client.post("/console/schedules/nightly/pause", headers={"HX-Request": "true"})
    assert paused.headers["HX-Redirect"] == "/console/schedules/nightly"
    assert "status-paused" in text(api.client.get("/console/schedules?status=paused"))
    assert "paused by its owner, since" in text(api.client.get("/console/schedules/nightly"))

    # A delete is confirmed first (console.js asks in a dialog; without it, a page asks).
    asked = api.client.post("/console/schedules/nightly/delete")
    assert asked.status_code == 200 and "Delete this schedule for good?" in text(asked)
    assert 'name="confirmed" value="yes"' in text(asked)
    assert api.client.get("/console/schedules/nightly").status_code == 200
    gone = api.client.post(
        "/console/schedules/nightly/delete",
        data={"confirmed": "yes"},
        headers={"HX-Request": "true"},
    )
    assert gone.headers["HX-Redirect"] == "/console/schedules?deleted=nightly"
    assert api.client.get("/console/schedules/nightly").status_code == 404


def test_an_edit_keeps_what_the_form_does_not_show(api: ApiUnderTest) -> None:
    body = {
        "name": "kept",
        "schedule": {"cron": "0 2 * * *", "timezone": "Europe/Paris"},
        "payload": {"method": "POST", "url": "https://example.com/report"},
        "jitter_seconds": 30,
        "pause_after_failures": 3,
        "on_failure": {"url": "https://alerts.example.com/x", "headers": {"Authorization": "k"}},
    }
    api.client.put("/scheduler-service/v1/schedule/kept", json=body, headers=KEY_HEADER)
    api.apply()
    log_in(api.client, ACME_KEY)
    saved = api.client.post(
        "/console/schedules/kept/edit", data=form(**{"schedule.cron": "30 3 * * *"})
    )
    assert saved.status_code == 303
    api.apply()
    stored = api.backends.store.get_schedule("acme", "kept")
    assert stored is not None
    definition = stored.live_definition
    assert (definition.timing.kind, definition.timing.value) == ("cron", "30 3 * * *")
    assert (definition.jitter_seconds, definition.pause_after_failures) == (30, 3)
    assert definition.on_failure is not None
    assert definition.on_failure.headers == {"Authorization": "k"}


def test_another_tenants_schedule_is_not_found_and_not_listed(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="acme-only"))
    api.apply()
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert other.get("/console/schedules/acme-only").status_code == 404
    assert other.post("/console/schedules/acme-only/trigger").status_code == 404
    assert "acme-only" not in text(other.get("/console/schedules"))
    assert 'data-status="active"' in text(other.get("/console/"))


def test_the_list_filters_and_pages(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    for number in range(30):
        tag = "even" if number % 2 == 0 else "odd"
        answer = api.client.post(
            "/console/schedules/new", data=form(id=f"s{number:02}", name=f"job {number}", tags=tag)
        )
        assert answer.status_code == 303, (number, errors_beside_fields(text(answer)))
    api.apply()
    # Each create stored: none dead-lettered by the processor, none left on queue 1.
    assert (api.processor.stats.poisoned, api.queued()) == (0, 0)
    first = text(api.client.get("/console/schedules?per_page=25&sort=id"))
    assert re.findall(r'<tr data-id="([^"]+)"', first) == [f"s{n:02}" for n in range(25)]
    cursor = re.search(r'id="next-page" href="([^"]+)"', first)
    assert cursor is not None
    second = text(api.client.get(unescape(cursor.group(1))))
    assert second.count("<tr data-id=") == 5 and 'id="next-page"' not in second
    assert text(api.client.get("/console/schedules")).count("<tr data-id=") == 30
    odd = text(api.client.get("/console/schedules?tag=odd&q=JOB+1"))
    expected = ["s01", "s11", "s13", "s15", "s17", "s19"]
    assert sorted(re.findall(r'<tr data-id="([^"]+)"', odd)) == expected
    bad = api.client.get("/console/schedules?next_after=yesterday")
    assert bad.status_code == 400
    assert "ISO-8601" in errors_beside_fields(text(bad))["next_after"]


def test_the_preview_shows_the_next_times_or_why_there_are_none(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    answer = text(
        api.client.post(
            "/console/preview",
            data={
                "notation": "interval",
                "schedule.interval.number": "90",
                "schedule.interval.unit": "minute",
                "schedule.cron": "ignored: another notation",
            },
        )
    )
    assert "Every 90 minutes" in answer
    assert answer.count("<li><time") == 10
    refused = text(api.client.post("/console/preview", data={"notation": "rrule"}))
    assert "No preview" in refused


def test_a_form_posted_from_another_site_is_refused(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    answer = api.client.post(
        "/console/schedules/new", data=form(), headers={"Origin": "https://evil.test"}
    )
    assert answer.status_code == 403 and api.queued() == 0


def test_scheduler_dev_needs_no_key(tmp_path: Path) -> None:
    with api_under_test(tmp_path, api_auth="none") as api:
        page = api.client.get("/console/")
        assert page.status_code == 200 and "Forget key" not in text(page)


def test_the_overview_lateness_percentiles() -> None:
    assert Overview().lateness(99) is None
    assert Overview(lateness_ms=[7.0]).lateness(50) == 7.0
    spread = Overview(lateness_ms=[float(ms) for ms in range(1, 101)])
    assert spread.lateness(50) == pytest.approx(50.5)
    assert spread.lateness(99) == pytest.approx(99.01)


# -- dead letters and runs ------------------------------------------------------------------


def dead_letter(api: ApiUnderTest, tenant: str, schedule_id: str, minutes_ago: int) -> str:
    """One occurrence of the schedule that failed for good (its only attempt got a 401)."""
    stored = api.backends.store.get_schedule(tenant, schedule_id)
    assert stored is not None
    moment = api.clock.now().replace(second=0, microsecond=0) - timedelta(minutes=minutes_ago)
    occurrence = Occurrence(tenant, schedule_id, stored.revision, moment)
    started = moment + timedelta(seconds=1)
    lease = started + timedelta(seconds=30)
    execution = api.backends.store.begin_attempt(occurrence, "x", started, lease)
    assert execution is not None
    outcome = AttemptOutcome(
        ExecutionStatus.FAILED,
        started + timedelta(milliseconds=50),
        answer=Answer(401),
        error="HTTP 401 from https://hooks.example.com/run?token=abc123",
    )
    api.backends.store.finish_attempt(execution, "x", outcome)
    return occurrence.occurrence_id


CONFIRMED = {"confirmed": "yes"}


def listed(html: str) -> list[str]:
    return [
        unescape(found) for found in re.findall(r'<tr class="dead-letter" data-id="([^"]+)"', html)
    ]


def test_dead_letters_are_paged_counted_replayed_and_discarded(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="hook"))
    api.apply()
    ids = [dead_letter(api, "acme", "hook", minutes) for minutes in range(1, 54)]

    overview = text(api.client.get("/console/"))
    assert re.search(r'id="dead-letters-waiting"><span class="figure">25\+<', overview)
    first = text(api.client.get("/console/dead-letters"))
    assert listed(first) == ids[:50]  # the latest failure first
    assert "HTTP 401" in first and "abc123" not in first
    # By the schedule's name, not its id.
    assert first.count('data-confirm="Discard the dead letter of nightly report at') == 50
    cursor = re.search(r'id="next-page" href="([^"]+)"', first)
    assert cursor is not None
    second = text(api.client.get(unescape(cursor.group(1))))
    assert listed(second) == ids[50:] and 'id="next-page"' not in second
    bad = api.client.get("/console/dead-letters?cursor=nonsense")
    assert bad.status_code == 400 and "cursor" in errors_beside_fields(text(bad))

    replayed = api.client.post(
        f"/console/dead-letters/{ids[0]}/replay", headers={"HX-Request": "true"}
    )
    assert replayed.status_code == 204
    target = urlsplit(replayed.headers["HX-Redirect"])
    assert target.path == "/console/dead-letters"
    assert parse_qs(target.query) == {"replayed": [ids[0]]}
    assert api.occurrences_queued() == 1
    after = text(api.client.get(replayed.headers["HX-Redirect"]))
    assert f"Replayed <code>{ids[0]}</code>" in after and ids[0] not in listed(after)
    again = api.client.post(
        f"/console/dead-letters/{ids[0]}/replay", headers={"HX-Request": "true"}
    )
    assert again.status_code == 404
    assert "replayed or discarded already" in text(api.client.get(again.headers["HX-Redirect"]))
    assert api.occurrences_queued() == 1

    asked = api.client.post(f"/console/dead-letters/{ids[1]}/discard")
    assert asked.status_code == 200 and "Discard 1 dead letter?" in text(asked)
    assert ids[1] in listed(text(api.client.get("/console/dead-letters")))
    discarded = api.client.post(f"/console/dead-letters/{ids[1]}/discard", data=CONFIRMED)
    assert discarded.status_code == 303
    remaining = listed(text(api.client.get("/console/dead-letters")))
    assert ids[1] not in remaining and ids[2] in remaining
    twice = api.client.post(f"/console/dead-letters/{ids[1]}/discard", data=CONFIRMED)
    assert twice.status_code == 404 and "replayed or discarded already" in text(twice)
    history = api.backends.store.get_execution("acme", ids[1])
    assert history is not None and history.status is ExecutionStatus.FAILED


def test_a_dead_letter_of_a_deleted_schedule_is_not_replayed_but_can_be_discarded(
    api: ApiUnderTest,
) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="gone"))
    api.apply()
    occurrence_id = dead_letter(api, "acme", "gone", 1)
    api.client.post("/console/schedules/gone/delete", data=CONFIRMED)
    page = text(api.client.get("/console/dead-letters"))
    assert re.search(r"gone <span class=\"muted\">\(deleted\)</span>", page)
    refused = api.client.post(f"/console/dead-letters/{occurrence_id}/replay")
    assert refused.status_code == 409 and "is deleted" in text(refused)
    assert api.occurrences_queued() == 0
    discarded = api.client.post(f"/console/dead-letters/{occurrence_id}/discard", data=CONFIRMED)
    assert discarded.status_code == 303
    assert listed(text(api.client.get("/console/dead-letters"))) == []


def test_another_tenants_dead_letters_are_neither_shown_nor_touched(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="acme-hook"))
    api.apply()
    occurrence_id = dead_letter(api, "acme", "acme-hook", 1)
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert listed(text(other.get("/console/dead-letters"))) == []
    assert 'id="dead-letters-waiting"><span class="figure">0<' in text(other.get("/console/"))
    assert other.post(f"/console/dead-letters/{occurrence_id}/replay").status_code == 404
    discarded = other.post(f"/console/dead-letters/{occurrence_id}/discard", data=CONFIRMED)
    assert discarded.status_code == 404
    assert other.get(f"/console/runs/{occurrence_id}").status_code == 404
    assert api.occurrences_queued() == 0
    assert listed(text(api.client.get("/console/dead-letters"))) == [occurrence_id]


def test_each_recent_run_links_to_its_occurrence_and_a_failed_one_offers_replay(
    api: ApiUnderTest,
) -> None:
    log_in(api.client, ACME_KEY)
    api.client.post("/console/schedules/new", data=form(id="report"))
    api.apply()
    occurrence_id = dead_letter(api, "acme", "report", 1)
    schedule_page = text(api.client.get("/console/schedules/report"))
    link = re.search(
        r'<tr class="run" data-status="failed">\s*<td data-label="scheduled"><a href="([^"]+)"',
        schedule_page,
    )
    assert link is not None
    run_page = api.client.get(unescape(link.group(1)))
    assert run_page.status_code == 200
    shown = text(run_page)
    assert unescape(re.findall(r'<code id="occurrence">([^<]+)</code>', shown)[0]) == occurrence_id
    assert "<td>401</td>" in shown and "abc123" not in shown
    attempts = re.findall(r'<tr class="attempt" data-status="([a-z]+)">', shown)
    assert attempts == ["failed"]
    assert 'id="replay"' in shown
    button = re.search(
        r'<form method="post" action="([^"]+)" class="inline">'
        r'<input type="hidden" name="next" value="([^"]+)"><button type="submit" class="replay',
        schedule_page,
    )
    assert button is not None
    replayed = api.client.post(unescape(button.group(1)), data={"next": button.group(2)})
    assert replayed.status_code == 303
    target = urlsplit(replayed.headers["Location"])
    assert target.path == "/console/schedules/report"
    assert parse_qs(target.query) == {"replayed": [occurrence_id]}
    assert "Replayed" in text(api.client.get(replayed.headers["Location"]))
    assert api.occurrences_queued() == 1
    refreshed = text(api.client.get("/console/schedules/report/runs"))
    assert 'data-status="retrying"' in refreshed and 'class="replay"' not in refreshed
    assert api.client.get("/console/runs/report:nonsense").status_code == 404


def test_the_signing_secrets_page_shows_ids_and_times_never_a_secret(api: ApiUnderTest) -> None:
    rotation = api.client.post(f"{API}/signing-secrets/rotate", headers=KEY_HEADER).get_json()
    client = api.app.test_client()
    log_in(client, ACME_KEY)
    html = text(client.get("/console/signing-secrets"))
    rows = re.findall(r'data-id="([^"]+)" data-state="([^"]+)"', html)
    assert rows == [("deployment", "retiring"), (rotation["id"], "next")]
    assert f'datetime="{rotation["created_at"]}"' in html
    assert rotation["secret"] not in html and rotation["secret"][6:] not in html
    # Another tenant sees its own: the deployment's, current.
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    html = text(other.get("/console/signing-secrets"))
    assert re.findall(r'data-id="([^"]+)" data-state="([^"]+)"', html) == [
        ("deployment", "current")
    ]
    assert rotation["id"] not in html


def test_an_alert_is_set_shown_and_cleared_through_the_console(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    alone = api.client.post(
        "/console/schedules/new", data=form(id="late", **{"alert.late_after_seconds": "90"})
    )
    assert alone.status_code == 422
    assert "on_failure" in errors_beside_fields(text(alone))["alert.late_after_seconds"]
    assert api.queued() == 0
    hooked = {"on_failure.url": "https://alerts.example.com/in", "alert.late_after_seconds": "90"}
    created = api.client.post("/console/schedules/new", data=form(id="late", **hooked))
    assert created.status_code == 303, text(created)
    api.apply()
    stored = api.backends.store.get_schedule("acme", "late")
    assert stored is not None and stored.live_definition.alert is not None
    assert stored.live_definition.alert.late_after_seconds == 90
    page = text(api.client.get("/console/schedules/late"))
    assert "late when not started 90 s after their time" in page
    edit = text(api.client.get("/console/schedules/late/edit"))
    assert re.search(r'name="alert.late_after_seconds" type="number" value="90"', edit)
    cleared = {**hooked, "alert.late_after_seconds": ""}
    saved = api.client.post("/console/schedules/late/edit", data=form(**cleared))
    assert saved.status_code == 303, text(saved)
    api.apply()
    stored = api.backends.store.get_schedule("acme", "late")
    assert stored is not None and stored.live_definition.alert is None
    assert "not reported" in text(api.client.get("/console/schedules/late"))


def test_a_pause_until_with_a_note_from_the_schedule_page(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    created = api.client.put(
        f"{API}/schedule/nightly",
        json={
            "name": "nightly",
            "schedule": {"cron": "0 2 * * *"},
            "payload": {"method": "POST", "url": "https://example.com/n"},
        },
        headers=KEY_HEADER,
    )
    assert created.status_code == 202
    api.apply()
    page_before = text(api.client.get("/console/schedules/nightly"))
    assert 'name="until"' in page_before and 'name="note"' in page_before
    # Refused, naming the field: nothing changes.
    refused = api.client.post(
        "/console/schedules/nightly/pause", data={"until": "2001-01-01T00:00:00Z", "note": "x"}
    )
    assert refused.status_code == 400 and "until: 2001-01-01T00:00:00.000Z has passed" in text(
        refused
    )
    refused = api.client.post("/console/schedules/nightly/pause", data={"until": "friday"})
    assert refused.status_code == 400 and "until:" in text(refused)
    assert api.client.get(f"{API}/schedule/nightly", headers=KEY_HEADER).get_json()["status"] == (
        "active"
    )
    until = (api.clock.now() + timedelta(days=2)).replace(microsecond=0)
    shown_until = until.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    paused = api.client.post(
        "/console/schedules/nightly/pause",
        data={"until": shown_until, "note": "vendor outage <b>"},
        headers={"HX-Request": "true"},
    )
    assert paused.headers["HX-Redirect"] == "/console/schedules/nightly"
    shown = api.client.get(f"{API}/schedule/nightly", headers=KEY_HEADER).get_json()
    assert (shown["paused_until"], shown["pause_note"], shown["pause_set_by"]) == (
        shown_until,
        "vendor outage <b>",
        "console",
    )
    page_after = text(api.client.get("/console/schedules/nightly"))
    assert f"paused by its owner until {shown_until}" in page_after
    assert "(set by console)" in page_after
    assert "vendor outage &lt;b&gt;" in page_after
    # Another tenant's console cannot pause it.
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert other.post("/console/schedules/nightly/pause", data={"note": "x"}).status_code == 404


def test_skips_from_the_schedule_page_are_shown_and_undone(api: ApiUnderTest) -> None:
    log_in(api.client, ACME_KEY)
    body = {
        "name": "hourly",
        "schedule": {"interval": {"number": 1, "unit": "hour"}},
        "payload": {"method": "POST", "url": "https://example.com/h"},
    }
    assert api.client.put(f"{API}/schedule/h", json=body, headers=KEY_HEADER).status_code == 202
    api.apply()
    assert 'name="count"' in text(api.client.get("/console/schedules/h"))
    refused = api.client.post("/console/schedules/h/skip", data={"count": "two"})
    assert refused.status_code == 400 and "count:" in text(refused)
    refused = api.client.post("/console/schedules/h/skip", data={"at": "2001-01-01T00:00:00Z"})
    assert refused.status_code == 400 and "at: 2001-01-01T00:00:00.000Z has passed" in text(refused)
    done = api.client.post("/console/schedules/h/skip", data={"count": "2"})
    assert done.status_code in (200, 303), text(done)
    skips = api.client.get(f"{API}/schedule/h", headers=KEY_HEADER).get_json()["skips"]
    assert len(skips) == 2
    shown = text(api.client.get("/console/schedules/h"))
    assert "Skips 2 occurrences to come" in shown
    assert f'name="at" value="{skips[0]}"' in shown
    api.client.post("/console/schedules/h/unskip", data={"at": skips[0]})
    assert api.client.get(f"{API}/schedule/h", headers=KEY_HEADER).get_json()["skips"] == skips[1:]
    api.client.post("/console/schedules/h/unskip")
    assert api.client.get(f"{API}/schedule/h", headers=KEY_HEADER).get_json()["skips"] == []
    assert "Skips" not in text(api.client.get("/console/schedules/h"))
    other = api.app.test_client()
    log_in(other, GLOBEX_KEY)
    assert other.post("/console/schedules/h/skip", data={"count": "1"}).status_code == 404
    assert other.post("/console/schedules/h/unskip").status_code == 404
