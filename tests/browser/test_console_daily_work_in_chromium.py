"""The console for daily work, in Chromium: 200 schedules searched, sorted and paused
together; every page on a 390 px phone (nothing cut off, nothing wider than the screen); times
in the viewer's zone, and the same pages without JavaScript; a failed one-shot, its dead
letter found by name and replayed with others; a form of every field; a backfill; a history
paged and filtered. Each step leaves a screenshot in ``test-artifacts/browser/``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.select import Select

from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from shared.ports import DeadLetterRequest, ScheduleFilter
from shared.timeutil import UTC, iso_z
from tests.browser.pages import (
    API_KEY,
    Answers,
    Site,
    in_zone,
    log_in,
    shoot,
    shoot_whole,
    text_of,
    wait,
)
from tests.support.harness import API, Pipeline

KEY = {"X-API-Key": API_KEY}
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


def until(condition: Callable[[], bool], seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not in time"
        time.sleep(0.05)


def put(pipeline: Pipeline, schedule_id: str, **fields: Any) -> None:
    body = {
        "name": schedule_id,
        "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"},
        "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
        **fields,
    }
    answer = pipeline.client.put(f"{API}/schedule/{schedule_id}", json=body, headers=KEY)
    assert answer.status_code == 202, answer.get_json()


def stored(pipeline: Pipeline, count: int) -> None:
    """Wait until the processor has stored ``count`` schedules (completed ones too)."""
    store = pipeline.backends.store
    until(lambda: len(store.list_schedules("acme", ScheduleFilter(), 1000, None).items) == count)


def ended(pipeline: Pipeline, schedule_id: str, moment: datetime, status: ExecutionStatus) -> str:
    """An occurrence of the schedule at ``moment`` that ended in ``status`` (a dead letter if
    it failed)."""
    store = pipeline.backends.store
    schedule = store.get_schedule("acme", schedule_id)
    assert schedule is not None
    occurrence = Occurrence("acme", schedule_id, schedule.revision, moment)
    execution = store.begin_attempt(occurrence, "x", moment, moment + timedelta(minutes=1))
    assert execution is not None
    code = 200 if status is ExecutionStatus.SUCCEEDED else 410
    outcome = AttemptOutcome(
        status, moment + timedelta(milliseconds=30), answer=Answer(code), duration_ms=25.0
    )
    assert store.finish_attempt(execution, "x", outcome)
    return occurrence.occurrence_id


def ticked_rows(browser: webdriver.Chrome) -> list[str]:
    return [
        str(row.get_attribute("data-id"))
        for row in browser.find_elements(By.CSS_SELECTOR, "#schedule-list tbody tr[data-id]")
    ]


def test_two_hundred_schedules_searched_sorted_and_paused_together(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, pipeline, _ = site
    for number in range(200):
        team = ("billing", "reports", "ops", "search")[number % 4]
        put(
            pipeline,
            f"job-{number:03}",
            name=f"{team.title()} job {number:03}",
            tags=[team],
            payload={"method": "POST", "url": f"https://{team}.example.com/hooks/{number}"},
        )
    stored(pipeline, 200)
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules?per_page=200")
    assert len(ticked_rows(browser)) == 200
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#schedule-list a.name")]
    assert names == sorted(names, key=str.casefold)
    shoot(browser, artifacts, "schedules-200")

    search = browser.find_element(By.NAME, "q")
    search.send_keys("reports.example.com")
    Select(browser.find_element(By.NAME, "sort")).select_by_value("-name")
    search.submit()
    wait(browser).until(lambda b: len(ticked_rows(b)) == 50)
    found = ticked_rows(browser)
    assert found == [f"job-{n:03}" for n in range(197, 0, -4)]
    assert "billing" not in text_of(browser, "#schedule-list")
    browser.find_element(By.CSS_SELECTOR, "input[data-select-all]").click()
    assert all(box.is_selected() for box in browser.find_elements(By.NAME, "id"))
    browser.find_element(By.ID, "bulk-pause").click()
    notice = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "done")))
    assert notice.text == "Paused 50 schedules."
    assert browser.find_element(By.NAME, "q").get_attribute("value") == "reports.example.com"
    statuses = browser.find_elements(By.CSS_SELECTOR, "#schedule-list .status[data-status]")
    assert {s.text for s in statuses} == {"paused"}
    shoot(browser, artifacts, "schedules-searched-and-paused")

    # Delete two from their rows' boxes; the dialog asks first (dismissed: nothing happens).
    for box in browser.find_elements(By.NAME, "id")[:2]:
        box.click()
    browser.find_element(By.ID, "bulk-delete").click()
    wait(browser).until(expected_conditions.alert_is_present()).dismiss()
    assert len(ticked_rows(browser)) == 50
    browser.find_element(By.ID, "bulk-delete").click()
    wait(browser).until(expected_conditions.alert_is_present()).accept()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "done"), "Deleted 2")
    )
    assert ticked_rows(browser)[:2] == ["job-189", "job-185"]
    assert pipeline.backends.store.count_tenant_schedules("acme") == 198
    # A row's own action: resume the first, back on the same list.
    browser.find_element(By.CSS_SELECTOR, "tr[data-id=job-189] .row-actions button").click()
    wait(browser).until(
        lambda b: b.find_element(By.CSS_SELECTOR, "tr[data-id=job-189] .status").text == "active"
    )
    assert "sort=-name" in browser.current_url


def overflow(browser: webdriver.Chrome) -> dict[str, Any]:
    """How wide the page is against the screen, and the elements that reach past its edges."""
    found: dict[str, Any] = browser.execute_script(
        """
        const width = window.innerWidth;
        const past = [];
        for (const element of document.querySelectorAll("body *")) {
          const box = element.getBoundingClientRect();
          if (box.width && (box.right > width + 0.5 || box.left < -0.5)) {
            const name = `${element.tagName}#${element.id}.${element.className}`;
            past.push(`${name} ${box.left}-${box.right}`);
          }
        }
        return {width, scroll: document.documentElement.scrollWidth, past: past.slice(0, 5)};
        """
    )
    return found


def within_screen(browser: webdriver.Chrome, element: WebElement) -> bool:
    box = element.rect
    width = browser.execute_script("return window.innerWidth")
    return bool(element.is_displayed() and box["x"] >= 0 and box["x"] + box["width"] <= width)


def test_every_page_fits_a_phone(browser: webdriver.Chrome, site: Site, artifacts: Path) -> None:
    url, pipeline, receiver = site
    long_url = f"{receiver.url}/a/rather/long/path/that/goes/on/and/on?report=daily&team=ops"
    put(
        pipeline,
        "phone",
        name="A rather long schedule name that has to wrap on a phone screen",
        tags=["reports", "nightly", "billing-team"],
        payload={"method": "POST", "url": long_url, "headers": {"Authorization": "Bearer x"}},
    )
    put(pipeline, "other", name="Other")
    stored(pipeline, 2)
    now = datetime.now(UTC).replace(microsecond=0)
    ran = [
        ended(pipeline, "phone", now - timedelta(minutes=m), status)
        for m, status in ((3, ExecutionStatus.SUCCEEDED), (2, ExecutionStatus.FAILED))
    ]
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
    browser.get(f"{url}/console/login")
    measured = overflow(browser)
    assert measured["scroll"] <= 390 and not measured["past"], measured
    assert within_screen(browser, browser.find_element(By.ID, "api_key"))
    shoot_whole(browser, artifacts, "phone-login")
    log_in(browser, url, artifacts)
    pages = {
        "overview": ("/console/", ["h1"]),
        "schedules": (
            "/console/schedules",
            ["input[name=q]", "#bulk-delete", "tr[data-id=phone] .row-actions .danger"],
        ),
        "schedule": ("/console/schedules/phone", ["#pause", "#delete", "#definition-summary"]),
        "history": ("/console/schedules/phone/history", ["#status-filter", "#run-list"]),
        "run": (f"/console/runs/{ran[1]}", ["#replay", "#attempts"]),
        "dead-letters": ("/console/dead-letters", ["#bulk-replay", "tr.dead-letter .replay"]),
        "new-schedule": ("/console/schedules/new", ["#f-schedule\\.timezone", "#save"]),
        "edit-schedule": ("/console/schedules/phone/edit", ["#f-payload\\.url", "#save"]),
        "backfill": ("/console/schedules/phone/backfill", ["#b-from", "#run-backfill"]),
        "signing-secrets": ("/console/signing-secrets", ["tr.signing-secret"]),
        "calendars": ("/console/calendars", ["#calendar-form"]),
    }
    for name, (path, controls) in pages.items():
        browser.get(f"{url}{path}")
        wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "main")))
        measured = overflow(browser)
        assert measured["width"] == 390, measured
        assert measured["scroll"] <= 390 and not measured["past"], (name, measured)
        links = browser.find_elements(By.CSS_SELECTOR, "#nav a")
        assert [link.text for link in links] == [
            "Overview",
            "Schedules",
            "New schedule",
            "Dead letters",
            "Signing secrets",
            "Calendars",
            "API docs",
        ]
        for link in links:  # the whole navigation on the first screen
            assert within_screen(browser, link) and link.rect["y"] + link.rect["height"] < 844
        for selector in controls:
            control = browser.find_element(By.CSS_SELECTOR, selector)
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", control)
            assert within_screen(browser, control), (name, selector)
        shoot_whole(browser, artifacts, f"phone-{name}")
    # A card's labels are shown beside its values, not lost with the table's head.
    browser.get(f"{url}/console/schedules")
    card = browser.find_element(By.CSS_SELECTOR, "tr[data-id=phone] td[data-label=target]")
    label = browser.execute_script(
        "return getComputedStyle(arguments[0], '::before').content", card
    )
    assert label == '"target"'


def test_times_in_the_viewers_zone_and_the_pages_without_javascript(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, pipeline, _ = site
    put(pipeline, "night", name="Night run", schedule={"cron": "0 3 * * *", "timezone": "UTC"})
    put(pipeline, "spare", name="Spare")
    stored(pipeline, 2)
    in_zone(browser, "Asia/Kolkata")
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules")
    shown = browser.find_element(By.CSS_SELECTOR, "tr[data-id=night] td[data-label='next fire']")
    # 03:00 UTC is 08:30 in Kolkata; how far it is in whole units.
    assert re.fullmatch(r"\d{4}-\d\d-\d\d 08:30:00 \+05:30 in \d+ (min|h)", shown.text), shown.text
    title = str(shown.find_element(By.TAG_NAME, "time").get_attribute("title"))
    assert re.fullmatch(r"\S+T03:00:00.000Z · \S+ 03:00:00 UTC in the schedule.s zone", title)
    shoot(browser, artifacts, "schedules-in-kolkata")

    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
    browser.get(f"{url}/console/schedules")
    shown = browser.find_element(By.CSS_SELECTOR, "tr[data-id=night] td[data-label='next fire']")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d 03:00:00 UTC in \d+ (min|h)", shown.text), shown.text
    # Without the dialog, the server asks on a page before it deletes.
    browser.find_element(By.CSS_SELECTOR, "input[name=id][value=spare]").click()
    browser.find_element(By.ID, "bulk-delete").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "confirm")))
    assert text_of(browser, "#confirm-list") == "Spare"
    shoot(browser, artifacts, "confirm-without-javascript")
    browser.find_element(By.ID, "confirm").click()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "done"), "Deleted 1")
    )
    assert ticked_rows(browser) == ["night"]
    # Pause from the schedule's page, a plain form.
    browser.get(f"{url}/console/schedules/night")
    browser.find_element(By.ID, "pause").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "resume")))
    browser.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": False})


def test_a_failed_one_shot_its_dead_letter_by_name_and_a_bulk_replay(
    browser: webdriver.Chrome, site: Site, answers: Answers, artifacts: Path
) -> None:
    url, pipeline, receiver = site
    answers.failing = True
    at = iso_z(datetime.now(UTC) + timedelta(seconds=1))
    for schedule_id, name in (("once", "Send the welcome mail"), ("again", "Nightly export")):
        put(
            pipeline,
            schedule_id,
            name=name,
            schedule={"at": at, "timezone": "UTC"}
            if schedule_id == "once"
            else {"cron": "0 3 * * *", "timezone": "UTC"},
            payload={"method": "POST", "url": f"{receiver.url}/{schedule_id}"},
            retry={"max_attempts": 1},
        )
    stored(pipeline, 2)
    triggered = pipeline.client.post(f"{API}/schedule/again/trigger", headers=KEY)
    assert triggered.status_code == 202, triggered.get_json()
    until(
        lambda: (
            len(
                pipeline.backends.store.list_dead_letters(DeadLetterRequest("acme", 10, None)).items
            )
            == 2
        )
    )
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules")
    badge = browser.find_element(By.CSS_SELECTOR, "tr[data-id=once] .status[data-status]")
    assert badge.text == "failed"  # not "completed"
    assert "its last run failed" in str(badge.get_attribute("title"))
    shoot(browser, artifacts, "schedules-failed-one-shot")

    browser.find_element(By.LINK_TEXT, "Dead letters").click()
    names = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "tr.dead-letter a.name")]
    assert sorted(names) == ["Nightly export", "Send the welcome mail"]
    browser.find_element(By.NAME, "schedule").send_keys("welcome")
    browser.find_element(By.NAME, "schedule").submit()
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "tr.dead-letter")) == 1)
    assert "Send the welcome mail" in text_of(browser, "tr.dead-letter")
    shoot(browser, artifacts, "dead-letters-filtered")
    browser.find_element(By.LINK_TEXT, "All dead letters").click()
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "tr.dead-letter")) == 2)
    answers.failing = False
    browser.find_element(By.CSS_SELECTOR, "input[data-select-all]").click()
    browser.find_element(By.ID, "bulk-replay").click()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "done"), "Replayed 2")
    )
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.dead-letter")
    calls = receiver.wait_for(4, 30)
    assert sorted(call.path for call in calls[2:]) == ["/again", "/once"]
    shoot(browser, artifacts, "dead-letters-bulk-replayed")
    # Replayed and succeeded, the one-shot has done its work.
    until(
        lambda: (
            getattr(pipeline.backends.store.get_schedule("acme", "once"), "last_status", "")
            == "succeeded"
        )
    )
    browser.get(f"{url}/console/schedules")
    badge = browser.find_element(By.CSS_SELECTOR, "tr[data-id=once] .status[data-status]")
    assert badge.text == "completed"


def set_value(browser: webdriver.Chrome, element_id: str, value: str) -> None:
    """A date or time picker's value, as a person's picking it sets it."""
    element = browser.find_element(By.ID, element_id)
    browser.execute_script(
        "arguments[0].value = arguments[1];"
        "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));"
        "arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
        element,
        value,
    )


def test_a_form_of_every_field_then_a_backfill_and_the_history(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, pipeline, receiver = site
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules/new")
    typed = {
        "f-id": "minutely",
        "f-name": "Every minute",
        "f-tags": "demo, minutely",
        "f-schedule.cron": "* * * * *",
        "f-misfire.grace_seconds": "30",
        "f-jitter_seconds": "0",
        "f-payload.url": f"{receiver.url}/minutely",
        "f-payload.queryParameters": '{"source": "console"}',
        "f-payload.headers": '{"X-Team": "ops"}',
        "f-payload.body": '{"hello": "world"}',
        "f-payload.timeout_seconds": "5",
        "f-payload.calls_per_host": "2",
        "f-retry.max_attempts": "2",
        "f-retry.backoff_seconds": "0.5",
        "f-retry.max_backoff_seconds": "10",
        "f-pause_after_failures": "3",
        "f-on_failure.url": f"{receiver.url}/alerts",
        "f-on_failure.headers": '{"Authorization": "Bearer alert"}',
        "f-metadata": '{"owner": "console"}',
    }
    for element_id, value in typed.items():
        field = browser.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(value)
    Select(browser.find_element(By.ID, "f-schedule.timezone")).select_by_value("Europe/Berlin")
    Select(browser.find_element(By.ID, "f-misfire.policy")).select_by_value("skip")
    Select(browser.find_element(By.ID, "f-payload.method")).select_by_value("PUT")
    set_value(browser, "f-schedule.start", "2020-01-01T00:00")
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element(
            (By.ID, "preview-description"), "Europe/Berlin"
        )
    )
    shoot_whole(browser, artifacts, "create-form-every-field")
    browser.find_element(By.ID, "save").click()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Every minute")
    )
    answer = pipeline.client.get(f"{API}/schedule/minutely", headers=KEY).get_json()
    assert answer["payload"]["queryParameters"] == {"source": "console"}
    assert answer["payload"]["method"] == "PUT" and answer["payload"]["calls_per_host"] == 2
    assert answer["retry"] == {
        "max_attempts": 2,
        "backoff_seconds": 0.5,
        "max_backoff_seconds": 10.0,
    }
    assert (answer["misfire"], answer["pause_after_failures"]) == (
        {"policy": "skip", "grace_seconds": 30.0},
        3,
    )
    assert answer["on_failure"]["headers"] == {"Authorization": "********"}
    assert answer["metadata"] == {"owner": "console"} and answer["timezone"] == "Europe/Berlin"
    assert answer["schedule"]["start"] == "2020-01-01T00:00"
    shoot(browser, artifacts, "schedule-every-field")

    # Backfill the last three whole minutes (in UTC), each run once.
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    browser.find_element(By.ID, "backfill").click()
    set_value(browser, "b-from", (end - timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M"))
    set_value(browser, "b-to", end.strftime("%Y-%m-%dT%H:%M"))
    Select(browser.find_element(By.ID, "b-zone")).select_by_value("UTC")
    browser.find_element(By.ID, "run-backfill").click()
    queued = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "queued")))
    expected = [f"minutely:{iso_z(end - timedelta(minutes=m))}" for m in (3, 2, 1)]
    assert queued.text.split("\n") == expected
    shoot(browser, artifacts, "backfill-done")
    until(lambda: set(expected) <= {c.headers.get("idempotency-key") for c in receiver.calls}, 30)
    sent = [c for c in receiver.calls if c.path == "/minutely"]
    assert {(c.method, str(c.query), c.body) for c in sent} == {
        ("PUT", "{'source': ['console']}", b'{"hello":"world"}')
    }

    # The history: a page of 50, the older ones after, by status.
    base = end - timedelta(hours=3)
    for minute in range(60):
        status = ExecutionStatus.FAILED if minute % 10 == 0 else ExecutionStatus.SUCCEEDED
        ended(pipeline, "minutely", base + timedelta(minutes=minute), status)
    browser.get(f"{url}/console/schedules/minutely/history")
    first = browser.find_elements(By.CSS_SELECTOR, "#run-list tr.run")
    assert len(first) == 50
    browser.find_element(By.ID, "next-page").click()
    wait(browser).until(lambda b: "cursor=" in b.current_url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#run-list tr.run")) >= 13
    Select(browser.find_element(By.ID, "status-filter")).select_by_value("failed")
    browser.find_element(By.CSS_SELECTOR, "#filters button").click()
    wait(browser).until(lambda b: "status=failed" in b.current_url)
    failed = browser.find_elements(By.CSS_SELECTOR, "#run-list tr.run")
    assert len(failed) == 6
    assert {row.get_attribute("data-status") for row in failed} == {"failed"}
    shoot(browser, artifacts, "history-failed")
