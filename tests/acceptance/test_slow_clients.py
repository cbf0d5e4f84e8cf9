"""Slow and idle clients cannot starve ``scheduler dev`` or ``scheduler api`` (issue 22 item 2).

Real processes started as users start them, attacked over loopback as the issue did: requests
sent halfway and held, header lines trickled, more connections than the bound, and the API's
own process frozen. The client side is ``bench/slow_clients.py``'s (its benchmark measures the
same, before and after).
"""

from __future__ import annotations

import http.client
import os
import re
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench.slow_clients import HALF_SENT, Prober, half_sent, healthz, request, resources, trickle
from tests.support.harness import API
from tests.support.processes import Process, running_components
from tests.support.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow

TARGETS = ["dev", "api"]


@contextmanager
def service(target: str, directory: Path, **env: str) -> Iterator[tuple[int, int]]:
    """``scheduler dev``, or the four components with the API under gunicorn: the API's port,
    and the pid of the process started to serve it (its children included in what is
    measured)."""
    if target == "dev":
        dev = Process(
            ["dev", "--port", "0", "--data-dir", str(directory / "data")], env, directory / "log"
        )
        try:
            port = int(dev.wait_for_output(r"API on http://127\.0\.0\.1:(\d+)").group(1))
            wait_for_healthz(port)
            yield port, dev.popen.pid
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]
        return
    url = f"sqlite:///{directory / 'scheduler.db'}"
    backends = {"SCHEDULER_STORE_URL": url, "SCHEDULER_QUEUE_URL": url}
    settings = {"SCHEDULER_API_AUTH": "none", "SCHEDULER_API_WORKERS": "2", **backends, **env}
    with running_components(directory, settings) as base:
        port = int(base.rsplit(":", 1)[1])
        yield port, listening_pid(port)


