"""Acting on "all N matching this search" in Chromium: 120 schedules, a search that matches
60 of them, more than one page of the list; the count beside the list, a confirmation that
says it, and every one of the 60 paused (the 60 others not). A screenshot of each step."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

from shared.model import ScheduleStatus
from shared.ports import ScheduleFilter
from tests.browser.pages import Site, log_in, shoot, text_of, wait
from tests.browser.test_console_daily_work_in_chromium import put, stored


def test_all_sixty_matching_a_search_are_paused_after_one_confirmation(
    browser: webdriver.Chrome, site: Site, artifacts: Path
) -> None:
    url, pipeline, _ = site
    for number in range(120):
        team = ("billing", "reports")[number % 2]
        put(pipeline, f"job-{number:03}", name=f"{team.title()} job {number:03}", tags=[team])
    stored(pipeline, 120)
    log_in(browser, url, artifacts)
    browser.get(f"{url}/console/schedules?q=billing&per_page=25")
    assert text_of(browser, "#matching") == "All 60 matching this search:"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#schedule-list tbody tr[data-id]")) == 25
    shoot(browser, artifacts, "all-matching-offered")

    browser.find_element(By.ID, "all-pause").click()
    question = wait(browser).until(
        expected_conditions.presence_of_element_located((By.ID, "question"))
    )
    assert question.text == "Pause all 60 schedules matching this search?"
    assert browser.find_element(By.ID, "confirm").text == "Pause 60"
    shoot(browser, artifacts, "all-matching-confirm")
    store = pipeline.backends.store
    assert store.count_matching("acme", ScheduleFilter(status=ScheduleStatus.PAUSED)) == 0

    browser.find_element(By.ID, "confirm").click()
    done = wait(browser).until(expected_conditions.presence_of_element_located((By.ID, "done")))
    assert done.text == "Paused 60 schedules."
    assert browser.find_element(By.NAME, "q").get_attribute("value") == "billing"
    shoot(browser, artifacts, "all-matching-paused")
    paused = store.list_schedules("acme", ScheduleFilter(status=ScheduleStatus.PAUSED), 200, None)
    assert sorted(s.schedule_id for s in paused.items) == [f"job-{n:03}" for n in range(0, 120, 2)]
    assert store.count_matching("acme", ScheduleFilter(status=ScheduleStatus.ACTIVE)) == 60
