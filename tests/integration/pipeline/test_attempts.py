"""Every attempt of an occurrence, with what the webhook answered: fired by the real pipeline
on the embedded backends, read through ``GET /schedule/{id}/executions/{occurrence_id}``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.support.harness import (
    API,
    Pipeline,
    running_pipeline,
    sqlite_settings,
)
from tests.support.receiver import Call, Receiver, running_receiver
from tests.support.waiting import eventually

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "retry": {"max_attempts": 3, "backoff_seconds": 0.01, "max_backoff_seconds": 0.05},
}
# What the webhook answers, call after call: status and body.
ANSWERS = [
    (503, b'{"error": "busy", "access_token": "tok-123456"}'),
    (500, b"x" * 5000),
    (200, b"ok"),
]


def create(pipeline: Pipeline, receiver: Receiver, schedule_id: str, **changes: Any) -> None:
    body = {**BODY, "payload": {"method": "POST", "url": f"{receiver.url}/hook"}, **changes}
    answer = pipeline.client.put(f"{API}/schedule/{schedule_id}", json=body)
    assert answer.status_code == 202, answer.get_json()
    pipeline.wait_until_stored(schedule_id)


def settled(pipeline: Pipeline, path: str, status: str) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        answer = pipeline.client.get(path)
        record: dict[str, Any] = answer.get_json()
        return record if answer.status_code == 200 and record["status"] == status else None

    found: dict[str, Any] = eventually(probe)
    return found


def test_each_attempt_shows_its_answer_the_start_of_its_body_and_no_secret(
    tmp_path: Path,
) -> None:
    def status(call: Call) -> tuple[int, dict[str, str]]:
        return ANSWERS[min(len(receiver.calls), 2)][0], {}

    def body(call: Call) -> bytes:
        return ANSWERS[min(len(receiver.calls), 2)][1]

    settings = sqlite_settings(tmp_path, response_excerpt_bytes=64)
    with (
        running_receiver(status, body) as receiver,
        running_pipeline(settings) as pipeline,
    ):
        create(pipeline, receiver, "a1")
        occurrence_id = pipeline.client.post(f"{API}/schedule/a1/trigger").get_json()[
            "occurrence_id"
        ]
        record = settled(pipeline, f"{API}/schedule/a1/executions/{occurrence_id}", "succeeded")

    assert len(receiver.calls) == 3
    assert (record["occurrence_id"], record["attempts"], record["http_status"]) == (
        occurrence_id,
        3,
        200,
    )
    attempts = record["attempt_log"]
    assert [
        (a["number"], a["status"], a["http_status"], a["response_status_line"]) for a in attempts
    ] == [
        (1, "retrying", 503, "HTTP/1.1 503 Service Unavailable"),
        (2, "retrying", 500, "HTTP/1.1 500 Internal Server Error"),
        (3, "succeeded", 200, "HTTP/1.1 200 OK"),
    ]
    busy, large, done = attempts
    # The secret the answer echoed is masked; the rest of it is kept.
    assert busy["response_excerpt"] == '{"error": "busy", "access_token": "********"}'
    assert busy["response_truncated"] is False
    assert busy["error"] == "HTTP 503"
    # Of a large body, only its first SCHEDULER_RESPONSE_EXCERPT_BYTES.
    assert (large["response_excerpt"], large["response_truncated"]) == ("x" * 64, True)
    assert (done["response_excerpt"], done["response_truncated"], done["error"]) == (
        "ok",
        False,
        None,
    )
    for attempt in attempts:
        assert attempt["started_at"] <= attempt["finished_at"]
        assert attempt["duration_ms"] >= 0
    assert busy["finished_at"] <= large["started_at"] and large["finished_at"] <= done["started_at"]


def test_a_server_that_does_not_implement_the_method_is_not_asked_again(tmp_path: Path) -> None:
    # Python's http.server answers a POST with 501 Not Implemented: no retry changes that.
    def status(call: Call) -> tuple[int, dict[str, str]]:
        return 501, {}

    with (
        running_receiver(status) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        create(pipeline, receiver, "n1")
        occurrence_id = pipeline.client.post(f"{API}/schedule/n1/trigger").get_json()[
            "occurrence_id"
        ]
        record = settled(pipeline, f"{API}/schedule/n1/executions/{occurrence_id}", "failed")
        time.sleep(0.3)  # a retry would come after the 10-50 ms backoff
        letters = pipeline.client.get(f"{API}/dead-letters").get_json()["items"]
    assert len(receiver.calls) == 1
    assert (record["attempts"], record["http_status"], record["error"]) == (1, 501, "HTTP 501")
    assert [letter["id"] for letter in letters] == [occurrence_id]


def test_a_replayed_dead_letter_is_one_more_attempt(tmp_path: Path) -> None:
    answers = [500]
    with (
        running_receiver(lambda call: (answers[-1], {}), lambda call: b"down") as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        create(pipeline, receiver, "a2", retry={"max_attempts": 1})
        occurrence_id = pipeline.client.post(f"{API}/schedule/a2/trigger").get_json()[
            "occurrence_id"
        ]
        path = f"{API}/schedule/a2/executions/{occurrence_id}"
        settled(pipeline, path, "failed")
        answers.append(200)
        replayed = pipeline.client.post(f"{API}/dead-letters/{occurrence_id}/replay")
        assert replayed.status_code == 202, replayed.get_json()
        record = settled(pipeline, path, "succeeded")
    assert [(a["number"], a["status"], a["http_status"]) for a in record["attempt_log"]] == [
        (1, "failed", 500),
        (2, "succeeded", 200),
    ]


def test_one_occurrence_is_404_when_unknown_and_400_when_malformed(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        create(pipeline, receiver, "a3")
        client = pipeline.client
        unknown = client.get(f"{API}/schedule/a3/executions/a3:2026-03-08T07:30:00.000Z")
        assert unknown.status_code == 404
        assert unknown.mimetype == "application/problem+json"
        for malformed in (
            "a3:yesterday",
            "a3:2026-03-08T07:30:00Z",
            "other:2026-03-08T07:30:00.000Z",
            "2026-03-08T07:30:00.000Z",
        ):
            answer = client.get(f"{API}/schedule/a3/executions/{malformed}")
            assert answer.status_code == 400, malformed
            assert [e["field"] for e in answer.get_json()["errors"]] == ["occurrence_id"]
        operation = client.get("/openapi.json").get_json()["paths"][
            "/scheduler-service/v1/schedule/{schedule_id}/executions/{occurrence_id}"
        ]["get"]
        assert operation["operationId"] == "getExecution"