def wait_for_healthz(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while healthz(port) is None:
        assert time.monotonic() < deadline, "the API did not come up"
        time.sleep(0.1)


def listening_pids(port: int) -> list[int]:
    """The processes holding the socket that listens on ``port`` (from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            links = {
                os.readlink(f"/proc/{entry}/fd/{fd}") for fd in os.listdir(f"/proc/{entry}/fd")
            }
        except OSError:
            continue
        if links & inodes:
            pids.append(int(entry))
    return pids


def listening_pid(port: int) -> int:
    """The process listening on ``port``: of several (gunicorn's master and its workers), the
    one whose parent does not."""
    pids = listening_pids(port)
    first = [pid for pid in pids if _parent(pid) not in pids]
    assert len(first) == 1, pids
    return first[0]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def one_time(port: int, receiver: Receiver, due_in: float, name: str = "on-time") -> datetime:
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=due_in)
    body = {
        "name": name,
        "schedule": {"at": at.isoformat().replace("+00:00", "Z")},
        "payload": {"method": "POST", "url": f"{receiver.url}/{name}"},
    }
    assert request(port, "POST", f"{API}/schedule", body, timeout=10) == 202
    return at


def lateness(receiver: Receiver, due: datetime, path: str) -> float:
    calls = [call for call in receiver.wait_for(1, timeout=15) if call.path == path]
    assert calls, "the occurrence did not fire"
    return calls[0].received_at - due.timestamp()


@pytest.mark.parametrize("target", TARGETS)
def test_300_half_sent_requests_neither_starve_healthz_nor_delay_a_fire(
    tmp_path: Path, target: str
) -> None:
    with running_receiver() as receiver, service(target, tmp_path) as (port, _):
        due = one_time(port, receiver, due_in=4)
        with half_sent(port, 300) as held, Prober(port, 0.25) as prober:
            assert len(held) == 300
            time.sleep(6)
        answered = [latency for latency in prober.latencies if latency is not None]
        assert len(answered) == len(prober.latencies) >= 10, prober.latencies
        assert max(answered) < 1.0
        # On time as when nothing is attacked: lateness is milliseconds (a loaded machine
        # adds some); a stalled poller or executor would make it seconds.
        assert -0.05 < lateness(receiver, due, "/on-time") < 0.5


def test_trickling_headers_neither_take_the_api_down_nor_stay_connected(tmp_path: Path) -> None:
    env = {"SCHEDULER_API_CLIENT_TIMEOUT_SECONDS": "4"}
    with service("api", tmp_path, **env) as (port, _):
        # 32 sockets, one header line every 2 s for 10 s: each holds no thread, and the
        # server closes it once its request is 4 s late.
        outcome = trickle(port, count=32, interval=2.0, seconds=10.0)
    assert outcome["connections"] == 32
    assert outcome["answered"] == outcome["probes"] >= 8, outcome
    assert outcome["closed_by_server"] == 32, outcome
    assert outcome["closed_after_s"] <= 8.0, outcome


@pytest.mark.parametrize("target", TARGETS)
def test_threads_descriptors_and_memory_come_back_after_1000_half_sent_requests_leave(
    tmp_path: Path, target: str
) -> None:
    with service(target, tmp_path) as (port, served):
        for _ in range(20):  # the pools warm up
            assert healthz(port) is not None
        before = resources(served)
        with half_sent(port, 1000) as held:
            assert len(held) == 1000
            time.sleep(1)
            during = resources(served)
        # Each held connection is a descriptor, and no thread.
        assert during["fds"] >= before["fds"] + 900, (before, during)
        assert during["threads"] <= before["threads"] + 4, (before, during)
        deadline = time.monotonic() + 10
        while resources(served)["fds"] > before["fds"] + 8 and time.monotonic() < deadline:
            time.sleep(0.2)
        after = resources(served)
    assert after["fds"] <= before["fds"] + 8, (before, during, after)
    assert after["threads"] <= before["threads"] + 2, (before, during, after)
    assert after["rss_mb"] <= before["rss_mb"] + 30, (before, during, after)


@pytest.mark.parametrize("target", TARGETS)
def test_past_the_connection_bound_a_request_is_answered_503(tmp_path: Path, target: str) -> None:
    env = {"SCHEDULER_API_MAX_CONNECTIONS": "40", "SCHEDULER_API_WORKERS": "1"}
    with service(target, tmp_path, **env) as (port, _):
        with half_sent(port, 40, HALF_SENT) as held:
            assert len(held) == 40
            time.sleep(0.5)
            started = time.monotonic()
            assert request(port, "GET", "/healthz", timeout=5) == 503
            assert time.monotonic() - started < 2
        deadline = time.monotonic() + 5
        while healthz(port) is None:
            assert time.monotonic() < deadline, "the API did not serve again once they left"
            time.sleep(0.1)


def test_a_frozen_api_process_does_not_delay_the_fires_of_scheduler_dev(tmp_path: Path) -> None:
    # Whatever stalls the API (a request holding the CPU and the interpreter's lock, here a
    # SIGSTOP of its process), the processor, poller and executor go on in another process.
    with running_receiver() as receiver, service("dev", tmp_path) as (port, dev):
        due = one_time(port, receiver, due_in=3)
        api = listening_pid(port)
        assert api != dev
        os.kill(api, signal.SIGSTOP)
        try:
            late = lateness(receiver, due, "/on-time")
            assert healthz(port, timeout=0.5) is None  # frozen indeed
        finally:
            os.kill(api, signal.SIGCONT)
        assert -0.05 < late < 0.5
        assert healthz(port) is not None


def test_the_api_process_of_scheduler_dev_ends_with_it(tmp_path: Path) -> None:
    dev = Process(
        ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")], {}, tmp_path / "log"
    )
    port = int(dev.wait_for_output(r"API on http://127\.0\.0\.1:(\d+)").group(1))
    wait_for_healthz(port)
    api = listening_pid(port)
    dev.kill()  # kill -9: no chance to stop its child
    deadline = time.monotonic() + 10
    while Path(f"/proc/{api}").exists() and "zombie" not in _state(api):
        assert time.monotonic() < deadline, "the API process outlived scheduler dev"
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return re.sub(r"\s+", " ", Path(f"/proc/{pid}/status").read_text().split("State:")[1])
    except (OSError, IndexError):
        return "zombie"


def test_the_metrics_of_scheduler_dev_show_both_of_its_processes(tmp_path: Path) -> None:
    with running_receiver() as receiver, service("dev", tmp_path) as (port, _):
        due = one_time(port, receiver, due_in=2)
        lateness(receiver, due, "/on-time")
        time.sleep(1)  # the run is recorded after the call
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
    families = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(families) == len(set(families)), "a metric shown twice"
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    # The executor's (the parent process) and the API's (the child) side by side.
    assert samples["scheduler_fire_lateness_seconds_count"] == 1
    assert samples['scheduler_executions_total{outcome="succeeded"}'] == 1
    created = [
        value
        for name, value in samples.items()
        if name.startswith("scheduler_api_request_duration_seconds_count")
        and 'route="/scheduler-service/v1/schedule"' in name
    ]
    assert created == [1]
