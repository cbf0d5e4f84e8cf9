"""A component never guesses its backends: started without ``SCHEDULER_STORE_URL`` and
``SCHEDULER_QUEUE_URL`` it refuses, naming the setting and how to point it at ``scheduler dev``'s
data on purpose, and touches nothing. Only ``scheduler dev`` has a default, a private folder.

Run through the real ``scheduler`` command, as a user would, in folders of the test's own.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.processes import SCHEDULER, Process

pytestmark = pytest.mark.slow

COMMANDS = ("api", "processor", "poller", "executor", "reseal")
# What the folder and every file in it look like: names, sizes, modes, modification times.
Snapshot = dict[str, tuple[int, int, int]]


def environment(**variables: str) -> dict[str, str]:
    """This process's environment without any ``SCHEDULER_*`` variable, plus ``variables``."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("SCHEDULER_")}
    return {**kept, **variables}


def scheduler(
    args: list[str], folder: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCHEDULER, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=60
    )


def snapshot(folder: Path) -> Snapshot:
    return {
        str(path.relative_to(folder)): (
            path.stat().st_size,
            path.stat().st_mode,
            path.stat().st_mtime_ns,
        )
        for path in [folder, *folder.rglob("*")]
    }


def run_dev_once(folder: Path) -> str:
    """``scheduler dev`` started in ``folder`` and stopped once it serves: its banner."""
    dev = Process(["dev", "--port", "0"], {}, folder / "dev.log")
    try:
        dev.wait_for_output(r"Ctrl-C stops")
    finally:
        assert dev.terminate() == 0, dev.output()[-3000:]
    return dev.output()


def test_a_component_refuses_beside_dev_data_and_says_how_to_use_it(tmp_path: Path) -> None:
    run_dev_once(tmp_path)
    data = tmp_path / "scheduler-data"
    before = snapshot(data)
    url = f"sqlite:///{data / 'scheduler.db'}"
    for command in COMMANDS:
        refused = scheduler([command], tmp_path, environment())
        assert refused.returncode == 2, (command, refused.stdout, refused.stderr)
        message = refused.stderr
        assert message.startswith(f"scheduler {command}: SCHEDULER_STORE_URL is not set"), message
        assert f"export SCHEDULER_STORE_URL={url} SCHEDULER_QUEUE_URL={url}" in message
        assert "Traceback" not in message
    # The store alone is not enough for a component: the queues are named too.
    half = scheduler(["executor"], tmp_path, environment(SCHEDULER_STORE_URL=url))
    assert half.returncode == 2
    assert half.stderr.startswith("scheduler executor: SCHEDULER_QUEUE_URL is not set")
    assert snapshot(data) == before

    # The hint, followed as printed, runs the executor on dev's data, signing as dev does.
    exports = [
        line.strip() for line in refused.stderr.splitlines() if line.strip().startswith("export ")
    ]
    assert len(exports) == 3
    executable = Path(sys.executable).parent / "scheduler"
    log_path = tmp_path / "executor.log"
    with log_path.open("wb") as log:
        executor = subprocess.Popen(
            ["bash", "-c", f"{exports[1]} && {exports[2]} && exec {executable} executor"],
            cwd=tmp_path,
            env=environment(SCHEDULER_LOG_FORMAT="text"),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while "executor started" not in log_path.read_text() and executor.poll() is None:
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.05)
            assert "executor started" in log_path.read_text(), log_path.read_text()
            assert "unsigned" not in log_path.read_text()
        finally:
            executor.send_signal(signal.SIGTERM)
            assert executor.wait(30) == 0, log_path.read_text()[-3000:]


def test_a_component_started_in_an_empty_folder_refuses_and_makes_nothing(tmp_path: Path) -> None:
    for command in COMMANDS:
        refused = scheduler([command], tmp_path, environment())
        assert refused.returncode == 2, (command, refused.stderr)
        assert "SCHEDULER_STORE_URL is not set" in refused.stderr
        assert "sqlite:///<folder>/scheduler-data/scheduler.db" in refused.stderr
        assert list(tmp_path.iterdir()) == []


def test_dev_keeps_its_folder_private(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    banner = run_dev_once(fresh)
    data = fresh / "scheduler-data"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert re.search(rf"data in {re.escape(str(data))} \(kept across restarts; private\)", banner)
    for name in ("scheduler.db", "webhook-secret", "secret-keys"):
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name

    # A folder someone left open to others is tightened, and the banner says so.
    opened = tmp_path / "opened"
    (opened / "scheduler-data").mkdir(parents=True)
    (opened / "scheduler-data").chmod(0o755)
    banner = run_dev_once(opened)
    assert stat.S_IMODE((opened / "scheduler-data").stat().st_mode) == 0o700
    assert "made private: it was mode 0755" in banner
