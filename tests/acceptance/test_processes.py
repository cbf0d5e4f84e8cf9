"""The real command line: ``scheduler dev``, and the four components as separate processes.

The four components run on one SQLite file, and on MongoDB and SQS over the wire.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.harness import API
from tests.support.peers import ComponentBackends
from tests.support.processes import Process, create_schedule, http_json, running_components
from tests.support.receiver import running_receiver

pytestmark = pytest.mark.slow


def one_shot_in(receiver_url: str, seconds: int = 1) -> dict[str, object]:
    return {
        "name": "acceptance",
        "schedule": {"cron": f"@every {seconds}s"},
        "payload": {"method": "POST", "url": f"{receiver_url}/fired", "body": {"ok": True}},
    }


def test_scheduler_dev_fires_a_webhook_and_keeps_state_across_restarts(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_receiver() as receiver:
        dev = Process(["dev", "--port", "0", "--data-dir", str(data_dir)], {}, tmp_path / "dev.log")
        try:
            base = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
            status, created = http_json("POST", f"{base}{API}/schedule", one_shot_in(receiver.url))
            assert status == 202
            calls = receiver.wait_for(2, timeout=10)
            assert len(calls) >= 2 and calls[0].path == "/fired"
            assert calls[0].headers["webhook-signature"].startswith("v1,")
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]
        assert "Traceback" not in dev.output()

        again = Process(
            ["dev", "--port", "0", "--data-dir", str(data_dir)], {}, tmp_path / "dev2.log"
        )
        try:
            base = again.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
            status, stored = http_json("GET", f"{base}{API}/schedule/{created['id']}")
            assert status == 200
            assert stored["runs"] >= 2
            before = len(receiver.calls)
            assert len(receiver.wait_for(before + 1, timeout=10)) > before
        finally:
            assert again.terminate() == 0, again.output()[-3000:]


def test_the_four_components_as_separate_processes_share_their_backends(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    # One SQLite file; or MongoDB and SQS over the wire (nx-27017 and LocalStack).
    env = {**component_backends.env, "SCHEDULER_API_AUTH": "none"}
    with running_receiver() as receiver, running_components(tmp_path, env) as base:
        created = create_schedule(base, one_shot_in(receiver.url))
        calls = receiver.wait_for(1, timeout=10)
        assert calls and calls[0].json() == {"ok": True}
        assert calls[0].headers["idempotency-key"].startswith(created["id"])
        # The change history: the processor stored the create's record beside it; the API's
        # process the delete's.
        changes = f"{base}{API}/schedule/{created['id']}/changes"
        status, history = http_json("GET", changes)
        assert status == 200
        assert [(item["action"], item["revision"]) for item in history["items"]] == [
            ("create", created["revision"])
        ]
        assert http_json("DELETE", f"{base}{API}/schedule/{created['id']}")[0] == 202
        status, history = http_json("GET", changes)
        assert (status, history["schedule_status"]) == (200, "deleted")
        assert [item["action"] for item in history["items"]] == ["delete", "create"]
