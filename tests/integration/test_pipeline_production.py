"""End to end on the production adapters: MongoDB (mongomock-ng) and SQS (moto).

mongomock is not thread-safe, so the components take turns in one thread, in small steps, as
fast as they can; the executor still holds each occurrence until its moment. The threaded,
multi-process runs on real wire peers are in the acceptance tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mongomock_ng
import pytest
from flask.testing import FlaskClient
from moto import mock_aws

from scheduler_cli.components import build_executor, build_poller, build_processor
from scheduler_service.app import create_app
from shared.adapters.mongo_store import MongoStore
from shared.adapters.sqs_queue import SqsQueue, sqs_client
from shared.backends import Backends
from shared.ports import Queues
from shared.settings import Settings
from tests.integration.test_pipeline_embedded import ON_TIME_SECONDS, every_second_body, lateness
from tests.support.harness import API, FAST
from tests.support.receiver import running_receiver


@pytest.fixture
def production(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Backends]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = sqs_client(None, "us-east-1")
        queues = Queues(
            SqsQueue(client, "mutations", "dead", 5),
            SqsQueue(client, "occurrences", "dead", 5),
            SqsQueue(client, "dead"),
        )
        store = MongoStore(mongomock_ng.MongoClient(tz_aware=True), "scheduler")
        store.ensure_indexes()
        for queue in (queues.dead_letters, queues.mutations, queues.occurrences):
            queue.create()
        yield Backends(store, queues)


class SteppedPipeline:
    def __init__(self, backends: Backends) -> None:
        settings = Settings.from_env({}, **FAST)
        self.client: FlaskClient = create_app(settings, backends).test_client()
        self.processor = build_processor(settings, backends)
        self.poller = build_poller(settings, backends)
        self.executor = build_executor(settings, backends)

    def run_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.processor.process_batch()
            self.poller.poll_once()
            self.executor.receive_once()
            for item in self.executor.take_due(timeout=0.02):
                self.executor.fire(item)

    def view(self, schedule_id: str) -> dict[str, Any]:
        response = self.client.get(f"{API}/schedule/{schedule_id}")
        assert response.status_code == 200
        answer: dict[str, Any] = response.get_json()
        return answer


def test_a_schedule_fires_every_second_through_mongodb_and_sqs(production: Backends) -> None:
    pipeline = SteppedPipeline(production)
    with running_receiver() as receiver:
        created = pipeline.client.post(f"{API}/schedule", json=every_second_body(receiver.url))
        assert created.status_code == 202
        schedule_id = created.get_json()["id"]
        pipeline.run_for(0.3)
        first_view = pipeline.view(schedule_id)

        pipeline.run_for(3.5)
        calls = list(receiver.calls)
        assert len(calls) >= 3
        for call in calls:
            assert call.method == "PATCH"
            assert call.path == "/hooks/heartbeat"
            assert call.query == {"fixed": ["yes"], "region": ["eu"], "ids": ["1", "2"]}
            assert call.headers["x-team"] == "payments"
            assert call.json() == {"task": "ping", "n": 1}
            assert 0 <= lateness(call) <= ON_TIME_SECONDS, lateness(call)
        assert pipeline.view(schedule_id)["next_schedule_time"] > first_view["next_schedule_time"]
        assert pipeline.view(schedule_id)["runs"] == len(calls)

        assert pipeline.client.delete(f"{API}/schedule/{schedule_id}").status_code == 202
        before = len(receiver.calls)
        pipeline.run_for(2.0)
        assert len(receiver.calls) == before


def test_a_one_time_schedule_in_the_past_fires_through_mongodb_and_sqs(
    production: Backends,
) -> None:
    pipeline = SteppedPipeline(production)
    with running_receiver() as receiver:
        body = {
            "schedule": {"at": "2026-01-01T09:00:00Z"},
            "payload": {"method": "GET", "url": f"{receiver.url}/late"},
        }
        schedule_id = pipeline.client.post(f"{API}/schedule", json=body).get_json()["id"]
        pipeline.run_for(1.5)
        assert [call.path for call in receiver.calls] == ["/late"]
        assert pipeline.view(schedule_id)["status"] == "completed"
