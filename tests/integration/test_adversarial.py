"""Probes an attacker (or a careless client) would try, kept running: exhausting descriptors,
deep JSON, bodies without keys, impossible ids, concurrent creates past the quota, floods.

Loopback only: the API in-process (Flask's test client) or a real ``scheduler dev``.
"""

from __future__ import annotations

import http.client
import os
import shutil
from pathlib import Path

import pytest

from tests.support.api import api_under_test
from tests.support.harness import API
from tests.support.processes import Process


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def status_of(host: str, port: int, method: str, path: str) -> int:
    """One request on a connection of its own (a new server thread each, as a crowd would)."""
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


@pytest.mark.slow
def test_scheduler_dev_keeps_its_descriptors_flat_over_thousands_of_requests(
    tmp_path: Path,
) -> None:
    data = str(tmp_path / "data")
    dev = Process(["dev", "--port", "0", "--data-dir", data], {}, tmp_path / "log")
    try:
        base = dev.wait_for_output(r"API on http://(127\.0\.0\.1):(\d+)")
        host, port = base.group(1), int(base.group(2))
        path = f"{API}/schedule/no-such-schedule"
        for _ in range(50):
            assert status_of(host, port, "GET", path) == 404
        before = open_descriptors(dev.popen.pid)
        statuses = {status_of(host, port, "GET", path) for _ in range(2000)}
        after = open_descriptors(dev.popen.pid)
        assert statuses == {404}
        # A leak costs two descriptors a request (4,000 here); the pool allows a few idle.
        assert after - before <= 16, (before, after)
        assert status_of(host, port, "GET", "/healthz") == 200
    finally:
        assert dev.terminate() == 0, dev.output()[-3000:]


def test_healthz_fails_when_the_store_cannot_be_opened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with api_under_test(data) as api:
        assert api.client.get("/healthz").status_code == 200
        # The open connections still work; opening the file again cannot.
        shutil.move(data, tmp_path / "elsewhere")
        answer = api.client.get("/healthz")
        assert answer.status_code == 503
        assert "unavailable" in answer.get_json()["checks"]["store"]
        shutil.move(tmp_path / "elsewhere", data)
        assert api.client.get("/healthz").status_code == 200
