"""The console and ``/docs`` in a real browser: log in, create a schedule through the form
(its target's inputs by kind), see the preview (in the schedule's zone and the viewer's), pause
it, trigger it and see the run appear; see a failing webhook's dead letter and replay it; a
screenshot of each page."""

from __future__ import annotations

import re
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.select import Select

from tests.browser.pages import API_KEY, Answers, Site, in_zone, log_in, shoot, text_of, wait
from tests.support.harness import API


def test_create_preview_pause_trigger_and_see_the_run(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, _, receiver = site
    in_zone(browser, "America/New_York")
    log_in(browser, url, artifacts)
    shoot(browser, artifacts, "overview-empty")

    browser.find_element(By.LINK_TEXT, "New schedule").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "preview-times")))
    browser.find_element(By.ID, "f-name").send_keys("weekday report")
    Select(browser.find_element(By.ID, "f-notation")).select_by_value("interval")
    assert not browser.find_element(By.ID, "f-schedule.cron").is_displayed()
    browser.find_element(By.ID, "f-schedule.interval.number").send_keys("0")
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.ID, "preview"), "No preview")
    )
    browser.find_element(By.ID, "f-schedule.interval.number").clear()
    Select(browser.find_element(By.ID, "f-notation")).select_by_value("cron")
    cron = browser.find_element(By.ID, "f-schedule.cron")
    cron.clear()
    cron.send_keys("30 9 * * 1-5")
    Select(browser.find_element(By.ID, "f-schedule.timezone")).select_by_value("Asia/Kolkata")
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element(
            (By.ID, "preview-description"), "At 09:30 on Monday through Friday, Asia/Kolkata"
        )
    )
    times = browser.find_elements(By.CSS_SELECTOR, "#preview-times li")
    assert len(times) == 10 and times[0].text.startswith(("20", "21"))
    # In the schedule's zone, and beside it the viewer's (New York) and how far it is.
    first = times[0].text
    assert " 09:30:00 +05:30" in first, first
    assert re.search(r"yours: \S+ (23|00):00:00 -0[45]:00 · in \d+ (h|d)$", first), first
    # The target's kind shows its own inputs only: a queue's URL, or the call's.
    kind = Select(browser.find_element(By.ID, "f-payload.kind"))
    assert browser.find_element(By.ID, "f-payload.auth.token_url").is_displayed()
    kind.select_by_value("sqs")
    assert browser.find_element(By.ID, "f-payload.queue_url").is_displayed()
    assert not browser.find_element(By.ID, "f-payload.url").is_displayed()
    assert browser.find_element(By.ID, "f-payload.role_arn").is_displayed()
    kind.select_by_value("http")
    assert not browser.find_element(By.ID, "f-payload.queue_url").is_displayed()
    assert not browser.find_element(By.ID, "f-payload.role_arn").is_displayed()
    browser.find_element(By.ID, "f-payload.url").send_keys(f"{receiver.url}/report")
    shoot(browser, artifacts, "create-form-with-preview")

    body = browser.find_element(By.ID, "f-payload.body")
    body.send_keys("{oops")
    browser.find_element(By.ID, "save").click()
    error = wait(browser).until(
        expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, 'p.error[data-field="payload.body"]')
        )
    )
    assert "not valid JSON" in error.text
    shoot(browser, artifacts, "create-form-with-errors")
    body = browser.find_element(By.ID, "f-payload.body")
    body.clear()
    body.send_keys('{"report": "weekday"}')
    browser.find_element(By.ID, "save").click()

    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "weekday report")
    )
    assert len(browser.find_elements(By.CSS_SELECTOR, "#next-times li time")) == 10
    shoot(browser, artifacts, "schedule")

    assert "Asia/Kolkata" in text_of(browser, "#definition-summary")
    assert not browser.find_element(By.ID, "definition").is_displayed()  # raw JSON, folded
    browser.find_element(By.CSS_SELECTOR, "#raw summary").click()
    assert '"payload"' in browser.find_element(By.ID, "definition").text

    browser.find_element(By.ID, "pause").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "resume")))
    assert "paused" in text_of(browser, "h1")

    browser.find_element(By.ID, "trigger").click()
    wait(browser).until(expected_conditions.alert_is_present()).accept()
    wait(browser, 30).until(
        expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, '#run-list tr.run[data-status="succeeded"]')
        )
    )
    run = text_of(browser, "#run-list tr.run")
    assert "200" in run and "manual" in run
    assert receiver.calls[0].json() == {"report": "weekday"}
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart rect.bar-succeeded")
    shoot(browser, artifacts, "schedule-with-a-run")

    browser.find_element(By.ID, "edit").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "preview-times")))
    assert browser.find_element(By.ID, "f-schedule.cron").get_attribute("value") == "30 9 * * 1-5"
    shoot(browser, artifacts, "edit-form")

    browser.find_element(By.LINK_TEXT, "Schedules").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "schedule-list")))
    assert "weekday report" in text_of(browser, "#schedule-list")
    shoot(browser, artifacts, "schedules")

    browser.find_element(By.LINK_TEXT, "Overview").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "fires-day")))
    assert text_of(browser, "#fires-day") == "1"
    shoot(browser, artifacts, "overview")


