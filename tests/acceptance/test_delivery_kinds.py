"""Every kind of delivery target, end to end, as a user runs the service: ``scheduler dev``, and
the four components on the wire peers (MongoDB on nx-27017, SQS on LocalStack). The user's
queue and topic are on LocalStack too (``SCHEDULER_TARGET_AWS_ENDPOINT_URL``); what arrived is
read from them, and the webhook's calls from a local receiver.

One run covers: an HTTP call with placeholders, an OAuth token and an answer check; a second
call whose kept token is refused (a new token, the call once more); a message on a standard
queue, on a FIFO queue, and a publish to a topic delivering to a queue; an answer that fails
its check (retried, then dead-lettered with the reason); and a queue and a topic that do not
exist (dead-lettered, each schedule paused after one failure, ``on_failure`` told).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.timeutil import iso_z
from tests.support.harness import API
from tests.support.peers import Peer, component_backends
from tests.support.processes import Process, create_schedule, http_json, running_components
from tests.support.receiver import Call, Receiver, running_receiver
from tests.support.user_aws import UserAws, user_aws

pytestmark = pytest.mark.slow


# The token each path of the webhook takes.
ACCEPTED_TOKENS = {"/hook": "Bearer tok-1", "/rotated": "Bearer tok-2"}


class Webhook:
    """The user's webhook, their token endpoint (a new token at each request: tok-1, tok-2,
    …), and their failure hook. ``/hook`` takes the first token only; ``/rotated`` the second
    only, as after the endpoint rotated its tokens: a call with the kept first one is answered
    401."""

    def __init__(self) -> None:
        self.tokens_issued = 0

    def answer(self, call: Call) -> tuple[int, dict[str, str]]:
        wanted = ACCEPTED_TOKENS.get(call.path)
        if wanted is not None and call.headers.get("authorization") != wanted:
            return 401, {}
        return 200, {"Content-Type": "application/json"}

    def body(self, call: Call) -> bytes:
        if call.path == "/oauth/token":
            self.tokens_issued += 1
            return json.dumps(
                {
                    "access_token": f"tok-{self.tokens_issued}",
                    "token_type": "bearer",
                    "expires_in": 3600,
                }
            ).encode()
        if call.path == "/picky":
            return b"NOPE"
        return b'{"state": "done"}'


@dataclass(frozen=True)
class Resources:
    """The user's queues and topic (``subscriber`` gets what ``topic`` publishes), and a
    queue and a topic nobody made."""

    standard: str
    fifo: str
    subscriber: str
    topic: str
    missing_queue: str
    missing_topic: str

    @classmethod
    def made(cls, aws: UserAws) -> Resources:
        standard, fifo, subscriber = aws.queue(), aws.queue(fifo=True), aws.queue()
        topic = aws.topic(subscriber)
        return cls(
            standard,
            fifo,
            subscriber,
            topic,
            standard.rsplit("/", 1)[0] + "/nobody-made-this-queue",
            topic.rsplit(":", 1)[0] + ":nobody-made-this-topic",
        )


TEMPLATE = {
    "run": "{{ occurrence.id }}",
    "name": "{{ schedule.name }}",
    "try": "{{ occurrence.attempt }}",
}


def schedules(
    receiver: str, made: Resources, at: str, later: str
) -> dict[str, tuple[dict[str, Any], str | None]]:
    """Each schedule's fields, and the queue its messages arrive on. All fire at ``at`` but
    ``rotated``, at ``later``, once the token of ``http`` is kept."""
    auth = {
        "type": "oauth2_client_credentials",
        "token_url": f"{receiver}/oauth/token",
        "client_id": "me",
        "client_secret": "my-client-secret",
    }
    # Recurring: a one-time schedule ends with its run, and only an active one pauses.
    failing = {
        "schedule": {"interval": {"number": 1, "unit": "hour"}, "start": at},
        "pause_after_failures": 1,
        "on_failure": f"{receiver}/failures",
    }
    return {
        "http": (
            {
                "payload": {
                    "method": "POST",
                    "url": f"{receiver}/hook?at={{{{ occurrence.scheduled_time }}}}",
                    "body": TEMPLATE,
                    "auth": auth,
                    "expect": {"json": {"pointer": "/state", "equals": "done"}},
                }
            },
            None,
        ),
        "rotated": (
            {
                "schedule": {"at": later},
                "payload": {"method": "GET", "url": f"{receiver}/rotated", "auth": auth},
            },
            None,
        ),
        "sqs": (
            {"payload": {"kind": "sqs", "queue_url": made.standard, "body": TEMPLATE}},
            made.standard,
        ),
        "fifo": ({"payload": {"kind": "sqs", "queue_url": made.fifo, "body": TEMPLATE}}, made.fifo),
        "sns": (
            {"payload": {"kind": "sns", "topic_arn": made.topic, "body": TEMPLATE}},
            made.subscriber,
        ),
        "picky": (
            {
                "payload": {
                    "method": "GET",
                    "url": f"{receiver}/picky",
                    "expect": {"body_contains": "OK"},
                },
                "retry": {"max_attempts": 2, "backoff_seconds": 0.1},
            },
            None,
        ),
        "no_queue": (
            {**failing, "payload": {"kind": "sqs", "queue_url": made.missing_queue, "body": "x"}},
            None,
        ),
        "no_topic": (
            {**failing, "payload": {"kind": "sns", "topic_arn": made.missing_topic}},
            None,
        ),
    }


def history(base: str, schedule_id: str) -> list[dict[str, Any]]:
    """A schedule's runs, newest first (none while its create is still queued: a 404)."""
    status, page = http_json("GET", f"{base}{API}/schedule/{schedule_id}/executions")
    if status == 404:
        return []
    assert status == 200, page
    items: list[dict[str, Any]] = page["items"]
    return items


