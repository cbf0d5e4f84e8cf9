"""The README, top to bottom, as a script: every command and example in it, run as written, one
after the other on a fresh copy of the repository.

The commands come from the README's own code blocks and the operator commands it names: the
quick start's install line, then ``scheduler dev``, "Try it" (its receiver, the ``curl`` calls
with ``<id>`` replaced by the id the first answer gave, the signing secret), the blueprint's
body and the PATCH example, the Python client called by the receiver that verifies signatures,
the operator's command line, and the ``.env`` docker compose reads. ``scripts/test`` is left
out (it is this suite), and so is what needs a Docker engine (checked by
``tests/unit/test_deployment.py``); every block of the README is accounted for below. The
install reaches the package registry; everything after it runs in a network namespace of its
own, where the README's fixed ports are free and only loopback exists. "Running on MongoDB and
SQS" runs on its own, its placeholders filled with the wire peers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pymongo
import pytest

from shared.lateness import LATE, MISSED
from shared.model import FailureHook
from shared.notifying import DEAD_LETTERED, FailureEvent
from shared.settings import Settings
from shared.timeutil import parse_iso
from tests.support import peers
from tests.support.processes import COMPONENTS, free_port, http_json, wait_until_healthy

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# A fenced block, at the margin or indented in a list item.
BLOCK = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
# Operator commands the README names in its text (its block of them is run as written too).
NAMED = ["scheduler keys create TENANT", "scheduler secret-key"]
# The blocks not run here, and why; every other block is run.
# The notifications whose bodies the README shows (the pause's is told in words).
NOTIFICATIONS = (DEAD_LETTERED, LATE, MISSED)
NOT_RUN = {
    "docker compose up": "needs a Docker engine: tests/unit/test_deployment.py reads compose",
    "docker compose logs -f receiver": "compose's receiver: tests/unit/test_deployment.py",
    "docker compose up -d mongo localstack": "needs a Docker engine",
    "export SCHEDULER_STORE_URL=mongodb://db.example.com": "its placeholders filled: "
    "test_the_production_block_runs_on_mongodb_and_sqs",
    "client ─HTTP─▶ API": "a diagram",
}


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def blocks(text: str = README, language: str | None = None) -> list[str]:
    return [
        textwrap.dedent(indent + body).strip("\n") + "\n"
        for indent, lang, body in BLOCK.findall(text)
        if language is None or lang == language
    ]


def one(candidates: list[str], marker: str) -> str:
    found = [text for text in candidates if marker in text]
    assert len(found) == 1, f"expected one block with {marker!r}, got {found}"
    return found[0]


def bare(text: str) -> str:
    """A block's lines without their comments and outer spaces, to compare."""
    return "\n".join(line.split("  #")[0].strip() for line in text.strip().splitlines())


