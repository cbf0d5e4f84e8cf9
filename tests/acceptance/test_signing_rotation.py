"""Rotating a tenant's signing secret, end to end as a user does it: through the client against
``scheduler dev``, and against the four components apart with two tenants' API keys (on one
SQLite file, and on MongoDB and SQS over the wire). A receiver verifies each call it gets with
the Standard Webhooks library: with either secret during the overlap, only with the new one
after, and a tenant that did not rotate keeps the deployment's secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from scheduler_client import SchedulerClient
from shared.timeutil import parse_iso
from tests.support import waiting
from tests.support.peers import ComponentBackends
from tests.support.processes import Process, running_components
from tests.support.receiver import Call, Receiver, running_receiver

pytestmark = pytest.mark.slow

DEPLOYMENT_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# Executors read a tenant's secrets again this often: a rotation signs within it.
CACHE_SECONDS = 0.3


def verifies(secret: str, call: Call) -> bool:
    try:
        Webhook(secret).verify(call.body, call.headers)
    except WebhookVerificationError:
        return False
    return True


def every_second(name: str, receiver: Receiver) -> dict[str, object]:
    return {
        "name": name,
        "schedule": {"interval": {"number": 1, "unit": "second"}},
        "payload": {"method": "POST", "url": f"{receiver.url}/{name}", "body": {"n": name}},
    }


def failing_with_hook(receiver: Receiver) -> dict[str, object]:
    return {
        "name": "failing",
        "schedule": {"cron": "0 * * * *"},
        "payload": {"method": "POST", "url": f"{receiver.url}/fail"},
        "retry": {"max_attempts": 1},
        "on_failure": {"url": f"{receiver.url}/failed"},
    }


def respond(call: Call) -> tuple[int, dict[str, str]]:
    return (500 if call.path == "/fail" else 200, {})


def calls_to(receiver: Receiver, path: str, after: float = 0.0) -> list[Call]:
    return [call for call in list(receiver.calls) if call.path == path and call.received_at > after]


def wait_for_calls(receiver: Receiver, path: str, after: float, count: int = 1) -> list[Call]:
    def enough() -> list[Call]:
        found = calls_to(receiver, path, after)
        return found if len(found) >= count else []

    return waiting.eventually(enough, 30.0)


def epoch(moment: str) -> float:
    return parse_iso(moment).timestamp()


def test_a_rotation_on_scheduler_dev_signs_with_both_then_the_new(tmp_path: Path) -> None:
    with running_receiver(respond) as receiver:
        dev = Process(
            ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")],
            {"SCHEDULER_SIGNING_CACHE_SECONDS": str(CACHE_SECONDS)},
            tmp_path / "dev.log",
        )
        try:
            api = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+\S*)").group(1)
            old = (tmp_path / "data" / "webhook-secret").read_text().strip()
            with SchedulerClient(api) as client:
                [listed] = client.signing_secrets()
                assert (listed["id"], listed["state"]) == ("deployment", "current")
                client.create(every_second("beat", receiver))
                failing = client.create(failing_with_hook(receiver))["id"]
                before = wait_for_calls(receiver, "/beat", 0.0)
                assert all(verifies(old, call) for call in before)

                rotation = client.rotate_signing_secret(overlap_seconds=4)
                new = rotation["secret"]
                made, current_from = epoch(rotation["created_at"]), rotation["current_from"]
                assert current_from is not None
                ends = epoch(current_from)
                assert [item["state"] for item in client.signing_secrets()] == [
                    "retiring",
                    "next",
                ]
                # Calls once the executor took the rotation up, and before the overlap ends.
                during = [
                    call
                    for call in wait_for_calls(receiver, "/beat", made + CACHE_SECONDS + 0.2, 2)
                    if call.received_at < ends - 0.2
                ]
                assert during, "no call during the overlap"
                assert all(verifies(old, call) and verifies(new, call) for call in during)

                after = wait_for_calls(receiver, "/beat", ends + 0.2, 2)
                assert all(verifies(new, call) and not verifies(old, call) for call in after)
                [current] = client.signing_secrets()
                assert (current["id"], current["state"]) == (rotation["id"], "current")
                assert new not in str(client.signing_secrets())

                # A failure notification is signed the same way.
                client.trigger(failing)
                [notification] = wait_for_calls(receiver, "/failed", ends)
                assert verifies(new, notification) and not verifies(old, notification)
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]


def test_a_tenant_rotates_its_own_secret_and_no_other(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {
        **component_backends.env,
        "SCHEDULER_API_AUTH": "keys",
        "SCHEDULER_API_KEYS": "acme:sk_test_acme_0123456789,globex:sk_test_globex_0123456789",
        "SCHEDULER_SIGNING_CACHE_SECONDS": str(CACHE_SECONDS),
    }
    with running_receiver(respond) as receiver, running_components(tmp_path, env) as base:
        acme = SchedulerClient(base, "sk_test_acme_0123456789")
        globex = SchedulerClient(base, "sk_test_globex_0123456789")
        acme.create(every_second("acme", receiver))
        globex.create(every_second("globex", receiver))
        wait_for_calls(receiver, "/acme", 0.0)

        rotation = acme.rotate_signing_secret(overlap_seconds=0)
        assert rotation["current_from"] is None
        new = rotation["secret"]
        taken_up = epoch(rotation["created_at"]) + CACHE_SECONDS + 0.2
        for call in wait_for_calls(receiver, "/acme", taken_up, 2):
            assert verifies(new, call) and not verifies(DEPLOYMENT_SECRET, call)
        for call in wait_for_calls(receiver, "/globex", taken_up, 2):
            assert verifies(DEPLOYMENT_SECRET, call) and not verifies(new, call)
        assert [(item["id"], item["state"]) for item in acme.signing_secrets()] == [
            (rotation["id"], "current")
        ]
        assert [item["id"] for item in globex.signing_secrets()] == ["deployment"]
        acme.close()
        globex.close()
