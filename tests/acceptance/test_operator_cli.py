"""``scheduler schedules …`` and ``scheduler executions …`` against a running ``scheduler dev``."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import SCHEDULER, Process
from tests.support.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[str]:
    process = Process(
        ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")], {}, tmp_path / "dev.log"
    )
    try:
        yield process.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
    finally:
        process.terminate()


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCHEDULER, *args],
        env={"SCHEDULER_API_URL": url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
    )


def body_file(tmp_path: Path, receiver: Receiver) -> Path:
    path = tmp_path / "schedule.json"
    path.write_text(
        json.dumps(
            {
                "name": "nightly-report",
                "schedule": {"cron": "@every 1s"},
                "payload": {"method": "POST", "url": f"{receiver.url}/report"},
            }
        )
    )
    return path


def test_create_get_list_pause_resume_trigger_delete_and_history(dev: str, tmp_path: Path) -> None:
    with running_receiver() as receiver:
        created = cli(
            dev, "schedules", "create", "-f", str(body_file(tmp_path, receiver)), "--id", "nightly"
        )
        assert created.returncode == 0, created.stderr
        assert "accepted" in created.stdout and "nightly" in created.stdout
        deadline = time.monotonic() + 5
        while cli(dev, "schedules", "get", "nightly").returncode != 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)

        shown = cli(dev, "schedules", "get", "nightly")
        assert "status:" in shown.stdout and "active" in shown.stdout

        listed = cli(dev, "schedules", "list")
        assert listed.returncode == 0, listed.stderr
        header, *rows = listed.stdout.splitlines()
        assert header.split()[:3] == ["ID", "NAME", "STATUS"]
        assert [row.split()[:3] for row in rows] == [["nightly", "nightly-report", "active"]]

        receiver.wait_for(2, timeout=5)
        history = cli(dev, "executions", "nightly")
        assert history.returncode == 0
        assert history.stdout.splitlines()[0].startswith("SCHEDULED (UTC)")
        assert "succeeded" in history.stdout

        changes = tmp_path / "changes.json"
        changes.write_text(json.dumps({"name": "renamed-report"}))
        updated = cli(dev, "schedules", "update", "nightly", "-f", str(changes))
        assert updated.returncode == 0, updated.stderr
        deadline = time.monotonic() + 5
        while "renamed-report" not in cli(dev, "schedules", "get", "nightly").stdout:
            assert time.monotonic() < deadline
            time.sleep(0.05)

        assert '"paused"' in cli(dev, "schedules", "pause", "nightly", "--json").stdout
        assert cli(dev, "schedules", "resume", "nightly").returncode == 0
        assert cli(dev, "schedules", "trigger", "nightly").returncode == 0
        now = time.time()
        stamp = "%Y-%m-%dT%H:%M:%SZ"
        backfill = cli(
            dev,
            "schedules",
            "backfill",
            "nightly",
            "--from",
            time.strftime(stamp, time.gmtime(now - 3)),
            "--to",
            time.strftime(stamp, time.gmtime(now - 1)),
        )
        assert backfill.returncode == 0, backfill.stderr
        assert "queued:" in backfill.stdout and "left_out:" in backfill.stdout
        assert cli(dev, "schedules", "delete", "nightly").returncode == 0
        kept = cli(dev, "executions", "nightly")  # the history outlives the schedule
        assert kept.returncode == 0 and "succeeded" in kept.stdout

        missing = cli(dev, "schedules", "get", "nightly")
        assert missing.returncode == 1
        assert missing.stderr.startswith("404 Not Found")


def test_bad_input_is_reported_with_the_fields_named(dev: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"schedule": {"cron": "99 * * * *"}, "payload": {"method": "GET", "url": "ftp://x"}}
        )
    )
    result = cli(dev, "schedules", "create", "-f", str(bad))
    assert result.returncode == 1
    assert "400" in result.stderr and "payload.url" in result.stderr
    unreachable = cli("http://127.0.0.1:9", "schedules", "list")
    assert unreachable.returncode == 1 and "cannot reach" in unreachable.stderr


def test_dead_letters_are_listed_replayed_and_discarded(dev: str, tmp_path: Path) -> None:
    with running_receiver(lambda call: (500, {})) as receiver:
        body = tmp_path / "failing.json"
        body.write_text(
            json.dumps(
                {
                    "schedule": {"cron": "0 0 1 1 *"},
                    "payload": {"method": "POST", "url": f"{receiver.url}/hook"},
                    "retry": {"max_attempts": 1},
                }
            )
        )
        assert cli(dev, "schedules", "create", "-f", str(body), "--id", "failing").returncode == 0
        deadline = time.monotonic() + 5
        while cli(dev, "schedules", "trigger", "failing").returncode != 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        listed = cli(dev, "dead-letters", "list")
        while "failing:manual:" not in listed.stdout:
            assert time.monotonic() < deadline + 10, listed.stderr
            time.sleep(0.1)
            listed = cli(dev, "dead-letters", "list")
        header, row = listed.stdout.splitlines()
        assert header.split()[:2] == ["OCCURRENCE", "FAILED"]
        occurrence_id = row.split()[0]
        replayed = cli(dev, "dead-letters", "replay", occurrence_id)
        assert replayed.returncode == 0, replayed.stderr
        assert "queued" in replayed.stdout
        receiver.wait_for(2, timeout=10)
        while " 2 " not in cli(dev, "dead-letters", "list").stdout:  # failed again: 2 attempts
            assert time.monotonic() < deadline + 20
            time.sleep(0.1)
        assert cli(dev, "dead-letters", "discard", occurrence_id).returncode == 0
        assert cli(dev, "dead-letters", "list").stdout.splitlines()[1:] == []
        gone = cli(dev, "dead-letters", "discard", occurrence_id)
        assert gone.returncode == 1 and gone.stderr.startswith("404")
