"""``scheduler api`` (gunicorn) in production mode: every line it writes is JSON."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.harness import API
from tests.support.processes import Process, free_port, http_json, wait_until_healthy

pytestmark = pytest.mark.slow


def test_every_line_of_the_api_process_is_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    port = free_port()
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_WORKERS": "1",
        "SCHEDULER_API_AUTH": "none",
        "SCHEDULER_LOG_FORMAT": "json",
    }
    process = Process(["api"], env, tmp_path / "api.log")
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, process)
        assert http_json("GET", f"{base}{API}/schedule/nope")[0] == 404
    finally:
        assert process.terminate() == 0
    lines = process.output().splitlines()
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            pytest.fail(f"not a JSON line: {line!r}\n" + "\n".join(lines))
    gunicorn = [entry["message"] for entry in entries if entry["logger"] == "gunicorn.error"]
    assert any("Booting worker" in message for message in gunicorn), lines
    assert any("Shutting down" in message for message in gunicorn), lines


def test_the_quota_holds_exactly_across_two_api_processes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    port = free_port()
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_WORKERS": "2",
        "SCHEDULER_API_AUTH": "none",
        "SCHEDULER_TENANT_SCHEDULE_QUOTA": "5",
    }
    process = Process(["api"], env, tmp_path / "api.log")
    base = f"http://127.0.0.1:{port}"
    body = {
        "name": "crowd",
        "schedule": {"cron": "0 9 * * *"},
        "payload": {"method": "POST", "url": "https://hooks.example.com/crowd"},
    }
    try:
        wait_until_healthy(base, process)
        # No processor runs: every accepted create stays on queue 1, where neither API process
        # can count it by looking at the schedules.
        with ThreadPoolExecutor(50) as pool:
            statuses = list(
                pool.map(lambda _: http_json("POST", f"{base}{API}/schedule", body)[0], range(50))
            )
        pids = process.output().count("Booting worker")
    finally:
        assert process.terminate() == 0
    assert pids == 2
    assert sorted(statuses) == [202] * 5 + [403] * 45, statuses


def test_waiting_for_an_api_that_exits_fails_at_once_with_its_log(tmp_path: Path) -> None:
    port = free_port()
    env = {
        "SCHEDULER_STORE_URL": "nosuch://store",
        "SCHEDULER_QUEUE_URL": "nosuch://queue",
        "SCHEDULER_PORT": str(port),
    }
    process = Process(["api"], env, tmp_path / "api.log")
    try:
        with pytest.raises(AssertionError) as failure:
            wait_until_healthy(f"http://127.0.0.1:{port}", process)
    finally:
        process.terminate()
    # Not the deadline's message: the exit, and why, from the process's own output.
    assert "exited (2) before" in str(failure.value)
    assert "unsupported backend URL 'nosuch://store'" in str(failure.value)


def test_two_api_processes_at_once_share_no_control_socket(tmp_path: Path) -> None:
    # gunicorn's control socket would be $XDG_RUNTIME_DIR/gunicorn.ctl, else
    # $HOME/.gunicorn/gunicorn.ctl: one path for every instance of a user.
    home = tmp_path / "home"
    runtime = tmp_path / "runtime"
    home.mkdir()
    runtime.mkdir()
    processes: list[tuple[Process, str]] = []
    try:
        for name in ("first", "second"):
            url = f"sqlite:///{tmp_path / f'{name}.db'}"
            port = free_port()
            env = {
                "HOME": str(home),
                "XDG_RUNTIME_DIR": str(runtime),
                "SCHEDULER_STORE_URL": url,
                "SCHEDULER_QUEUE_URL": url,
                "SCHEDULER_PORT": str(port),
                "SCHEDULER_API_WORKERS": "2",
                "SCHEDULER_API_AUTH": "none",
            }
            processes.append(
                (Process(["api"], env, tmp_path / f"{name}.log"), f"http://127.0.0.1:{port}")
            )
        for process, base in processes:
            wait_until_healthy(base, process)
        for _, base in processes:
            assert http_json("GET", f"{base}{API}/schedule/nope")[0] == 404
        # No socket file of either, at the shared path or anywhere else under these folders.
        assert list(home.rglob("*")) == list(runtime.rglob("*")) == []
        # One stopping leaves the other serving.
        assert processes[0][0].terminate() == 0
        assert http_json("GET", f"{processes[1][1]}/healthz")[0] == 200
    finally:
        codes = [process.terminate() for process, _ in processes]
    assert codes == [0, 0]
    for process, _ in processes:
        assert "Control socket" not in process.output(), process.output()


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (exited, or a zombie no one reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_workers_stop_when_their_master_is_killed_and_the_port_is_free_again(
    tmp_path: Path,
) -> None:
    # uvicorn's gunicorn worker never looked at its parent: after a kill -9 of the master it
    # served on, alone, holding the port, so that the next `scheduler api` could not start.
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    port = free_port()
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_WORKERS": "2",
        "SCHEDULER_API_AUTH": "none",
    }
    first = Process(["api"], env, tmp_path / "first.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(base, first)
        workers = [
            int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", first.output())
        ]
        assert len(workers) == 2, first.output()
    finally:
        first.kill()
    deadline = time.monotonic() + 30.0
    while not all(gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in workers if not gone(pid)] == [], first.output()[-2000:]
    second = Process(["api"], env, tmp_path / "second.log")
    try:
        # Bound by the new master (an orphan answering /healthz would pass for it).
        second.wait_for_output(rf"Listening at: {base} \({second.popen.pid}\)")
        wait_until_healthy(base, second)
    finally:
        assert second.terminate() == 0
