"""Debian's Chromium driven by Selenium through chromium-driver.

``scripts/bootstrap-browser`` installs both (CI runs it from ``.ci/run``; ``scripts/test`` runs
it when they are missing and it may). Without them the tests are skipped with the reason, except
in CI (``CI`` set), where that is a failure. The browser resolves no host name but 127.0.0.1, so
a page that needs the internet shows it. Each test writes screenshots under
``test-artifacts/browser/`` (or ``$SCHEDULER_TEST_ARTIFACTS``) for a person to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.browser.pages import API_KEY, Answers, Site
from tests.support.harness import running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver
from tests.support.serving import serving

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    # Only loopback resolves: an asset fetched from the internet would fail to load.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
    "--window-size=1280,1400",
)
REPOSITORY = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    browser = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        reason = "chromium and chromium-driver are not installed: run scripts/bootstrap-browser"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI must run the browser tests)")
        pytest.skip(reason)
    return browser, driver


@pytest.fixture
def browser(chromium: tuple[str, str], tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = chromium[0]
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(service=Service(executable_path=chromium[1]), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    directory = (
        Path(os.environ.get("SCHEDULER_TEST_ARTIFACTS") or REPOSITORY / "test-artifacts")
        / "browser"
    )
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def site(tmp_path: Path, answers: Answers) -> Iterator[Site]:
    settings = sqlite_settings(tmp_path, api_auth="keys", api_keys=(f"acme:{API_KEY}",))
    with (
        running_receiver(answers) as receiver,
        running_pipeline(settings) as pipeline,
        serving(pipeline.app) as url,
    ):
        yield url, pipeline, receiver
