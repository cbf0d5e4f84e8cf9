"""Validation answers every bad field at once, and reads input strictly: times without trailing
characters, JSON numbers where numbers are expected, IANA region zones, bounded integers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from shared.timeutil import iso_z
from tests.support.api import ApiUnderTest
from tests.support.harness import API

BODY: dict[str, Any] = {
    "name": "strict",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
}


def bad_fields(api: ApiUnderTest, body: dict[str, Any], path: str = "/schedule") -> set[str]:
    response = api.client.post(f"{API}{path}", json=body)
    assert response.status_code == 400, response.get_json()
    assert api.queued() == 0
    return {error["field"] for error in response.get_json()["errors"]}


def test_a_bad_cron_line_is_named_beside_another_bad_field(api: ApiUnderTest) -> None:
    body = {
        **BODY,
        "name": "x" * 300,
        "schedule": {"cron": "61 * * * *"},
        "payload": {"method": "BREW", "url": "https://hooks.example.com/run"},
    }
    assert bad_fields(api, body) == {"name", "schedule.cron", "payload.method"}


def test_every_domain_check_answers_in_one_pass(api: ApiUnderTest) -> None:
    body = {
        **BODY,
        "schedule": {
            "cron": "61 * * * *",
            "start": "2027-01-02T00:00:00",
            "end": "2027-01-01T00:00:00",
        },
        "payload": {"method": "GET", "url": "http://10.1.2.3/hook"},
        "retry": {"max_attempts": 50},
        "tags": [""],
    }
    assert bad_fields(api, body) == {
        "schedule.cron",
        "schedule.end",
        "payload.url",
        "retry.max_attempts",
        "tags.0",
    }
    # The same without a field error: the service's own checks name them all too.
    del body["tags"]
    assert bad_fields(api, body) == {
        "schedule.cron",
        "schedule.end",
        "payload.url",
        "retry.max_attempts",
    }


def test_every_bad_field_of_the_blueprint_form_at_once(api: ApiUnderTest) -> None:
    schedule = {
        "start_date": "13/45/2027",
        "end_date": "someday",
        "timeZone": "UTC",
        "time_of_day": "25:00",
    }
    assert bad_fields(api, {**BODY, "schedule": schedule, "priority": 10}) == {
        "schedule.start_date",
        "schedule.end_date",
        "schedule.time_of_day",
        "priority",
    }


def test_a_preview_names_a_bad_rule_beside_a_bad_count(api: ApiUnderTest) -> None:
    body = {"schedule": {"rrule": "FREQ=SOMETIMES"}, "count": 0}
    assert bad_fields(api, body, "/schedule/preview") == {"schedule.rrule", "count"}


@pytest.mark.parametrize("field", ["at", "start", "end"], ids=["at", "start", "end"])
@pytest.mark.parametrize(
    "text",
    [
        "2027-01-01T09:00:00\x00",
        "2027-01-01T09:00:00Z\x00",
        " 2027-01-01T09:00:00",
        "2027-01-01T09:00:00 x",
    ],
    ids=["nul", "nul-after-z", "leading-space", "trailing-word"],
)
def test_a_time_with_anything_around_it_is_refused(
    api: ApiUnderTest, field: str, text: str
) -> None:
    schedule: dict[str, Any] = {"at": text} if field == "at" else {"cron": "0 9 * * *", field: text}
    assert bad_fields(api, {**BODY, "schedule": schedule}) == {f"schedule.{field}"}


def test_a_listing_bound_with_a_trailing_nul_is_refused(api: ApiUnderTest) -> None:
    response = api.client.get(f"{API}/schedules?next_after=2027-01-01T09:00:00Z%00")
    assert response.status_code == 400
    assert [error["field"] for error in response.get_json()["errors"]] == ["next_after"]


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ({"payload": {**BODY["payload"], "timeout_seconds": "5"}}, "payload.timeout_seconds"),
        ({"retry": {"backoff_seconds": "1"}}, "retry.backoff_seconds"),
        ({"retry": {"max_backoff_seconds": "30"}}, "retry.max_backoff_seconds"),
        ({"retry": {"max_attempts": "3"}}, "retry.max_attempts"),
        ({"misfire": {"grace_seconds": "60"}}, "misfire.grace_seconds"),
        ({"misfire": {"grace_seconds": True}}, "misfire.grace_seconds"),
        ({"priority": "3"}, "priority"),
    ],
    ids=["timeout", "backoff", "max-backoff", "attempts", "grace", "grace-bool", "priority"],
)
def test_numbers_must_be_json_numbers(api: ApiUnderTest, part: dict[str, Any], field: str) -> None:
    assert bad_fields(api, {**BODY, **part}) == {field}


def test_a_number_written_as_a_json_number_is_accepted(api: ApiUnderTest) -> None:
    body = {
        **BODY,
        "payload": {**BODY["payload"], "timeout_seconds": 5},
        "retry": {"backoff_seconds": 1.5, "max_backoff_seconds": 30},
        "misfire": {"grace_seconds": 60},
    }
    assert api.client.post(f"{API}/schedule", json=body).status_code == 202


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "Factory", "right/UTC", "posix/UTC"])
def test_only_region_zones_are_accepted(api: ApiUnderTest, zone: str) -> None:
    assert bad_fields(api, {**BODY, "schedule": {"cron": "0 9 * * *", "timezone": zone}}) == {
        "schedule.timezone"
    }
    seed = {"start_date": "05/02/2027", "timeZone": zone, "time_of_day": "09:00"}
    assert bad_fields(api, {**BODY, "schedule": seed}) == {"schedule.timeZone"}


@pytest.mark.parametrize("zone", ["UTC", "Asia/Calcutta", "America/Argentina/Buenos_Aires"])
def test_region_zones_and_their_links_are_accepted(api: ApiUnderTest, zone: str) -> None:
    body = {**BODY, "schedule": {"cron": "0 9 * * *", "timezone": zone}}
    assert api.client.post(f"{API}/schedule", json=body).status_code == 202


@pytest.mark.parametrize("digits", [31, 4_000], ids=["10^30", "4000-digits"])
def test_max_occurrences_is_bounded(api: ApiUnderTest, digits: int) -> None:
    raw = (
        '{"schedule": {"cron": "0 9 * * *", "max_occurrences": 1' + "0" * (digits - 1) + "},"
        ' "payload": {"method": "GET", "url": "https://hooks.example.com/run"}}'
    )
    response = api.client.post(
        f"{API}/schedule", data=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.get_data(as_text=True)[:300]
    assert [error["field"] for error in response.get_json()["errors"]] == [
        "schedule.max_occurrences"
    ]


# -- a one-time schedule whose time has passed ------------------------------------------------


def test_a_past_one_time_schedule_is_refused_unless_the_body_says_to_fire_it(
    api: ApiUnderTest,
) -> None:
    past = {**BODY, "schedule": {"at": "2020-01-01T00:00:00Z"}}
    response = api.client.post(f"{API}/schedule", json=past)
    assert response.status_code == 400
    [error] = response.get_json()["errors"]
    assert error["field"] == "schedule.at"
    assert "2020-01-01T00:00:00.000Z has passed" in error["message"]
    assert '"fire_if_past": true' in error["message"]
    # Named beside any other bad field.
    both = {**past, "payload": {"method": "BREW", "url": "https://hooks.example.com/run"}}
    assert bad_fields(api, both) == {"schedule.at", "payload.method"}
    # The blueprint's one-time form names its own field.
    seed = {"start_date": "01/01/2020", "timeZone": "UTC", "time_of_day": "09:00"}
    assert bad_fields(api, {**BODY, "schedule": seed}) == {"schedule.start_date"}
    eventbridge = {"cron": "at(2020-01-01T09:00:00)"}
    assert bad_fields(api, {**BODY, "schedule": eventbridge}) == {"schedule.cron"}
    assert api.queued() == 0

    # Asked for, it is accepted and fires once, at once (its time is its occurrence's id).
    for schedule in (past["schedule"], seed, eventbridge):
        body = {**BODY, "schedule": {**schedule, "fire_if_past": True}}
        accepted = api.client.post(f"{API}/schedule", json=body)
        assert accepted.status_code == 202, accepted.get_json()
    assert api.queued() == 3


def test_a_one_time_schedule_a_moment_late_is_accepted(api: ApiUnderTest) -> None:
    # Within the misfire threshold (5 s): a request for "now" that took a moment to arrive.
    moment = api.clock.now() - timedelta(seconds=2)
    body = {**BODY, "schedule": {"at": iso_z(moment)}}
    assert api.client.post(f"{API}/schedule", json=body).status_code == 202


def test_fire_if_past_is_for_one_time_schedules_only(api: ApiUnderTest) -> None:
    cron = {**BODY, "schedule": {**BODY["schedule"], "fire_if_past": True}}
    assert bad_fields(api, cron) == {"schedule.fire_if_past"}
    repeating = {
        "start_date": "01/01/2020",
        "timeZone": "UTC",
        "time_of_day": "09:00",
        "repeat_interval": {"number": 1, "unit": "day"},
        "fire_if_past": True,
    }
    assert bad_fields(api, {**BODY, "schedule": repeating}) == {"schedule.fire_if_past"}
    text = {**BODY, "schedule": {"at": "2020-01-01T00:00:00Z", "fire_if_past": "yes"}}
    assert bad_fields(api, text) == {"schedule.fire_if_past"}


def test_a_repeated_create_whose_time_passed_meanwhile_gets_its_first_answer(
    api: ApiUnderTest,
) -> None:
    soon = {**BODY, "schedule": {"at": iso_z(api.clock.now() + timedelta(seconds=1))}}
    headers = {"Idempotency-Key": "once-1"}
    first = api.client.post(f"{API}/schedule", json=soon, headers=headers)
    assert first.status_code == 202
    api.clock.advance(60)  # the client's retry comes a minute later
    again = api.client.post(f"{API}/schedule", json=soon, headers=headers)
    assert again.status_code == 202, again.get_json()
    assert again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
