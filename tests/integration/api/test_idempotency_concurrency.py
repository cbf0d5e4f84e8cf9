"""Concurrent requests with one ``Idempotency-Key``: a signing-secret rotation and a bulk
part are done once. The first request claims the key before it works; a repeat that comes
while it works is a 409 naming the key, with ``Retry-After``; repeated after, it gets the
first's answer. On SQLite and on MongoDB over the wire (nx-27017, with LocalStack's SQS).

The work is slowed (a store a network away) so that every request comes while the first
works: without the claim, each would do the work."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from werkzeug.test import TestResponse

from scheduler_cli.components import build_processor
from scheduler_service.app import create_app
from scheduler_service.service.bulk import Bulk
from shared.backends import Backends
from shared.settings import Settings
from shared.signing import SigningSecrets
from tests.support import peers
from tests.support.harness import API

REQUESTS = 8
# How long the work takes: long enough for every request of the crowd to come meanwhile.
WORK_SECONDS = 0.5


@dataclass
class Served:
    app: Flask
    backends: Backends
    settings: Settings


@pytest.fixture
def served(component_backends: peers.ComponentBackends) -> Iterator[Served]:
    backends = component_backends.open()
    try:
        settings = component_backends.settings
        yield Served(create_app(settings, backends), backends, settings)
    finally:
        backends.close()


def slowed(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
    done = getattr(owner, name)

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(WORK_SECONDS)
        return done(*args, **kwargs)

    monkeypatch.setattr(owner, name, slow)


def crowd(app: Flask, send: Callable[[Any], TestResponse]) -> list[TestResponse]:
    """``send`` from REQUESTS threads at once, each with its own client; their answers."""
    start = threading.Barrier(REQUESTS)

    def one(_: int) -> TestResponse:
        client = app.test_client()
        start.wait()
        return send(client)

    with ThreadPoolExecutor(REQUESTS) as pool:
        return list(pool.map(one, range(REQUESTS)))


def assert_one_worked_and_the_rest_were_told_to_retry(answers: list[TestResponse]) -> None:
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200 if statuses[0] == 200 else 201] + [409] * (REQUESTS - 1), statuses
    for answer in answers:
        if answer.status_code == 409:
            assert answer.headers["Retry-After"] == "1"
            assert "'crowd-1'" in answer.get_json()["detail"]
            assert "still being worked on" in answer.get_json()["detail"]


def test_concurrent_rotations_with_one_key_rotate_once_and_answer_one_secret(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = served.app
    slowed(monkeypatch, SigningSecrets, "rotate")
    headers = {"Idempotency-Key": "crowd-1"}

    answers = crowd(
        app, lambda client: client.post(f"{API}/signing-secrets/rotate", headers=headers)
    )

    assert_one_worked_and_the_rest_were_told_to_retry(answers)
    (first,) = [answer.get_json() for answer in answers if answer.status_code == 201]
    # One secret was made, and it is the one its caller holds.
    listing = app.test_client().get(f"{API}/signing-secrets").get_json()["items"]
    assert [(item["id"], item["state"]) for item in listing] == [
        ("deployment", "retiring"),
        (first["id"], "next"),
    ]
    # Repeated as told, a request gets the first's answer, secret included.
    again = app.test_client().post(f"{API}/signing-secrets/rotate", headers=headers)
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (again.get_json()["id"], again.get_json()["secret"]) == (first["id"], first["secret"])


def test_concurrent_bulk_parts_with_one_key_work_once_and_answer_alike(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, backends, settings = served.app, served.backends, served.settings
    client = app.test_client()
    for index in range(3):
        schedule = {
            "name": f"job {index}",
            "schedule": {"cron": "0 2 * * *"},
            "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
            "tags": ["crowd"],
        }
        assert client.put(f"{API}/schedule/bulk-{index}", json=schedule).status_code == 202
    processor = build_processor(settings, backends)
    while processor.process_batch():
        pass
    slowed(monkeypatch, Bulk, "_work")
    body = {"action": "pause", "selector": {"tag": "crowd"}}
    headers = {"Idempotency-Key": "crowd-1"}

    answers = crowd(
        app, lambda each: each.post(f"{API}/schedules/bulk", json=body, headers=headers)
    )

    assert_one_worked_and_the_rest_were_told_to_retry(answers)
    (first,) = [answer.get_json() for answer in answers if answer.status_code == 200]
    assert first["changed"] == 3, first
    again = client.post(f"{API}/schedules/bulk", json=body, headers=headers)
    assert again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first
