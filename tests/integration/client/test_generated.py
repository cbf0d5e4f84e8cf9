"""Other languages generate clients from ``/openapi.json``: here openapi-python-client does,
with no workaround, and the client it writes works against the running API."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.harness import Pipeline, pipeline_parts, sqlite_settings
from tests.support.serving import serving

PACKAGE = "scheduler_api_client"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Pipeline, str]]:
    with pipeline_parts(sqlite_settings(tmp_path)) as pipeline, serving(pipeline.app) as url:
        yield pipeline, url


def served_document(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/openapi.json", timeout=10) as answer:
        document: dict[str, Any] = json.load(answer)
    return document


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        operation
        for path in document["paths"].values()
        for operation in path.values()
        if isinstance(operation, dict) and "responses" in operation
    ]


def enums(node: Any) -> Iterator[list[Any]]:
    if isinstance(node, dict):
        if "enum" in node:
            yield node["enum"]
        for value in node.values():
            yield from enums(value)
    elif isinstance(node, list):
        for value in node:
            yield from enums(value)


def test_every_operation_has_an_id_and_no_enum_repeats_a_value(
    api: tuple[Pipeline, str],
) -> None:
    document = served_document(api[1])
    ids = [operation.get("operationId") for operation in operations(document)]
    assert None not in ids and len(set(ids)) == len(ids)
    assert {"createSchedule", "listSchedules", "getSchedule", "previewSchedule"} <= set(ids)
    for values in enums(document):
        folded = [str(value).casefold() for value in values]
        assert len(set(folded)) == len(folded), values
    # Descriptions are Markdown (Swagger UI renders them so): no RST double backticks; and
    # summaries are shown as plain text: no markup at all.
    assert "``" not in json.dumps(document)
    assert not [op["summary"] for op in operations(document) if "`" in op.get("summary", "")]


def generate(url: str, directory: Path) -> ModuleType:
    spec = directory / "openapi.json"
    spec.write_text(json.dumps(served_document(url)))
    tools = Path(sys.executable).parent
    run = subprocess.run(
        [
            str(tools / "openapi-python-client"),
            "generate",
            "--path",
            str(spec),
            "--meta",
            "none",
            "--output-path",
            str(directory / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        # The generator formats its output with ruff, which it looks for on PATH.
        env={**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"},
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert not re.search(r"(?i)warning|unable to", run.stdout + run.stderr), run.stdout
    # One class per shape: none invented for a null beside an enum or an object. The one
    # union is a create's on_failure, a URL or {url, headers}.
    invented = sorted(path.stem for path in (directory / PACKAGE / "models").glob("*_type_*.py"))
    assert invented == [
        "schedule_body_on_failure_type_1",
        "schedule_body_on_failure_type_1_headers",
    ]
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(directory))


def test_a_generated_client_creates_lists_previews_and_reads_errors(
    api: tuple[Pipeline, str], tmp_path: Path
) -> None:
    pipeline, url = api
    package = generate(url, tmp_path)
    create = importlib.import_module(f"{PACKAGE}.api.schedules.create_schedule")
    get = importlib.import_module(f"{PACKAGE}.api.schedules.get_schedule")
    listing = importlib.import_module(f"{PACKAGE}.api.schedules.list_schedules")
    preview = importlib.import_module(f"{PACKAGE}.api.schedules.preview_schedule")
    models = importlib.import_module(f"{PACKAGE}.models")

    client = package.Client(base_url=url)
    body = models.ScheduleBody.from_dict(
        {
            "name": "generated",
            "schedule": {
                "start_date": "05/02/2027",
                "timeZone": "Asia/Calcutta",
                "time_of_day": "11:53",
                "am_pm": "AM",
                "repeat_interval": {"number": 2, "unit": "minute"},
            },
            "payload": {"method": "POST", "url": "https://example.com/hook"},
        }
    )
    accepted = create.sync(client=client, body=body, idempotency_key="generated-1")
    assert isinstance(accepted, models.Accepted)
    # Every time is a date-time: the client reads it as an aware datetime.
    assert accepted.next_schedule_time == datetime(2027, 5, 2, 6, 23, tzinfo=UTC)

    stored = pipeline.wait_until_stored(accepted.id)
    assert stored["name"] == "generated"
    schedule = get.sync(accepted.id, client=client)
    assert isinstance(schedule, models.ScheduleView) and schedule.status == "active"
    assert schedule.timing.start == datetime(2027, 5, 2, 6, 23, tzinfo=UTC)
    assert schedule.timing.interval.unit == models.EveryUnit.MINUTE
    assert schedule.paused_by is None and schedule.created_at.tzinfo is not None
    pipeline.client.post(f"/scheduler-service/v1/schedule/{accepted.id}/pause")
    paused = get.sync(accepted.id, client=client)
    assert paused.paused_by is models.PausedBy.USER
    page = listing.sync(client=client, name="gen")
    assert [item.id for item in page.items] == [accepted.id]

    request = models.Preview.from_dict({"schedule": {"cron": "0 9 * * *"}, "count": 2})
    answer = preview.sync(client=client, body=request)
    assert len(answer.occurrences) == 2 and answer.description

    missing = get.sync("no-such-schedule", client=client)
    assert isinstance(missing, models.Problem) and missing.status == 404
    bad = models.ScheduleBody.from_dict(
        {"schedule": {"cron": "61 * * * *"}, "payload": {"method": "GET", "url": "https://x.test"}}
    )
    refused = create.sync(client=client, body=bad)
    assert isinstance(refused, models.Problem) and refused.status == 400
    assert [error.field for error in refused.errors] == ["schedule.cron"]


def test_the_enums_listed_once_still_accept_any_letter_case(api: tuple[Pipeline, str]) -> None:
    pipeline = api[0]
    body = {
        "type": "api",
        "schedule": {
            "start_date": "05/02/2027",
            "timeZone": "UTC",
            "time_of_day": "11:53",
            "am_pm": "pm",
        },
        "payload": {"method": "GET", "url": "https://example.com/"},
    }
    answer = pipeline.client.post("/scheduler-service/v1/schedule", json=body)
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["next_schedule_time"] == "2027-05-02T23:53:00.000Z"
    wrong = {**body, "schedule": {**body["schedule"], "am_pm": "xm"}}
    refused = pipeline.client.post("/scheduler-service/v1/schedule", json=wrong)
    assert refused.status_code == 400
    assert [error["field"] for error in refused.get_json()["errors"]] == ["schedule.am_pm"]


def test_a_generated_client_creates_every_kind_of_target(
    api: tuple[Pipeline, str], tmp_path: Path
) -> None:
    pipeline, url = api
    package = generate(url, tmp_path)
    create = importlib.import_module(f"{PACKAGE}.api.schedules.create_schedule")
    get = importlib.import_module(f"{PACKAGE}.api.schedules.get_schedule")
    models = importlib.import_module(f"{PACKAGE}.models")
    client = package.Client(base_url=url)
    payloads = {
        "http": {
            "method": "POST",
            "url": "https://example.com/hook?run={{ occurrence.id }}",
            "auth": {
                "type": "oauth2_client_credentials",
                "token_url": "https://auth.example.com/token",
                "client_id": "c",
                "client_secret": "s",
                "scopes": ["a"],
            },
            "expect": {"status": ["2xx", 304], "json": {"pointer": "/ok", "equals": True}},
        },
        "sqs": {
            "kind": "sqs",
            "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/q.fifo",
            "message_group_id": "g",
            "body": {"at": "{{ occurrence.scheduled_time }}"},
        },
        "sns": {
            "kind": "sns",
            "topic_arn": "arn:aws:sns:eu-west-1:123456789012:t",
            "role_arn": "arn:aws:iam::123456789012:role/r",
        },
    }
    types = {"http": models.HttpPayload, "sqs": models.QueuePayload, "sns": models.TopicPayload}
    for kind, payload in payloads.items():
        body = models.ScheduleBody.from_dict(
            {"name": kind, "schedule": {"cron": "0 9 * * *"}, "payload": payload}
        )
        assert isinstance(body.payload, types[kind])
        accepted = create.sync(client=client, body=body)
        assert isinstance(accepted, models.Accepted), accepted
        stored = pipeline.wait_until_stored(accepted.id)
        assert stored["payload"]["kind"] == kind
        # And reads it back as its kind's model, the OAuth client secret masked.
        shown = get.sync(accepted.id, client=client)
        assert isinstance(shown, models.ScheduleView)
        assert isinstance(shown.payload, types[kind])
        shown_payload = shown.payload.to_dict()
        if kind == "http":
            assert shown_payload["auth"]["client_id"] == "c"
            assert shown_payload["auth"]["client_secret"] != "s"
        if kind == "sns":
            assert shown_payload["role_arn"] == payloads["sns"]["role_arn"]
