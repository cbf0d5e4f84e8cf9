"""Starting real ``scheduler`` processes for acceptance tests."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from shared.timeutil import iso_z
from tests.support.harness import API

SCHEDULER = [sys.executable, "-m", "scheduler_cli.main"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Process:
    """A ``scheduler`` subcommand whose output goes to a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.popen = subprocess.Popen(
            [*SCHEDULER, *args],
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=log_path.parent,
        )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_output(self, pattern: str, timeout: float = 15.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.output())
            if found:
                return found
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.args} did not print {pattern!r}:\n{self.output()[-3000:]}")

    def terminate(self, timeout: float = 20.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(10)
        self._log.close()


def http_json(method: str, url: str, body: Any = None, timeout: float = 5.0) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.loads(error.read() or b"null")


def wait_until_healthy(base_url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if http_json("GET", f"{base_url}/healthz", timeout=1.0)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{base_url} did not become healthy within {timeout}s")


COMPONENTS = ("api", "processor", "poller", "executor")


@contextmanager
def running_components(directory: Path, env: dict[str, str]) -> Iterator[str]:
    """The four components as processes, with fast loops and loopback webhooks allowed, plus
    ``env`` (the backends, the keys); yields the API's base URL. Each must stop cleanly."""
    port = free_port()
    env = {
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_WORKERS": "1",
        "SCHEDULER_POLL_INTERVAL_SECONDS": "0.2",
        "SCHEDULER_ALLOWED_NETWORKS": "127.0.0.0/8",
        "SCHEDULER_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        **env,
    }
    processes = [Process([name], env, directory / f"{name}.log") for name in COMPONENTS]
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base)
        # On a loaded machine the workers may still be starting when the API answers.
        for process in processes[1:]:
            process.wait_for_output(rf"{process.args[0]} started", timeout=30)
        yield base
    finally:
        codes = {process.args[0]: process.terminate() for process in processes}
    assert set(codes.values()) == {0}, {p.args[0]: p.output()[-2000:] for p in processes}


def create_every_second(
    base_url: str, receiver_url: str, name: str, schedules: int, occurrences_each: int
) -> tuple[datetime, datetime, set[str]]:
    """Create ``schedules`` schedules through the API at ``base_url``, each calling
    ``{receiver_url}/{name}/{n}`` every second ``occurrences_each`` times from about four
    seconds from now (``fire_all``, generous retries). Returns their first and last times and
    the occurrence ids that must each succeed once."""
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=4)
    end = start + timedelta(seconds=occurrences_each - 1)
    expected: set[str] = set()
    for n in range(schedules):
        body = {
            "name": f"{name}-{n}",
            "schedule": {
                "interval": {"number": 1, "unit": "second"},
                "start": iso_z(start),
                "end": iso_z(end),
            },
            "payload": {"method": "POST", "url": f"{receiver_url}/{name}/{n}"},
            "misfire": {"policy": "fire_all"},
            "retry": {"max_attempts": 10, "backoff_seconds": 0.2},
        }
        status, created = http_json("POST", f"{base_url}{API}/schedule", body)
        assert status == 202, created
        expected |= {
            f"{created['id']}:{iso_z(start + timedelta(seconds=k))}"
            for k in range(occurrences_each)
        }
    return start, end, expected
