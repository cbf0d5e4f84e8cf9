"""The HTTP contract of the schedule endpoints, over the embedded backends."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from processor_worker.worker import Processor
from scheduler_cli.components import build_processor
from scheduler_service.app import create_app
from shared.backends import Backends, open_backends
from tests.support.harness import API, sqlite_settings

SEED_BODY: dict[str, Any] = {
    "name": "testing",
    "description": "testing the schedule functionality",
    "type": "API",
    "schedule": {
        "start_date": "05/02/2027",
        "end_date": "05/04/2027",
        "timeZone": "Asia/Calcutta",
        "time_of_day": "11:53",
        "am_pm": "AM",
        "repeat_interval": {"number": 2, "unit": "minute"},
    },
    "payload": {
        "method": "PUT",
        "url": "https://www.xyz.com/resconstruct",
        "headers": {"header1": "Basic fdastvhjasbc", "Authorization": "Bearer s3cret"},
        "queryParameters": {"param1": "121", "param2": "121"},
        "body": {
            "taskName": "demo task",
            "checklistLabels": [],
            "dueDate": "2024-03-17T12:00:00Z",
            "private": False,
            "geoFenceLatitude": 17.8967,
            "userTags": [{"targetUserID": 3, "taskUserType": "assigned"}],
            "departmentTags": [{"departmentID": None, "departmentName": "floor-cleaning"}],
        },
    },
    "metadata": {"created_by": "45667", "role": "admin"},
}


@pytest.fixture
def backends(tmp_path: Path) -> Iterator[Backends]:
    opened = open_backends(sqlite_settings(tmp_path))
    yield opened
    opened.close()


@pytest.fixture
def client(tmp_path: Path, backends: Backends) -> FlaskClient:
    return create_app(sqlite_settings(tmp_path), backends).test_client()


@pytest.fixture
def processor(tmp_path: Path, backends: Backends) -> Processor:
    return build_processor(sqlite_settings(tmp_path), backends)


def queued(backends: Backends) -> int:
    depth = backends.queues.mutations.depth()
    return depth.visible + depth.in_flight + depth.delayed


def test_the_blueprints_body_is_accepted_as_it_is(
    client: FlaskClient, backends: Backends, processor: Processor
) -> None:
    response = client.post(f"{API}/schedule", json=SEED_BODY)
    assert response.status_code == 202
    answer = response.get_json()
    assert answer["status"] == "accepted"
    assert answer["next_schedule_time"] == "2027-05-02T06:23:00.000Z"
    assert answer["next_schedule_time_local"] == "2027-05-02T11:53:00.000+05:30"
    assert response.headers["Location"] == f"{API}/schedule/{answer['id']}"
    assert queued(backends) == 1

    # Creation is asynchronous: unknown until the processor has stored it.
    assert client.get(response.headers["Location"]).status_code == 404
    processor.process_batch()
    stored = client.get(response.headers["Location"]).get_json()
    assert stored["status"] == "active"
    assert stored["next_schedule_time"] == "2027-05-02T06:23:00.000Z"
    assert stored["schedule"] == SEED_BODY["schedule"]
    assert stored["payload"]["queryParameters"] == {"param1": "121", "param2": "121"}
    assert stored["payload"]["body"] == SEED_BODY["payload"]["body"]
    assert stored["payload"]["headers"]["Authorization"] == "********"
    # Masked by its value: a Basic credential, whatever the header's name.
    assert stored["payload"]["headers"]["header1"] == "********"
    assert stored["metadata"] == SEED_BODY["metadata"]
    assert (stored["runs"], stored["failures"]) == (0, 0)
    # The canonical form's times are instants like every other time: end of 05/04/2027 in
    # Kolkata (23:59:59.999 local) is 18:29:59.999Z.
    assert stored["timing"] == {
        "timezone": "Asia/Calcutta",
        "at": None,
        "interval": {"number": 2, "unit": "minute"},
        "cron": None,
        "rrule": None,
        "start": "2027-05-02T06:23:00.000Z",
        "end": "2027-05-04T18:29:59.999Z",
        "max_occurrences": None,
    }
    times = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    for name in ("next_schedule_time", "dispatch_cursor", "created_at", "updated_at"):
        assert times.match(stored[name]), (name, stored[name])


def test_the_local_time_names_the_same_instant_to_the_millisecond(
    client: FlaskClient, processor: Processor
) -> None:
    # An interval counts from the moment it was accepted, milliseconds included: its local time
    # once dropped them ("07:53:31+00:00" beside "07:53:31.903Z"), naming another instant.
    body = {
        "id": "to-the-ms",
        "schedule": {"at": "2027-05-02T06:23:00.123Z", "timezone": "Asia/Kolkata"},
        "payload": SEED_BODY["payload"],
    }
    answer = client.post(f"{API}/schedule", json=body).get_json()
    assert answer["next_schedule_time"] == "2027-05-02T06:23:00.123Z"
    assert answer["next_schedule_time_local"] == "2027-05-02T11:53:00.123+05:30"
    processor.process_batch()
    stored = client.get(f"{API}/schedule/to-the-ms").get_json()
    assert stored["next_schedule_time_local"] == "2027-05-02T11:53:00.123+05:30"
    preview = client.post(f"{API}/schedule/preview", json={"schedule": body["schedule"]})
    assert preview.get_json()["occurrences"] == [
        {"utc": "2027-05-02T06:23:00.123Z", "local": "2027-05-02T11:53:00.123+05:30"}
    ]


def test_put_creates_then_replaces_with_a_newer_revision(
    client: FlaskClient, processor: Processor
) -> None:
    body = {**SEED_BODY, "name": "first"}
    assert client.put(f"{API}/schedule/report-7", json=body).status_code == 202
    processor.process_batch()
    replaced = {**SEED_BODY, "name": "second"}
    assert client.put(f"{API}/schedule/report-7", json=replaced).status_code == 202
    processor.process_batch()
    assert client.get(f"{API}/schedule/report-7").get_json()["name"] == "second"


def test_post_with_an_id_uses_it(client: FlaskClient, processor: Processor) -> None:
    response = client.post(f"{API}/schedule", json={**SEED_BODY, "id": "nightly-report"})
    assert response.get_json()["id"] == "nightly-report"
    processor.process_batch()
    assert client.get(f"{API}/schedule/nightly-report").status_code == 200


def test_delete_hides_the_schedule_and_unknown_ids_are_404(
    client: FlaskClient, processor: Processor
) -> None:
    client.put(f"{API}/schedule/gone", json=SEED_BODY)
    processor.process_batch()
    assert client.delete(f"{API}/schedule/gone").status_code == 202
    assert client.get(f"{API}/schedule/gone").status_code == 404
    assert client.delete(f"{API}/schedule/gone").status_code == 404
    assert client.delete(f"{API}/schedule/never-was").status_code == 404


def test_a_delete_that_overtakes_its_create_on_queue_1_wins(
    client: FlaskClient, processor: Processor
) -> None:
    client.put(f"{API}/schedule/racy", json=SEED_BODY)
    # The DELETE is answered before the processor has seen the create.
    assert client.delete(f"{API}/schedule/racy").status_code == 404
    processor.process_batch()
    assert client.get(f"{API}/schedule/racy").status_code == 404


def with_schedule(**schedule: Any) -> dict[str, Any]:
    return {**SEED_BODY, "schedule": schedule}


def with_payload(**changes: Any) -> dict[str, Any]:
    return {**SEED_BODY, "payload": {**SEED_BODY["payload"], **changes}}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (with_schedule(cron="0 9 * * *", timezone="Europe/Nowhere"), "schedule.timezone"),
        (with_schedule(cron="61 * * * *"), "schedule.cron"),
        (with_schedule(cron="0 0 30 2 *"), "schedule.cron"),
        (with_schedule(rrule="FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"), "schedule.rrule"),
        (with_schedule(rrule="FREQ=SOMETIMES"), "schedule.rrule"),
        (with_schedule(at="tomorrow"), "schedule.at"),
        (with_schedule(cron="0 9 * * *", rrule="FREQ=DAILY"), "schedule.rrule"),
        (with_schedule(timezone="UTC"), "schedule"),
        (
            with_schedule(
                interval={"number": 1, "unit": "day"},
                start="2027-01-02T00:00:00",
                end="2027-01-01T00:00:00",
            ),
            "schedule.end",
        ),
        (with_schedule(interval={"number": -5, "unit": "minute"}), "schedule.interval.number"),
        (with_schedule(cron="@every 100ms"), "schedule.cron"),
        # Far-off years: out of range, never a 500 when shown in a local time.
        (with_schedule(cron="0 9 * * 1-5", end="9999-12-31T23:59:59Z"), "schedule.end"),
        (with_schedule(at="9999-12-31T20:00:00Z", timezone="Asia/Tokyo"), "schedule.at"),
        (with_schedule(at="0001-01-02T00:00:00Z"), "schedule.at"),
        (
            with_schedule(
                start_date="01/01/2027", end_date="12/31/9999", timeZone="UTC", time_of_day="10:00"
            ),
            "schedule.end_date",
        ),
        # What dateutil refuses with TypeError or OverflowError rather than ValueError.
        (with_schedule(rrule="FREQ=SECONDLY;BYSECOND=61"), "schedule.rrule"),
        (with_schedule(rrule="FREQ=DAILY;INTERVAL=99999999999999999999"), "schedule.rrule"),
        (with_payload(url="ftp://example.com/x"), "payload.url"),
        (with_payload(url="not a url"), "payload.url"),
        (with_payload(method="FETCH"), "payload.method"),
        (with_payload(headers={"Bad Header": "x"}), "payload.headers"),
        (with_payload(timeout_seconds=0), "payload.timeout_seconds"),
        ({**SEED_BODY, "priority": 11}, "priority"),
        # More attempts than the queue delivers a message (SCHEDULER_MAX_RECEIVES, 20).
        ({**SEED_BODY, "retry": {"max_attempts": 21}}, "retry.max_attempts"),
        ({**SEED_BODY, "unexpected": 1}, "unexpected"),
        ({key: value for key, value in SEED_BODY.items() if key != "payload"}, "payload"),
    ],
)
def test_bad_bodies_are_400_naming_the_field_and_nothing_is_enqueued(
    client: FlaskClient, backends: Backends, body: dict[str, Any], field: str
) -> None:
    response = client.post(f"{API}/schedule", json=body)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert field in [error["field"] for error in problem["errors"]], problem
    assert queued(backends) == 0


def test_malformed_json_wrong_type_and_oversized_bodies(
    client: FlaskClient, backends: Backends
) -> None:
    malformed = client.post(
        f"{API}/schedule", data='{"name": "x",}', content_type="application/json"
    )
    assert malformed.status_code == 400
    assert malformed.mimetype == "application/problem+json"
    form = client.post(f"{API}/schedule", data="name=x", content_type="text/plain")
    assert form.status_code == 415
    huge = with_payload(body={"blob": "x" * 300_000})
    too_large = client.post(
        f"{API}/schedule", data=json.dumps(huge), content_type="application/json"
    )
    assert too_large.status_code == 413
    assert queued(backends) == 0


def test_a_put_whose_body_id_differs_from_the_path_is_refused(client: FlaskClient) -> None:
    response = client.put(f"{API}/schedule/a", json={**SEED_BODY, "id": "b"})
    assert response.status_code == 400
    assert response.get_json()["errors"][0]["field"] == "id"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**SEED_BODY, "priority": True}, "priority"),
        ({**SEED_BODY, "retry": {"max_attempts": False}}, "retry.max_attempts"),
        (with_schedule(interval={"number": True, "unit": "minute"}), "schedule.interval.number"),
        (with_schedule(cron="@hourly", max_occurrences=True), "schedule.max_occurrences"),
    ],
)
def test_booleans_are_not_whole_numbers(
    client: FlaskClient, backends: Backends, body: dict[str, Any], field: str
) -> None:
    response = client.post(f"{API}/schedule", json=body)
    assert response.status_code == 400
    assert field in [error["field"] for error in response.get_json()["errors"]]
    assert queued(backends) == 0
