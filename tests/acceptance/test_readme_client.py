"""The README's Python client and signature-verifying receiver, run as written against
``scheduler dev`` (only the ports are changed, to free ones)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.processes import Process, free_port

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_block(starting_with: str) -> str:
    for block in re.findall(r"```python\n(.*?)```", README.read_text(), re.DOTALL):
        if block.startswith(starting_with):
            return str(block)
    raise AssertionError(f"no python block of the README starts with {starting_with!r}")


def wait_for_line(log: Path, pattern: str, timeout: float = 20.0) -> re.Match[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{log.name} never printed {pattern!r}:\n{log.read_text()[-2000:]}")


def test_the_readme_client_creates_a_schedule_whose_calls_the_readme_receiver_verifies(
    tmp_path: Path,
) -> None:
    dev = Process(["dev", "--port", "0"], {}, tmp_path / "dev.log")
    receiver_port = free_port()
    receiver_log = (tmp_path / "receiver.log").open("wb")
    (tmp_path / "receiver.py").write_text(readme_block("# receiver.py"))
    receiver = None
    try:
        api = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
        base = api.removesuffix("/scheduler-service/v1")
        receiver = subprocess.Popen(
            [sys.executable, "receiver.py"],
            cwd=tmp_path,
            env={**os.environ, "PORT": str(receiver_port)},
            stdout=receiver_log,
            stderr=subprocess.STDOUT,
        )
        client_code = (
            readme_block("from scheduler_client")
            .replace("http://127.0.0.1:8080", base)
            .replace("127.0.0.1:9000", f"127.0.0.1:{receiver_port}")
        )
        ran = subprocess.run(
            [sys.executable, "-c", client_code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        schedule_id = ran.stdout.split()[0]
        assert "fires first at" in ran.stdout

        verified = wait_for_line(tmp_path / "receiver.log", r"verified (\S+) (\S+) (.*)")
        assert verified.group(1) == "POST"
        assert verified.group(2).startswith(f"{schedule_id}:")
        assert json.loads(verified.group(3)) == {"hello": "world"}

        forged = urllib.request.Request(
            f"http://127.0.0.1:{receiver_port}/hook",
            data=b'{"hello": "world"}',
            headers={
                "webhook-id": "forged",
                "webhook-timestamp": str(int(time.time())),
                "webhook-signature": "v1,bm90IHRoZSBzaWduYXR1cmU=",
            },
            method="POST",
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(forged, timeout=5)
        assert refused.value.code == 401
        refused.value.close()
        wait_for_line(tmp_path / "receiver.log", r"refused: ")
    finally:
        if receiver is not None:
            receiver.terminate()
            receiver.wait(10)
        receiver_log.close()
        assert dev.terminate() == 0, dev.output()[-3000:]
