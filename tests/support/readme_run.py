"""Runs the README top to bottom against its quick start's ``scheduler dev``, command by command
as written, and prints what a reader would see as JSON.

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
# Each process that Ctrl-C did not stop: its signal state when it was killed (/proc).
STUCK: dict[int, list[str]] = {}


def shell(command: str, cwd: Path, check: bool = True) -> str:
    """One README command, as written, by bash."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"{command!r} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def as_from_a_terminal() -> None:
    """What a reader's shell gives a command: Ctrl-C delivered (SIGINT not ignored, no signal
    blocked), whatever the test run was started with (a background job hands SIGINT down
    ignored; a library thread may have blocked signals)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def start(command: str, cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=cwd,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=as_from_a_terminal,
        )


def stop(process: subprocess.Popen[bytes]) -> int:
    """Ctrl-C, as a reader stops it."""
    process.send_signal(signal.SIGINT)
    try:
        return process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        status = Path(f"/proc/{process.pid}/status").read_text().splitlines()
        STUCK[process.pid] = [line for line in status if line.startswith(("State", "Sig"))]
        process.kill()
        return process.wait()


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


def fetch(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"} if body else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as error:
        with error:
            return int(error.code), error.read()


def refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return True
    return False


def main() -> None:
    plan = json.load(sys.stdin)
    clone = Path(plan["clone"])
    logs = clone.parent
    seen: dict[str, Any] = {"exit_codes": {}}
    receiver_log = logs / "receiver.log"
    receiver = start(plan["receiver"], clone, receiver_log)
    dev = start(plan["dev"], clone, logs / "dev.log")
    python_receiver = None
    try:
        # Quick start and "Try it": a reader goes on once the banner shows (dev prints it once
        # its API serves).
        wait_for(lambda: "Ctrl-C stops" in (logs / "dev.log").read_text(), 60, "dev's banner")
        wait_for(lambda: answers("http://127.0.0.1:8080/healthz"), 60, "scheduler dev")
        wait_for(lambda: not refused("127.0.0.1", 9000), 10, "receiver")
        seen["banner"] = (logs / "dev.log").read_text()
        seen["created"] = json.loads(shell(plan["create"], clone))
        seen["first_call_after_s"] = wait_for(
            lambda: "GET  /?from=scheduler" in receiver_log.read_text(), 40, "webhook call"
        )
        schedule_id = seen["created"]["id"]
        seen["then"] = [
            json.loads(shell(line.replace("<id>", schedule_id), clone)) for line in plan["then"]
        ]
        seen["secret"] = shell(plan["secret"], clone).strip()
        served = fetch("http://127.0.0.1:9000/scheduler-data/webhook-secret")[1]
        seen["receiver_serves"] = served.decode()
        seen["receiver_on_other_addresses"] = not refused("127.0.0.2", 9000)
        seen["receiver_log"] = receiver_log.read_text()

        # The API: the blueprint's body, then the PATCH example on the schedule it made.
        status, answer = fetch(f"{API}/schedule", plan["blueprint"].encode())
        seen["blueprint"] = [status, json.loads(answer)]
        blueprint_id = json.loads(answer)["id"]
        wait_for(lambda: fetch(f"{API}/schedule/{blueprint_id}")[0] == 200, 10, "blueprint")
        seen["patched"] = json.loads(shell(plan["patch"].replace("<id>", blueprint_id), clone))
        wait_for(lambda: b"?v=2" in fetch(f"{API}/schedule/{blueprint_id}")[1], 10, "the patch")
        seen["after_patch"] = json.loads(fetch(f"{API}/schedule/{blueprint_id}")[1])

        # The Python client, called by the receiver that verifies signatures (in place of
        # "scheduler receiver": both take port 9000).
        seen["exit_codes"]["receiver"] = stop(receiver)
        (clone / "receiver.py").write_text(plan["receiver_py"])
        python_log = logs / "receiver-py.log"
        python_receiver = start(".venv/bin/python receiver.py", clone, python_log)
        wait_for(lambda: not refused("127.0.0.1", 9000), 20, "receiver.py")
        (clone / "client_example.py").write_text(plan["client"])
        seen["client"] = shell(".venv/bin/python client_example.py", clone)
        client_id = seen["client"].split()[0]
        wait_for(
            lambda: f"verified POST {client_id}:" in python_log.read_text(), 40, "a verified call"
        )
        # A call without a body (GET) is verified too.
        get_hook = json.dumps(
            {
                "name": "bodiless",
                "schedule": {"cron": "@every 1s"},
                "payload": {"method": "GET", "url": "http://127.0.0.1:9000/ping"},
            }
        ).encode()
        bodiless = json.loads(fetch(f"{API}/schedule", get_hook)[1])["id"]
        wait_for(
            lambda: f"verified GET {bodiless}:" in python_log.read_text(), 40, "a body-less call"
        )
        seen["receiver_py_log"] = python_log.read_text()

        # The operator's command line, as the Operations section names it.
        for command in plan["cli"]:
            line = command.replace("ID", client_id).replace("TENANT", "acme")
            seen.setdefault("cli", {})[command.removeprefix(".venv/bin/")] = shell(line, clone)

        # docker-compose's .env, made as the README makes it (compose itself needs Docker).
        shell(plan["env_file"], clone)
        seen["env_file"] = (clone / ".env").read_text()
        seen["grep_env"] = shell(plan["grep_env"], clone)
    finally:
        for name, process in (("receiver.py", python_receiver), ("dev", dev)):
            if process is not None:
                seen["exit_codes"][name] = stop(process)
        if receiver.poll() is None:
            seen["exit_codes"]["receiver"] = stop(receiver)
        seen["dev_log"] = (logs / "dev.log").read_text()[-3000:]
        seen["stuck"] = STUCK
        seen["data_mode"] = oct((clone / "scheduler-data").stat().st_mode & 0o777)
        json.dump(seen, sys.stdout)


if __name__ == "__main__":
    main()
