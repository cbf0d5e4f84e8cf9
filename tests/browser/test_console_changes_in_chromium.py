"""A schedule's change history in a real browser: changed through the API with a key and paused
in the console, its page shows who did what, newest first, a secret's change without its value;
"Every change" pages to the oldest."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from tests.browser.pages import API_KEY, Site, log_in, shoot, wait
from tests.support.harness import API
from tests.support.waiting import eventually

HEADERS = {"X-API-Key": API_KEY}


def test_the_schedule_page_shows_who_changed_what(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, pipeline, receiver = site
    body = {
        "name": "audited",
        "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
        "payload": {
            "method": "POST",
            "url": f"{receiver.url}/hook",
            "headers": {"Authorization": "Bearer first-s3cret-Qx7"},
        },
    }
    client = pipeline.client
    assert client.put(f"{API}/schedule/audited", json=body, headers=HEADERS).status_code == 202

    def revision() -> int | None:
        shown = client.get(f"{API}/schedule/audited", headers=HEADERS).get_json()
        return shown.get("revision")

    eventually(revision, 15, "the create stored")
    rotated = {"payload": {"headers": {"Authorization": "Bearer second-s3cret-Zy9"}}}
    patched = client.patch(f"{API}/schedule/audited", json=rotated, headers=HEADERS)
    eventually(lambda: revision() == patched.get_json()["revision"], 15, "the patch stored")

    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules/audited")
    browser.find_element(By.ID, "pause").click()
    wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "resume")))

    wait(browser).until(
        lambda _: len(browser.find_elements(By.CSS_SELECTOR, "#changes tr.change")) == 3
    )
    rows = browser.find_elements(By.CSS_SELECTOR, "#changes tr.change")
    assert [row.get_attribute("data-action") for row in rows] == ["pause", "patch", "create"]
    assert "console: SCHEDULER_API_KEYS" in rows[0].text
    assert "state" in rows[0].text and "paused" in rows[0].text
    assert "payload.headers.Authorization: changed (secret)" in rows[1].text
    page = browser.page_source
    assert "first-s3cret" not in page and "second-s3cret" not in page
    shoot(browser, artifacts, "schedule-changes")

    browser.find_element(By.ID, "all-changes").click()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Changes of")
    )
    every = browser.find_elements(By.CSS_SELECTOR, "#change-list tr.change")
    assert [row.get_attribute("data-action") for row in every] == ["pause", "patch", "create"]
    shoot(browser, artifacts, "changes")
