"""The console over real processes: ``scheduler dev`` (no key), and the four components apart
with API keys (on one SQLite file, and on MongoDB and SQS over the wire), the key kept in the
browser's cookie across the API's gunicorn workers."""

from __future__ import annotations

import http.cookiejar
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.peers import ComponentBackends
from tests.support.processes import Process, running_components
from tests.support.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow


class Browser:
    """Just enough of one: cookies, redirects, forms."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def open(
        self, path: str, form: dict[str, str] | None = None, htmx: bool = False
    ) -> tuple[int, str, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(f"{self.base}{path}", data=data)
        if htmx:
            request.add_header("HX-Request", "true")
        try:
            with self.opener.open(request, timeout=10) as answer:
                return answer.status, answer.url, answer.read().decode()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.url, error.read().decode()


def eventually(probe: Browser, path: str, pattern: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status, _, page = probe.open(path)
        if status == 200 and re.search(pattern, page):
            return page
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never showed {pattern!r}: {status}\n{page[-1500:]}")
        time.sleep(0.1)


def create_trigger_and_see_the_run(browser: Browser, receiver: Receiver) -> str:
    status, url, page = browser.open(
        "/console/schedules/new",
        {
            "name": "from the console",
            "notation": "interval",
            "schedule.interval.number": "1",
            "schedule.interval.unit": "hour",
            "schedule.timezone": "UTC",
            "payload.method": "POST",
            "payload.url": f"{receiver.url}/console",
            "payload.headers": "{}",
            "payload.body": '{"via": "console"}',
            "retry.max_attempts": "3",
            "misfire.policy": "fire_once",
            "priority": "5",
        },
    )
    assert status in (200, 202), page
    schedule_id = urllib.parse.urlsplit(url).path.rsplit("/", 1)[1]
    path = f"/console/schedules/{schedule_id}"
    assert "Every hour (elapsed time)" in eventually(browser, path, "from the console")
    status, _, _ = browser.open(f"{path}/trigger", {}, htmx=True)
    assert status == 204
    eventually(browser, f"{path}/runs", r'data-status="succeeded"')
    assert receiver.calls[-1].json() == {"via": "console"}
    return schedule_id


def test_the_console_on_scheduler_dev_needs_no_key(tmp_path: Path) -> None:
    with running_receiver() as receiver:
        dev = Process(["dev", "--port", "0", "--data-dir", str(tmp_path)], {}, tmp_path / "dev.log")
        try:
            console = dev.wait_for_output(r"console on (http://127\.0\.0\.1:\d+)/console/")
            browser = Browser(console.group(1))
            status, _, page = browser.open("/console/")
            assert status == 200 and "Overview" in page
            create_trigger_and_see_the_run(browser, receiver)
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]


def test_the_console_on_the_four_components_with_api_keys(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {
        **component_backends.env,
        "SCHEDULER_API_WORKERS": "2",
        "SCHEDULER_API_AUTH": "keys",
        "SCHEDULER_API_KEYS": "acme:sk_console_acme_0123456789,globex:sk_console_globex_01234567",
    }
    with running_receiver() as receiver, running_components(tmp_path, env) as base:
        acme = Browser(base)
        status, url, page = acme.open("/console/")
        assert url.startswith(f"{base}/console/login") and "Your API key" in page
        status, url, _ = acme.open(
            "/console/login", {"api_key": "sk_console_acme_0123456789", "next": "/console/"}
        )
        assert status == 200 and url == f"{base}/console/"
        schedule_id = create_trigger_and_see_the_run(acme, receiver)

        globex = Browser(base)
        globex.open("/console/login", {"api_key": "sk_console_globex_01234567"})
        assert globex.open(f"/console/schedules/{schedule_id}")[0] == 404
        assert schedule_id not in globex.open("/console/schedules")[2]
