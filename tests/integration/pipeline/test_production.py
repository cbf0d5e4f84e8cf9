"""End to end on the production adapters, MongoDB and SQS: in-process fakes and over the wire.

``fakes``: mongomock-ng and moto. mongomock is not thread-safe, so the components take turns in
one thread, in small steps, as fast as they can; the executor still holds each occurrence until
its moment. ``wire-peers``: pymongo against nx-27017 and boto3 against LocalStack, each
component in its own thread as in production (real servers are thread-safe); ``wire-urls``:
the same against SCHEDULER_TEST_MONGO_URL / SCHEDULER_TEST_SQS_URL when set. The same
assertions hold for all.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import mongomock_ng
import pytest
from flask.testing import FlaskClient
from moto import mock_aws

from scheduler_cli.components import build_executor, build_poller, build_processor
from scheduler_service.app import create_app
from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqs_queue import SqsQueue, sqs_client
from shared.backends import Backends
from shared.ports import Queues, QueueSpec
from shared.settings import Settings
from shared.timeutil import parse_iso
from tests.support.executor_steps import fire, receive_once, take_due
from tests.support.harness import API, FAST, TEST_SECRETS, Pipeline
from tests.support.peers import WIRE_VARIANTS, fake_aws, wire_backends
from tests.support.receiver import answers, lateness, running_receiver
from tests.support.schedules import ON_TIME_SECONDS, every_second_body
from tests.support.waiting import eventually


class ProductionPipeline(Protocol):
    client: FlaskClient

    def run_for(self, seconds: float) -> None: ...

    def latest_arrival(self, due: float) -> float:
        """The latest moment (epoch seconds) a call due at ``due`` may reach its receiver."""
        ...


class SteppedPipeline:
    def __init__(self, backends: Backends) -> None:
        settings = Settings.from_env({}, **FAST)
        self.client: FlaskClient = create_app(settings, backends).test_client()
        self.processor = build_processor(settings, backends)
        self.poller = build_poller(settings, backends)
        self.executor = build_executor(settings, backends)
        # Each step's look for due occurrences and the end of its fires (epoch seconds).
        self.steps: list[tuple[float, float]] = []

    def run_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.processor.process_batch()
            self.poller.poll_once()
            receive_once(self.executor)
            looked = time.time()  # what is due by now it takes now, if it holds it
            for item in take_due(self.executor, timeout=0.02):
                fire(self.executor, item)
            self.steps.append((looked, time.time()))

    def latest_arrival(self, due: float) -> float:
        """By the end of the first step that looked once it was due: the components take turns
        in this thread, so a step is as long as mongomock and moto make it on this machine (at
        load ~15 steps of a quarter of a second and more), not the executor's lateness."""
        return next((end for looked, end in self.steps if looked >= due), self.steps[-1][1])


