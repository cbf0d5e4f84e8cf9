"""Runs the README's "Try it" against its quick start's ``scheduler dev``, command by command as
written, and prints what a reader would see as JSON.

Started by ``tests/acceptance/test_readme.py`` inside a network namespace of its own (only
loopback), so the README's fixed ports 8080 and 9000 collide with nothing. It reads its plan as
JSON on standard input: the copy of the repository to run in and the README's commands.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

API = "http://127.0.0.1:8080/scheduler-service/v1"


def shell(command: str, cwd: Path) -> str:
    """One README command, as written, by bash."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout


def start(command: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def wait_for(condition: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"no {what} within {timeout} s")
        time.sleep(0.1)
    return time.monotonic() - started


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except (urllib.error.URLError, OSError):
        return False


def status_of(url: str, body: bytes | None = None) -> int:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"} if body else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return True
    return False


def main() -> None:
    plan = json.load(sys.stdin)
    clone = Path(plan["clone"])
    seen: dict[str, Any] = {}
    receiver_log = clone.parent / "receiver.log"
    receiver = start(plan["receiver"], clone, receiver_log)
    dev = start(plan["dev"], clone, clone.parent / "dev.log")
    try:
        wait_for(lambda: answers("http://127.0.0.1:8080/healthz"), 60, "scheduler dev")
        wait_for(lambda: not refused("127.0.0.1", 9000), 10, "receiver")
        seen["created"] = json.loads(shell(plan["create"], clone))
        seen["first_call_after_s"] = wait_for(
            lambda: "GET /?from=scheduler" in receiver_log.read_text(), 40, "webhook call"
        )
        schedule_id = seen["created"]["id"]
        seen["then"] = [
            json.loads(shell(line.replace("<id>", schedule_id), clone)) for line in plan["then"]
        ]
        seen["secret"] = shell(plan["secret"], clone).strip()
        seen["receiver_serves_data"] = status_of(
            "http://127.0.0.1:9000/scheduler-data/webhook-secret"
        )
        seen["receiver_on_other_addresses"] = not refused("127.0.0.2", 9000)
        seen["blueprint_status"] = status_of(f"{API}/schedule", plan["blueprint"].encode())
    finally:
        for process in (dev, receiver):
            process.send_signal(signal.SIGINT)  # Ctrl-C
        for process in (dev, receiver):
            try:
                seen.setdefault("exit_codes", []).append(process.wait(timeout=30))
            except subprocess.TimeoutExpired:
                process.kill()
                seen.setdefault("exit_codes", []).append(process.wait())
        seen["dev_log"] = (clone.parent / "dev.log").read_text()[-3000:]
        json.dump(seen, sys.stdout)


if __name__ == "__main__":
    main()