def fresh_copy(destination: Path) -> Path:
    """The repository's files as they are in the work tree, without its .venv or data."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def the_plan(clone: Path) -> tuple[dict[str, Any], list[str]]:
    """What readme_run.py runs, and the install line before it."""
    quick = blocks(section("Quick start"), "sh")
    assert len(quick) == 1
    run_line = one(quick[0].splitlines(), "scheduler dev")
    *install, dev = run_line.split("#")[0].strip().split(" && ")
    assert dev == ".venv/bin/scheduler dev"
    try_it = blocks(section("Try it"), "sh")
    api = section("The API")
    running = section("Running on MongoDB and SQS")
    for command in NAMED:
        assert f"`{command}`" in README, command
    operations = one(blocks(section("Operations"), "sh"), "scheduler schedules list")
    cli = bare(operations).splitlines()
    plan = {
        "clone": str(clone),
        "dev": dev,
        "receiver": one(try_it, "scheduler receiver").strip(),
        "create": one(try_it, "-X POST"),
        "then": one(try_it, "<id>").strip().splitlines(),
        "secret": one(try_it, "webhook-secret").strip(),
        "blueprint": one(blocks(api, "json"), "start_date"),
        "patch": one(blocks(api, "sh"), "-X PATCH"),
        "client": one(blocks(language="python"), "from scheduler_client import"),
        "receiver_py": one(blocks(language="python"), "# receiver.py"),
        "cli": cli + [f".venv/bin/{command}" for command in NAMED],
    }
    env_block = one(blocks(running, "sh"), "test -f .env").splitlines()
    plan["env_file"] = "\n".join(env_block[:2])
    plan["grep_env"] = env_block[2].split("#")[0].strip()
    return plan, install


def test_every_block_of_the_readme_is_run_or_said_why_not() -> None:
    plan, _ = the_plan(Path("/nowhere"))
    run = [value for value in plan.values() if isinstance(value, str)]
    run += ["\n".join(plan["then"]), "\n".join(plan["cli"])]
    for block in blocks():
        if any(marker in block for marker in NOT_RUN):
            continue
        if any(f'"type": "{kind}"' in block for kind in NOTIFICATIONS):
            continue  # the notifications: test_the_failure_notifications_are_as_shown
        if block.startswith("python3 -m venv"):
            continue  # the quick start: run by the install and "dev" of the plan
        assert any(bare(block) in bare(text) for text in run), block


def test_every_file_of_the_repository_the_readme_names_exists() -> None:
    # Named by its path in the repository; a bare name only for a file the README's own block
    # writes ("# receiver.py: ..."). The API's modules once went by bare names that no longer
    # existed (service.py, responses.py) after they moved into packages.
    written_here = set(re.findall(r"^# (\S+\.py):", README, re.MULTILINE))
    named = [name for name in re.findall(r"`([^`\s]+\.py)`", README) if name not in written_here]
    assert len(named) >= 5
    assert [name for name in named if not (ROOT / name).is_file()] == []


@pytest.mark.parametrize("kind", NOTIFICATIONS)
def test_the_failure_notifications_are_as_shown(kind: str) -> None:
    shown = json.loads(one(blocks(section("The API"), "json"), f'"type": "{kind}"'))
    event = FailureEvent(
        type=kind,
        hook=FailureHook("https://hooks.example.com/failed"),
        tenant="default",
        schedule_id=shown["schedule_id"],
        occurrence_id=shown["occurrence_id"],
        error=shown["error"],
        http_status=shown["http_status"],
        at=parse_iso(shown["time"]),
        scheduled_time=parse_iso(shown["scheduled_time"]) if "scheduled_time" in shown else None,
        late_after_seconds=shown.get("late_after_seconds"),
    )
    assert json.loads(event.body()) == shown


def test_the_readme_from_top_to_bottom(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("this test needs unshare and ip (util-linux, iproute2) for its own network")
    clone = fresh_copy(tmp_path / "clone")
    plan, install = the_plan(clone)
    environ = {
        name: value for name, value in os.environ.items() if not name.startswith("SCHEDULER_")
    }
    subprocess.run(
        ["bash", "-c", " && ".join(install)],
        cwd=clone,
        env=environ,
        check=True,
        capture_output=True,
        timeout=540,
    )
    inside = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--net",
            "bash",
            "-c",
            'ip link set lo up && exec "$0" "$@"',
            sys.executable,
            str(ROOT / "tests" / "support" / "readme_run.py"),
        ],
        input=json.dumps(plan),
        env=environ,
        capture_output=True,
        text=True,
        timeout=420,
    )
    assert inside.returncode == 0, inside.stdout[-3000:] + inside.stderr[-3000:]
    seen = json.loads(inside.stdout)

    # Quick start: the banner's URL is the one the README shows; the data folder is private.
    assert "API on http://127.0.0.1:8080/scheduler-service/v1" in seen["banner"]
    assert seen["data_mode"] == "0o700"

    # Try it: the first call about ten seconds after the POST (slack for a busy machine).
    created = seen["created"]
    assert created["status"] == "accepted" and created["next_schedule_time"].endswith("Z")
    assert 5 <= seen["first_call_after_s"] <= 30
    shown, history, deleted = seen["then"]
    assert (shown["id"], shown["status"]) == (created["id"], "active")
    assert shown["next_schedule_time"] is not None
    assert history["items"] and {run["status"] for run in history["items"]} <= {
        "succeeded",
        "running",
    }
    assert all(
        run["http_status"] == 200 for run in history["items"] if run["status"] == "succeeded"
    )
    assert deleted == {"id": created["id"], "status": "deleted"}
    assert seen["secret"].startswith("whsec_")
    # The receiver prints each call with its occurrence, serves no file, listens on loopback.
    assert f"GET  /?from=scheduler  Idempotency-Key: {created['id']}:" in seen["receiver_log"]
    assert seen["receiver_serves"] == ""
    assert seen["receiver_on_other_addresses"] is False

    # The API: the blueprint's body is accepted, and the PATCH example changes only the URL.
    status, blueprint = seen["blueprint"]
    assert status == 202, blueprint
    assert seen["patched"]["status"] == "accepted"
    assert seen["after_patch"]["payload"]["url"] == "http://127.0.0.1:9000/?v=2"
    assert seen["after_patch"]["name"] == "testing"

    # The client's schedule calls the receiver that verifies, and a body-less GET is verified.
    client_id = seen["client"].split()[0]
    assert "fires first at" in seen["client"]
    log = seen["receiver_py_log"]
    assert re.search(rf'verified POST {client_id}:\S+ {{"hello": ?"world"}}', log), log
    assert re.search(r"verified GET \S+ \(no body\)", log), log
    assert "refused" not in log and "Traceback" not in log

    # The operator's commands, against the API the README's default URL names.
    cli = seen["cli"]
    assert client_id in cli["scheduler schedules list"]
    assert "status:" in cli["scheduler schedules get ID"]
    assert cli["scheduler executions ID"].startswith("SCHEDULED (UTC)")
    assert cli["scheduler dead-letters list"].startswith("OCCURRENCE")
    assert cli["scheduler schedules pause ID"].strip() == f"{client_id} (hello): paused by user"
    assert "fires next at" in cli["scheduler schedules resume ID"]
    # Newest first: the resume and the pause just made, then the client's create.
    changes = [line.split() for line in cli["scheduler schedules changes ID"].splitlines()]
    assert changes[0][:3] == ["TIME", "(UTC)", "ACTOR"]
    assert [line[2] for line in changes[1:]] == ["resume", "pause", "create"]
    assert cli["scheduler keys create TENANT"].startswith("key: ")
    assert Settings.from_env({"SCHEDULER_SECRET_KEYS": cli["scheduler secret-key"].strip()})

    # The .env docker compose needs: a signing secret and a sealing key the settings accept.
    env = dict(line.split("=", 1) for line in seen["env_file"].splitlines())
    settings = Settings.from_env({f"{name}": value for name, value in env.items()})
    assert settings.webhook_secret.startswith("whsec_") and settings.secret_keys
    assert seen["grep_env"].startswith("SCHEDULER_WEBHOOK_SECRET=whsec_")

    # Everything stops cleanly on Ctrl-C.
    assert seen["exit_codes"] == {"receiver": 0, "receiver.py": -2, "dev": 0}, (
        seen["stuck"],
        seen["dev_log"],
    )


def test_the_readme_documents_the_blueprint_date_format() -> None:
    api = section("The API")
    assert "`start_date` and `end_date` are MM/DD/YYYY" in api
    assert '"start_date": "05/02/2027"' in one(blocks(api, "json"), "start_date")


def test_the_production_block_runs_on_mongodb_and_sqs(
    tmp_path: Path,
    nx_27017: peers.Peer,
    localstack: peers.Peer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Running on MongoDB and SQS", its placeholders filled with the wire peers (and a database
    and queues of this test's own): the four commands start, serve and stop."""
    block = one(blocks(section("Running on MongoDB and SQS"), "sh"), "SCHEDULER_STORE_URL")
    lines = bare(block).splitlines()
    exports = [line for line in lines if line.startswith("export ")]
    commands = [line for line in lines if not line.startswith("export ")]
    assert commands == [f"scheduler {name}" for name in COMPONENTS]
    filled = [
        line.replace("mongodb://db.example.com:27017/?replicaSet=rs0", nx_27017.url)
        .replace("sqs://?region=eu-west-1", f"sqs+{localstack.url}?region={peers.REGION}")
        .replace("whsec_…", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        .replace("…", peers.SECRET_KEY)
        for line in exports
    ]
    assert not [line for line in filled if "…" in line or "example.com" in line]
    peers.fake_aws(monkeypatch, tmp_path)
    suffix = uuid.uuid4().hex[:8]
    port = free_port()
    own = {
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_WORKERS": "1",
        "SCHEDULER_MONGO_DATABASE": f"scheduler_test_{suffix}",
        "SCHEDULER_MUTATIONS_QUEUE": f"mutations-{suffix}",
        "SCHEDULER_OCCURRENCES_QUEUE": f"occurrences-{suffix}",
        "SCHEDULER_DEAD_LETTER_QUEUE": f"dead-letters-{suffix}",
        "SCHEDULER_LOG_FORMAT": "text",
    }
    environ = {
        **{name: value for name, value in os.environ.items() if not name.startswith("SCHEDULER_")},
        **own,
    }
    executable = Path(sys.executable).parent / "scheduler"
    started: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for command in commands:
            name = command.split()[1]
            with (tmp_path / f"{name}.log").open("wb") as log:
                started[name] = subprocess.Popen(
                    ["bash", "-c", " && ".join([*filled, f"exec {executable} {name}"])],
                    env=environ,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        wait_until_healthy(f"http://127.0.0.1:{port}")
        status, ready = http_json("GET", f"http://127.0.0.1:{port}/readyz")
        assert status == 200, ready
        # Keys are the default outside scheduler dev: no key, no schedules.
        status, _ = http_json("GET", f"http://127.0.0.1:{port}/scheduler-service/v1/schedules")
        assert status == 401
        for name in COMPONENTS[1:]:
            deadline = time.monotonic() + 60
            while f"{name} started" not in (tmp_path / f"{name}.log").read_text():
                assert started[name].poll() is None, (tmp_path / f"{name}.log").read_text()
                assert time.monotonic() < deadline, name
                time.sleep(0.1)
    finally:
        for process in started.values():
            process.send_signal(signal.SIGTERM)
        codes = {name: process.wait(60) for name, process in started.items()}
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(nx_27017.url)
        client.drop_database(own["SCHEDULER_MONGO_DATABASE"])
        client.close()
    assert set(codes.values()) == {0}, {
        n: (tmp_path / f"{n}.log").read_text()[-2000:] for n in codes
    }
