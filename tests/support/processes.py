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
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scheduler_client import SchedulerClient
from scheduler_client.errors import SchedulerClientError
from scheduler_client.types import Accepted
from shared.timeutil import iso_z

SCHEDULER = [sys.executable, "-m", "scheduler_cli.main"]

# How long a process may take to start: generous, for a loaded two-core CI machine, where a
# start (imports, then the first round trips to the backends) can take tens of seconds; a
# process that exits meanwhile fails the wait at once.
START_SECONDS = 120.0
# How long a stopped process may take to exit: its own stop is quick (``scheduler dev`` logs
# "stopped" a second after SIGTERM at a load of 20 on two cores), but the interpreter's exit
# after it (its last collections) took 5.5 s more there, and once more than 20 s.
STOP_SECONDS = 60.0


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

    def tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of its output (stdout and stderr)."""
        return "\n".join(self.output().splitlines()[-lines:])

    def wait_for_output(self, pattern: str, timeout: float = START_SECONDS) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.output())
            if found:
                return found
            if self.popen.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.args} did not print {pattern!r}:\n{self.tail()}")

    def terminate(self, timeout: float = STOP_SECONDS) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            # Not stopped in time: the test fails, and the process does not outlive it.
            self.popen.kill()
            self.popen.wait(10)
            raise
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


# How often a create is repeated when the API answers 503 (a backend unavailable for a moment,
# ``Retry-After: 1``), as a user's client does: SchedulerClient's retries, each after the pause
# the answer asks for, under one Idempotency-Key, so a repeat never creates a second schedule.
CREATE_RETRIES = 5


def create_schedule(
    base_url: str, body: Mapping[str, Any], api: Process | None = None, timeout: float = 30.0
) -> Accepted:
    """Create a schedule through the API at ``base_url`` as a user's client does
    (``scheduler_client``: an Idempotency-Key, a 503 tried again after its Retry-After). A
    create that fails still fails the test, showing the end of the log of the ``api`` process
    (which backend was unavailable, and why)."""
    try:
        with SchedulerClient(base_url, timeout=timeout, retries=CREATE_RETRIES) as client:
            return client.create(body)
    except SchedulerClientError as exc:
        shown = f"; the end of the API's log:\n{api.tail()}" if api is not None else ""
        raise AssertionError(f"create {body.get('name')!r}: {exc}{shown}") from exc


def wait_until_healthy(
    base_url: str, process: Process | None = None, timeout: float = START_SECONDS
) -> None:
    """Until ``base_url``/healthz answers 200. With the ``process`` that serves it: fails as
    soon as it exits, and the failure shows the last lines of its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if http_json("GET", f"{base_url}/healthz", timeout=1.0)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if process is not None and process.popen.poll() is not None:
            raise AssertionError(
                f"{process.args} exited ({process.popen.returncode}) before {base_url} became"
                f" healthy; the end of its log:\n{process.tail()}"
            )
        time.sleep(0.05)
    raise AssertionError(
        f"{base_url} did not become healthy within {timeout:g} s"
        + (f"; the end of {process.args}'s log:\n{process.tail()}" if process else "")
    )


COMPONENTS = ("api", "processor", "poller", "executor")
# What every test that starts the components sets (its own env comes on top): one API worker,
# quick polling, calls to loopback allowed, a fixed signing secret.
QUICK = {
    "SCHEDULER_API_WORKERS": "1",
    "SCHEDULER_POLL_INTERVAL_SECONDS": "0.2",
    "SCHEDULER_ALLOWED_NETWORKS": "127.0.0.0/8",
    "SCHEDULER_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
}
# How the tests that kill, freeze or cut something run them: no API keys, occurrences claimed
# 10 s ahead and sent 1 s before their time, JSON logs.
UNDER_FAULTS = {
    "SCHEDULER_API_AUTH": "none",
    "SCHEDULER_LOOKAHEAD_SECONDS": "10",
    "SCHEDULER_DISPATCH_LEAD_SECONDS": "1",
    "SCHEDULER_LOG_FORMAT": "json",
}


class Components:
    """``scheduler`` processes sharing one environment (so one set of backends and one API
    port), each by name, logging to ``{directory}/{name}.log``."""

    def __init__(self, directory: Path, env: Mapping[str, str]) -> None:
        self.directory = directory
        port = free_port()
        self.env = {**QUICK, "SCHEDULER_PORT": str(port), **env}
        self.base_url = f"http://127.0.0.1:{port}"
        self.processes: dict[str, Process] = {}

    def start(self, name: str) -> Process:
        """Start the process ``name``, or start it again after a kill (its log goes on): the
        subcommand is the name up to a ``-``, so ``executor-2`` is a second executor."""
        process = Process([name.split("-")[0]], self.env, self.directory / f"{name}.log")
        self.processes[name] = process
        return process

    def create(self, body: Mapping[str, Any]) -> Accepted:
        """Create a schedule through the API as a user's client does (``create_schedule``)."""
        return create_schedule(self.base_url, body, self.processes.get("api"))

    def wait_until_started(self, timeout: float = START_SECONDS) -> None:
        """Until the API answers and each worker has said it started (on a loaded machine the
        workers may still be starting when the API answers); fails at once if one exits."""
        wait_until_healthy(self.base_url, self.processes.get("api"), timeout)
        for process in self.processes.values():
            if process.args[0] != "api":
                process.wait_for_output(rf"{process.args[0]} started", timeout)

    def terminate(self) -> dict[str, int]:
        """Stop each with SIGTERM: its exit code by name."""
        return {name: process.terminate() for name, process in self.processes.items()}

    def kill(self) -> None:
        for process in self.processes.values():
            process.kill()


@contextmanager
def started_components(
    directory: Path,
    env: Mapping[str, str],
    names: Iterable[str] = COMPONENTS,
    timeout: float = START_SECONDS,
) -> Iterator[Components]:
    """The processes ``names`` on ``env`` (the backends, the keys, the test's settings), once
    started; killed on the way out, whatever still runs (``Components.terminate`` first to
    check that they stop cleanly)."""
    components = Components(directory, env)
    try:
        for name in names:
            components.start(name)
        components.wait_until_started(timeout)
        yield components
    finally:
        components.kill()


@contextmanager
def running_components(directory: Path, env: Mapping[str, str]) -> Iterator[str]:
    """The four components as processes, with fast loops and loopback webhooks allowed, plus
    ``env`` (the backends, the keys); yields the API's base URL. Each must stop cleanly."""
    with started_components(directory, env) as components:
        try:
            yield components.base_url
        finally:
            codes = components.terminate()
    outputs = {name: process.output()[-2000:] for name, process in components.processes.items()}
    assert set(codes.values()) == {0}, outputs


def create_every_second(
    components: Components, receiver_url: str, name: str, schedules: int, occurrences_each: int
) -> tuple[datetime, datetime, set[str]]:
    """Create ``schedules`` schedules through the API of ``components``, each calling
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
        created = components.create(body)
        expected |= {
            f"{created['id']}:{iso_z(start + timedelta(seconds=k))}"
            for k in range(occurrences_each)
        }
    return start, end, expected