def wait_until_final(base: str, ids: dict[str, str], timeout: float = 45.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    runs: dict[str, Any] = {}
    while time.monotonic() < deadline:
        runs = {name: history(base, schedule_id) for name, schedule_id in ids.items()}
        if all(items and items[0]["status"] in ("succeeded", "failed") for items in runs.values()):
            return runs
        time.sleep(0.3)
    raise AssertionError(f"not all final in {timeout}s: {runs}")


def every_kind_fires(base: str, receiver: Receiver, aws: UserAws) -> None:
    made = Resources.made(aws)
    # A few seconds after the user's queues and topic are made, to create the schedules in.
    first = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
    at, later = iso_z(first), iso_z(first + timedelta(seconds=3))
    ids: dict[str, str] = {}
    arrives_on: dict[str, str] = {}
    for name, (fields, queue) in schedules(receiver.url, made, at, later).items():
        body = {"name": f"Kind {name}", "schedule": {"at": at}, **fields}
        ids[name] = create_schedule(base, body)["id"]
        if queue is not None:
            arrives_on[name] = queue
    runs = wait_until_final(base, ids)

    assert {name: items[0]["status"] for name, items in runs.items()} == {
        "http": "succeeded",
        "rotated": "succeeded",
        "sqs": "succeeded",
        "fifo": "succeeded",
        "sns": "succeeded",
        "picky": "failed",
        "no_queue": "failed",
        "no_topic": "failed",
    }
    occurrence = {name: f"{schedule_id}:{at}" for name, schedule_id in ids.items()}
    occurrence["rotated"] = f"{ids['rotated']}:{later}"
    for name, queue in arrives_on.items():
        [message] = aws.arrived(queue, 1)
        assert message.json() == {"run": occurrence[name], "name": f"Kind {name}", "try": "1"}
        assert message.attributes["Scheduler-Occurrence-Id"] == occurrence[name]
        assert message.attributes["Scheduler-Schedule-Id"] == ids[name]
        assert message.attributes["Scheduler-Scheduled-Time"] == at
        if name == "fifo":
            assert (message.group_id, message.deduplication_id) == (ids[name], occurrence[name])
    hooks = [call for call in receiver.calls if call.path == "/hook"]
    assert [call.json() for call in hooks] == [
        {"run": occurrence["http"], "name": "Kind http", "try": "1"}
    ]
    assert hooks[0].query["at"] == [at]
    # The token kept from the first call, refused: a new one, and the call once more, within
    # one attempt. Two tokens in all.
    rotated = [call.headers["authorization"] for call in receiver.calls if call.path == "/rotated"]
    assert rotated == ["Bearer tok-1", "Bearer tok-2"]
    assert [call.path for call in receiver.calls].count("/oauth/token") == 2
    assert runs["rotated"][0]["attempts"] == 1
    # The answer that failed its check: retried, each attempt's reason recorded.
    status, picky = http_json(
        "GET", f"{base}{API}/schedule/{ids['picky']}/executions/{occurrence['picky']}"
    )
    assert status == 200, picky
    assert [attempt["error"] for attempt in picky["attempt_log"]] == [
        'HTTP 200: the body does not contain "OK"'
    ] * 2
    # The queue and the topic nobody made: dead-lettered (not retried: a later send fails
    # alike), each schedule paused, on_failure told of both.
    assert "NonExistentQueue" in runs["no_queue"][0]["error"]
    assert "Publish failed" in runs["no_topic"][0]["error"]
    assert runs["no_queue"][0]["attempts"] == runs["no_topic"][0]["attempts"] == 1
    status, letters = http_json("GET", f"{base}{API}/dead-letters")
    assert {item["occurrence_id"] for item in letters["items"]} == {
        occurrence[name] for name in ("picky", "no_queue", "no_topic")
    }
    for name in ("no_queue", "no_topic"):
        status, paused = http_json("GET", f"{base}{API}/schedule/{ids[name]}")
        assert paused["paused_by"] == "failures", name
    told: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        told = sorted(
            (call.json()["schedule_id"], call.json()["type"])
            for call in receiver.calls
            if call.path == "/failures"
        )
        if len(told) >= 4:
            break
        time.sleep(0.1)
    assert told == sorted(
        (ids[name], kind)
        for name in ("no_queue", "no_topic")
        for kind in ("occurrence.dead_lettered", "schedule.paused")
    )


@contextmanager
def users_aws(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[UserAws, str]]:
    localstack: Peer = request.getfixturevalue("localstack")
    with user_aws(localstack, monkeypatch, tmp_path) as aws:
        yield aws, localstack.url


def test_every_kind_fires_end_to_end_on_scheduler_dev(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    webhook = Webhook()
    with (
        users_aws(request, monkeypatch, tmp_path) as (aws, endpoint),
        running_receiver(webhook.answer, webhook.body) as receiver,
    ):
        dev = Process(
            ["dev", "--port", "0", "--data-dir", str(tmp_path / "data")],
            {"SCHEDULER_TARGET_AWS_ENDPOINT_URL": endpoint},
            tmp_path / "dev.log",
        )
        try:
            base = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+)").group(1)
            every_kind_fires(base, receiver, aws)
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]
    assert "Traceback" not in dev.output()
    assert "my-client-secret" not in dev.output() and "tok-" not in dev.output()


def test_every_kind_fires_end_to_end_on_the_wire_peers(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    webhook = Webhook()
    with (
        component_backends(request, monkeypatch, tmp_path, "wire-peers") as backends,
        users_aws(request, monkeypatch, tmp_path) as (aws, endpoint),
        running_receiver(webhook.answer, webhook.body) as receiver,
    ):
        env = {
            **backends.env,
            "SCHEDULER_API_AUTH": "none",
            "SCHEDULER_TARGET_AWS_ENDPOINT_URL": endpoint,
        }
        with running_components(tmp_path, env) as base:
            every_kind_fires(base, receiver, aws)
    for name in ("api", "executor"):
        log = (tmp_path / f"{name}.log").read_text()
        assert "my-client-secret" not in log and "tok-" not in log
