"""The README's quick start and "Try it", run as written on a fresh copy of the repository.

The commands come from the README's own code blocks: the quick start's install line, then
``scheduler dev``, the receiver, the ``curl`` calls (``<id>`` replaced by the id the first
answer gave) and the signing secret. ``scripts/test`` is the only line left out (it is this
suite). The install reaches the package registry; everything after it runs in a network
namespace of its own, where the README's fixed ports are free and only loopback exists.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def blocks(title: str, language: str) -> list[str]:
    return [text for lang, text in BLOCK.findall(section(title)) if lang == language]


def one(candidates: list[str], marker: str) -> str:
    found = [text for text in candidates if marker in text]
    assert len(found) == 1, f"expected one block with {marker!r}, got {found}"
    return found[0]


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


def test_the_quick_start_and_try_it_work_as_written(tmp_path: Path) -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("this test needs unshare and ip (util-linux, iproute2) for its own network")
    quick = blocks("Quick start", "sh")
    assert len(quick) == 1
    run_line = one(quick[0].splitlines(), "scheduler dev")
    *install, dev = run_line.split("#")[0].strip().split(" && ")
    assert dev == ".venv/bin/scheduler dev"
    try_it = blocks("Try it", "sh")
    plan: dict[str, Any] = {
        "clone": str(fresh_copy(tmp_path / "clone")),
        "dev": dev,
        "receiver": one(try_it, "http.server").strip(),
        "create": one(try_it, "-X POST"),
        "then": one(try_it, "<id>").strip().splitlines(),
        "secret": one(try_it, "webhook-secret").strip(),
        "blueprint": one(blocks("The API", "json"), "start_date"),
    }
    environ = {
        name: value for name, value in os.environ.items() if not name.startswith("SCHEDULER_")
    }
    subprocess.run(
        ["bash", "-c", " && ".join(install)],
        cwd=plan["clone"],
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
        timeout=300,
    )
    assert inside.returncode == 0, inside.stdout[-3000:] + inside.stderr[-3000:]
    seen = json.loads(inside.stdout)

    created = seen["created"]
    assert created["status"] == "accepted" and created["next_schedule_time"].endswith("Z")
    # Every 10 s: the first call about ten seconds after the POST (slack for a busy machine).
    assert 5 <= seen["first_call_after_s"] <= 30
    shown, history, deleted = seen["then"]
    assert (shown["id"], shown["status"]) == (created["id"], "active")
    assert shown["next_schedule_time"] is not None
    assert any(run["status"] == "succeeded" for run in history["items"])
    assert all(
        run["http_status"] == 200 for run in history["items"] if run["status"] == "succeeded"
    )
    assert deleted == {"id": created["id"], "status": "deleted"}
    assert seen["secret"].startswith("whsec_")
    # The receiver serves an empty folder, on loopback only.
    assert seen["receiver_serves_data"] == 404
    assert seen["receiver_on_other_addresses"] is False
    assert seen["blueprint_status"] == 202
    assert seen["exit_codes"][0] == 0, seen["dev_log"]


def test_the_readme_documents_the_blueprint_date_format() -> None:
    api = section("The API")
    assert "`start_date` and `end_date` are MM/DD/YYYY" in api
    assert '"start_date": "05/02/2027"' in one(blocks("The API", "json"), "start_date")