class ThreadedPipeline:
    """The workers run on their own threads all along; a test just lets time pass."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.client: FlaskClient = pipeline.client

    def run_for(self, seconds: float) -> None:
        time.sleep(seconds)

    def latest_arrival(self, due: float) -> float:
        return due + ON_TIME_SECONDS


@pytest.fixture(params=["fakes", *WIRE_VARIANTS])
def pipeline(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ProductionPipeline]:
    if request.param == "fakes":
        fake_aws(monkeypatch, tmp_path)
        with mock_aws():
            client = sqs_client(None, "us-east-1")
            queues = Queues(
                SqsQueue(client, QueueSpec("mutations", "dead", 5)),
                SqsQueue(client, QueueSpec("occurrences", "dead", 5)),
                SqsQueue(client, QueueSpec("dead")),
            )
            store = MongoStore(
                mongomock_ng.MongoClient(tz_aware=True), "scheduler", secrets=TEST_SECRETS
            )
            store.ensure_indexes()
            for queue in (queues.dead_letters, queues.mutations, queues.occurrences):
                queue.create()
            yield SteppedPipeline(Backends(store, queues, TEST_SECRETS))
        return
    with wire_backends(request, monkeypatch, tmp_path, request.param) as wire:
        settings = wire.settings(Settings.from_env({}, **FAST))
        backends = wire.open(settings)
        threaded = Pipeline(settings, backends).start()
        try:
            yield ThreadedPipeline(threaded)
        finally:
            threaded.stop()
            backends.close()


def view(pipeline: ProductionPipeline, schedule_id: str) -> dict[str, Any]:
    response = pipeline.client.get(f"{API}/schedule/{schedule_id}")
    assert response.status_code == 200
    answer: dict[str, Any] = response.get_json()
    return answer


def test_a_schedule_fires_every_second_through_mongodb_and_sqs(
    pipeline: ProductionPipeline,
) -> None:
    with running_receiver() as receiver:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        assert created.status_code == 202
        schedule_id = created.get_json()["id"]
        pipeline.run_for(0.3)
        first_view = view(pipeline, schedule_id)

        pipeline.run_for(3.5)
        calls = list(receiver.calls)
        assert len(calls) >= 3
        for call in calls:
            assert call.method == "PATCH"
            assert call.path == "/hooks/heartbeat"
            assert call.query == {"fixed": ["yes"], "region": ["eu"], "ids": ["1", "2"]}
            assert call.headers["x-team"] == "payments"
            assert call.json() == {"task": "ping", "n": 1}
            due = parse_iso(call.headers["x-scheduler-scheduled-time"]).timestamp()
            assert due <= call.received_at <= pipeline.latest_arrival(due), lateness(call)
        assert view(pipeline, schedule_id)["next_schedule_time"] > first_view["next_schedule_time"]
        # Each call the receiver had is counted once its answer is recorded (on the threaded
        # variants a moment after the call came), and no run is counted that it did not have.
        eventually(lambda: view(pipeline, schedule_id)["runs"] >= len(calls), what="runs")
        assert view(pipeline, schedule_id)["runs"] <= len(receiver.calls)

        assert pipeline.client.delete(f"{API}/schedule/{schedule_id}").status_code == 202
        before = len(receiver.calls)
        pipeline.run_for(2.0)
        assert len(receiver.calls) == before


def test_a_one_time_schedule_in_the_past_fires_through_mongodb_and_sqs(
    pipeline: ProductionPipeline,
) -> None:
    with running_receiver() as receiver:
        body = {
            "schedule": {"at": "2026-01-01T09:00:00Z", "fire_if_past": True},
            "payload": {"method": "GET", "url": f"{receiver.url}/late"},
        }
        schedule_id = pipeline.client.post(f"{API}/schedule", json=body).get_json()["id"]
        pipeline.run_for(1.5)
        assert [call.path for call in receiver.calls] == ["/late"]
        assert view(pipeline, schedule_id)["status"] == "completed"


def test_every_attempt_and_its_answer_is_kept_through_mongodb_and_sqs(
    pipeline: ProductionPipeline,
) -> None:
    answers = [(503, b'{"error": "busy", "api_key": "k-1"}'), (500, b"down"), (200, b"ok")]

    def status(call: Any) -> tuple[int, dict[str, str]]:
        return answers[min(len(receiver.calls), 2)][0], {}

    def body(call: Any) -> bytes:
        return answers[min(len(receiver.calls), 2)][1]

    with running_receiver(status, body) as receiver:
        created = pipeline.client.post(
            f"{API}/schedule",
            json={
                "schedule": {"at": "2026-01-01T09:00:00Z", "fire_if_past": True},
                "payload": {"method": "POST", "url": f"{receiver.url}/flaky"},
                "retry": {"max_attempts": 3, "backoff_seconds": 0.01, "max_backoff_seconds": 0.05},
            },
        )
        schedule_id = created.get_json()["id"]
        path = f"{API}/schedule/{schedule_id}/executions/{schedule_id}:2026-01-01T09:00:00.000Z"
        deadline = time.monotonic() + 20
        while (answer := pipeline.client.get(path)).status_code != 200 or answer.get_json()[
            "status"
        ] != "succeeded":
            assert time.monotonic() < deadline, answer.get_json()
            pipeline.run_for(0.2)
    attempts = answer.get_json()["attempt_log"]
    assert [
        (
            a["number"],
            a["status"],
            a["http_status"],
            a["response_status_line"],
            a["response_excerpt"],
        )
        for a in attempts
    ] == [
        (
            1,
            "retrying",
            503,
            "HTTP/1.1 503 Service Unavailable",
            '{"error": "busy", "api_key": "********"}',
        ),
        (2, "retrying", 500, "HTTP/1.1 500 Internal Server Error", "down"),
        (3, "succeeded", 200, "HTTP/1.1 200 OK", "ok"),
    ]


def test_each_webhook_call_continues_the_trace_sent_on_create_with_a_span_per_attempt(
    pipeline: ProductionPipeline,
) -> None:
    """What a receiver that records ``traceparent`` sees (W3C Trace Context): the trace id the
    create was sent with, a span id of its own per attempt (a 503, then a 200), never the
    caller's; the vendors' ``tracestate`` passed on."""
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    sent = f"00-{trace_id}-00f067aa0ba902b7-01"
    with running_receiver(answers(503, 200)) as receiver:
        created = pipeline.client.post(
            f"{API}/schedule",
            json={
                "schedule": {"at": "2026-01-01T09:00:00Z", "fire_if_past": True},
                "payload": {"method": "POST", "url": f"{receiver.url}/traced"},
                "retry": {"max_attempts": 3, "backoff_seconds": 0.01, "max_backoff_seconds": 0.05},
            },
            headers={"traceparent": sent, "tracestate": "congo=t61rcWkgMzE"},
        )
        assert created.status_code == 202
        schedule_id = created.get_json()["id"]
        deadline = time.monotonic() + 20
        while len(receiver.calls) < 2:
            assert time.monotonic() < deadline, receiver.calls
            pipeline.run_for(0.2)
        assert view(pipeline, schedule_id)["trace_id"] == trace_id
    received = [call.headers["traceparent"] for call in receiver.calls]
    version, ids, spans, flags = zip(*(header.split("-") for header in received), strict=True)
    assert set(version) == {"00"} and set(flags) == {"01"}
    assert set(ids) == {trace_id}
    assert len(set(spans)) == 2 and "00f067aa0ba902b7" not in spans
    assert all(re.fullmatch("[0-9a-f]{16}", span) and set(span) != {"0"} for span in spans)
    assert {call.headers["tracestate"] for call in receiver.calls} == {"congo=t61rcWkgMzE"}
