"""What the browser tests share: the key, the receiver's answers, and how a test logs in,
waits, reads and takes screenshots."""

from __future__ import annotations

import base64
from pathlib import Path

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests.support.harness import Pipeline
from tests.support.receiver import Call, Receiver

# The console's URL, the pipeline behind it, the webhook receiver (the ``site`` fixture).
Site = tuple[str, Pipeline, Receiver]
API_KEY = "sk_browser_acme_0123456789"


class Answers:
    """The receiver's answer: 400 (not retried, so a dead letter at once) while ``failing``."""

    def __init__(self) -> None:
        self.failing = False

    def __call__(self, call: Call) -> tuple[int, dict[str, str]]:
        return (400 if self.failing else 200), {}


def wait(browser: webdriver.Chrome, seconds: float = 15) -> WebDriverWait[webdriver.Chrome]:
    """Waits for a condition on the page, read again until it holds. A condition read while a
    click's page replaces the old one may find an element of the old page that is gone by the
    time it is read (stale): that reading is taken again, as one that found no element."""
    return WebDriverWait(browser, seconds, ignored_exceptions=(StaleElementReferenceException,))


def text_of(browser: webdriver.Chrome, selector: str) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, selector).text)


def shoot(browser: webdriver.Chrome, artifacts: Path, name: str) -> None:
    assert browser.save_screenshot(str(artifacts / f"{name}.png"))


def in_zone(browser: webdriver.Chrome, zone: str) -> None:
    """The browser's time zone, as a viewer elsewhere has it."""
    browser.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": zone})


def log_in(browser: webdriver.Chrome, url: str, artifacts: Path) -> None:
    browser.get(f"{url}/console/")
    wait(browser).until(expected_conditions.url_contains("/console/login"))
    shoot(browser, artifacts, "login")
    browser.find_element(By.ID, "api_key").send_keys(API_KEY)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait(browser).until(
        expected_conditions.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Overview")
    )


def shoot_whole(browser: webdriver.Chrome, artifacts: Path, name: str) -> None:
    """The whole page, scrolled or not (a phone's screen is short)."""
    shot = browser.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
    )
    (artifacts / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))