def test_a_failing_webhooks_dead_letter_is_seen_and_replayed(
    browser: webdriver.Chrome,
    site: Site,
    answers: Answers,
    artifacts: Path,
) -> None:
    url, pipeline, receiver = site
    body = {
        "name": "flaky hook",
        "schedule": {"cron": "0 3 1 1 *", "timezone": "UTC"},
        "payload": {"method": "POST", "url": f"{receiver.url}/hook", "body": {"n": 1}},
        "retry": {"max_attempts": 1},
    }
    created = pipeline.client.put(
        f"{API}/schedule/flaky", json=body, headers={"X-API-Key": API_KEY}
    )
    assert created.status_code == 202, created.get_json()
    answers.failing = True
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules/flaky?accepted=1")
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "trigger")))
    browser.find_element(By.ID, "trigger").click()
    wait(browser).until(expected_conditions.alert_is_present()).accept()
    wait(browser, 30).until(
        expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, '#run-list tr.run[data-status="failed"] button.replay')
        )
    )
    assert "400" in text_of(browser, "#run-list tr.run")

    browser.find_element(By.LINK_TEXT, "Overview").click()
    waiting = wait(browser).until(
        expected_conditions.presence_of_element_located((By.ID, "dead-letters-waiting"))
    )
    assert waiting.text.startswith("1")
    waiting.click()
    wait(browser).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, "tr.dead-letter"))
    )
    row = text_of(browser, "tr.dead-letter")
    assert "flaky hook" in row and "HTTP 400" in row  # by its name
    shoot(browser, artifacts, "dead-letters")

    answers.failing = False
    browser.find_element(By.CSS_SELECTOR, "tr.dead-letter button.replay").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "done")))
    assert "Replayed" in text_of(browser, "#done")
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.dead-letter")
    calls = receiver.wait_for(2, 30)
    assert len(calls) == 2
    assert calls[0].headers["idempotency-key"] == calls[1].headers["idempotency-key"]
    shoot(browser, artifacts, "dead-letters-replayed")

    browser.get(f"{url}/console/schedules/flaky")
    wait(browser, 30).until(
        expected_conditions.presence_of_element_located(
            (By.CSS_SELECTOR, '#run-list tr.run[data-status="succeeded"]')
        )
    )
    browser.find_element(By.CSS_SELECTOR, "#run-list tr.run td a").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "occurrence")))
    assert text_of(browser, "#occurrence").startswith("flaky:")
    assert "succeeded" in text_of(browser, "h1") and not browser.find_elements(By.ID, "replay")
    shoot(browser, artifacts, "run")


def test_the_api_docs_render_without_internet(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    browser.get(f"{site[0]}/docs")
    wait(browser, 30).until(
        expected_conditions.text_to_be_present_in_element(
            (By.CSS_SELECTOR, ".swagger-ui .info .title"), "Scheduler service"
        )
    )
    operations = browser.find_elements(By.CSS_SELECTOR, ".opblock")
    assert len(operations) >= 10
    shoot(browser, artifacts, "docs")
