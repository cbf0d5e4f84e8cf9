"""Working with runs: PATCH, history after delete, backfill, dead letters, jitter; over the
embedded backends through the API."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from shared.errors import Transient
from shared.messages import decode_occurrence
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from shared.timeutil import UTC, iso_z, parse_iso
from tests.support.api import ApiUnderTest
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver
from tests.support.schedules import hourly_cron_away_from_now
from tests.support.waiting import eventually

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/run",
        "headers": {"Authorization": "Bearer s3cr3t", "X-Trace": "visible"},
        "body": {"report": "daily"},
    },
    "tags": ["billing"],
    "retry": {"max_attempts": 3},
}


def create(api: ApiUnderTest, schedule_id: str, **changes: Any) -> None:
    response = api.client.put(f"{API}/schedule/{schedule_id}", json={**BODY, **changes})
    assert response.status_code == 202, response.get_json()
    api.apply()


def problem_fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.get_json()
    assert response.mimetype == "application/problem+json"
    return sorted(error["field"] for error in response.get_json()["errors"])


# -- PATCH /schedule/{id} -------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(api: ApiUnderTest) -> None:
    create(api, "p1")
    before = api.client.get(f"{API}/schedule/p1").get_json()
    answer = api.client.patch(
        f"{API}/schedule/p1",
        json={"payload": {"url": "https://hooks.example.com/v2"}, "retry": {"max_attempts": 5}},
    )
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["revision"] > before["revision"]
    api.apply()
    after = api.client.get(f"{API}/schedule/p1").get_json()
    assert after["payload"]["url"] == "https://hooks.example.com/v2"
    assert after["retry"]["max_attempts"] == 5
    assert after["revision"] == answer.get_json()["revision"]
    # Everything else as it was; the secret header kept its stored value.
    for name in ("name", "schedule", "tags", "metadata", "priority", "misfire"):
        assert after[name] == before[name], name
    assert after["payload"]["body"] == {"report": "daily"}
    assert after["payload"]["headers"] == {"Authorization": "********", "X-Trace": "visible"}
    stored = api.backends.store.get_schedule("default", "p1")
    assert stored is not None and stored.definition is not None
    assert stored.definition.payload.headers["Authorization"] == "Bearer s3cr3t"


def test_patch_merges_objects_and_null_removes(api: ApiUnderTest) -> None:
    create(api, "p2")
    answer = api.client.patch(
        f"{API}/schedule/p2",
        json={
            "payload": {"headers": {"X-Trace": None, "X-New": "1"}},
            "schedule": {"end": "2099-01-01T00:00:00"},
            "tags": None,
        },
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert answer.status_code == 202, answer.get_json()
    api.apply()
    after = api.client.get(f"{API}/schedule/p2").get_json()
    assert after["payload"]["headers"] == {"Authorization": "********", "X-New": "1"}
    assert after["schedule"] == {
        "cron": "0 9 * * *",
        "timezone": "Europe/Paris",
        "end": "2099-01-01T00:00:00",
    }
    assert after["tags"] == []
    # A schedule naming its form replaces the stored one whole.
    assert (
        api.client.patch(
            f"{API}/schedule/p2", json={"schedule": {"interval": {"number": 2, "unit": "hours"}}}
        ).status_code
        == 202
    )
    api.apply()
    after = api.client.get(f"{API}/schedule/p2").get_json()
    assert after["schedule"] == {"interval": {"number": 2, "unit": "hours"}}
    assert after["timezone"] == "UTC"


@pytest.mark.parametrize(
    ("patch", "fields"),
    [
        ({"payload": {"url": "ftp://x"}}, ["payload.url"]),
        ({"retry": {"max_attempts": 0}}, ["retry.max_attempts"]),
        ({"schedule": {"cron": "61 * * * *"}}, ["schedule.cron"]),
        ({"schedule": {"end": "2001-01-01T00:00:00"}}, ["schedule.end"]),
        ({"payload": None}, ["payload"]),
        ({"colour": "red"}, ["colour"]),
        ({"id": "other"}, ["id"]),
        ({"priority": 12, "payload": {"method": "FETCH"}}, ["payload.method", "priority"]),
    ],
)
def test_a_bad_patch_is_400_naming_the_field_and_changes_nothing(
    api: ApiUnderTest, patch: dict[str, Any], fields: list[str]
) -> None:
    create(api, "p3")
    before = api.client.get(f"{API}/schedule/p3").get_json()
    assert problem_fields(api.client.patch(f"{API}/schedule/p3", json=patch)) == fields
    assert api.queued() == 0
    assert api.client.get(f"{API}/schedule/p3").get_json() == before


def test_patch_of_an_unknown_or_deleted_schedule_is_404(api: ApiUnderTest) -> None:
    create(api, "gone")
    api.client.delete(f"{API}/schedule/gone")
    for schedule_id in ("never-was", "gone"):
        response = api.client.patch(f"{API}/schedule/{schedule_id}", json={"name": "x"})
        assert response.status_code == 404, response.get_json()
    assert api.queued() == 0


def test_the_spec_declares_every_operation_of_runs(api: ApiUnderTest) -> None:
    spec = api.client.get("/openapi.json").get_json()
    operation = spec["paths"][f"{API}/schedule/{{schedule_id}}"]["patch"]
    assert operation["operationId"] == "patchSchedule"
    assert {"202", "400", "404", "409"} <= set(operation["responses"])
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/SchedulePatch")
    patchable = spec["components"]["schemas"]["SchedulePatch"]["properties"]
    assert {"payload", "retry", "schedule", "jitter_seconds"} <= set(patchable)
    operations = {
        (method.upper(), path.removeprefix(API)): item[method]
        for path, item in spec["paths"].items()
        for method in item
        if method != "parameters"
    }
    expected = {
        ("POST", "/schedule/{schedule_id}/backfill"): {"202", "400", "404"},
        ("GET", "/dead-letters"): {"200", "400"},
        ("POST", "/dead-letters/{occurrence_id}/replay"): {"202", "404", "409"},
        ("DELETE", "/dead-letters/{occurrence_id}"): {"200", "404"},
    }
    for key, statuses in expected.items():
        assert statuses <= set(operations[key]["responses"]), key
    backfill = spec["components"]["schemas"]["Backfill"]
    assert set(backfill["required"]) == {"from", "to"}
    assert spec["components"]["schemas"]["ExecutionPage"]["properties"]["schedule_status"]
    assert spec["components"]["schemas"]["ScheduleView"]["properties"]["jitter_seconds"]


# -- history after delete -----------------------------------------------------------------


def record_runs(api: ApiUnderTest, schedule_id: str, count: int) -> list[str]:
    """``count`` finished runs of the schedule, a minute apart; their occurrence ids."""
    stored = api.backends.store.get_schedule("default", schedule_id)
    assert stored is not None
    store = api.backends.store
    now = api.clock.now()
    ids = []
    for number in range(count):
        moment = now.replace(second=0, microsecond=0) - timedelta(minutes=count - number)
        occurrence = Occurrence("default", schedule_id, stored.revision, moment)
        execution = store.begin_attempt(occurrence, "x", now, now + timedelta(seconds=30))
        assert execution is not None
        store.finish_attempt(
            execution, "x", AttemptOutcome(ExecutionStatus.SUCCEEDED, now, answer=Answer(200))
        )
        ids.append(occurrence.occurrence_id)
    return ids


def test_the_history_of_a_deleted_schedule_stays_readable(api: ApiUnderTest) -> None:
    create(api, "h1")
    ran = record_runs(api, "h1", 3)
    live = api.client.get(f"{API}/schedule/h1/executions").get_json()
    assert live["schedule_status"] == "active"
    assert api.client.delete(f"{API}/schedule/h1").status_code == 202
    assert api.client.get(f"{API}/schedule/h1").status_code == 404
    first = api.client.get(f"{API}/schedule/h1/executions?limit=2")
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["schedule_status"] == "deleted"
    rest = api.client.get(
        f"{API}/schedule/h1/executions?limit=2&cursor={first.get_json()['next_cursor']}"
    ).get_json()
    listed = [item["occurrence_id"] for item in first.get_json()["items"] + rest["items"]]
    assert listed == ran[::-1]
    # Retention removes the tombstone first: what is left is still the history.
    store = api.backends.store
    far = api.clock.now() + timedelta(days=10_000)
    assert store.purge_expired(api.clock.now() - timedelta(days=1), far, 10) == (0, 1)
    after = api.client.get(f"{API}/schedule/h1/executions").get_json()
    assert (after["schedule_status"], len(after["items"])) == ("deleted", 3)
    # Then the records: nothing is left, and the schedule is unknown.
    assert store.purge_expired(far, far, 10) == (3, 0)
    assert api.client.get(f"{API}/schedule/h1/executions").status_code == 404


def test_the_history_lists_runs_and_superseded_ones_only_as_skipped(api: ApiUnderTest) -> None:
    create(api, "h3")
    ran = record_runs(api, "h3", 2)
    stored = api.backends.store.get_schedule("default", "h3")
    assert stored is not None
    now = api.clock.now()
    ahead = [
        Occurrence("default", "h3", stored.revision, now + timedelta(minutes=n)) for n in (1, 2)
    ]
    api.backends.store.record_skips(
        [(item, "schedule paused") for item in ahead], now, superseded=True
    )
    history = api.client.get(f"{API}/schedule/h3/executions").get_json()
    assert [item["occurrence_id"] for item in history["items"]] == ran[::-1]
    assert {item["superseded"] for item in history["items"]} == {False}
    skipped = api.client.get(f"{API}/schedule/h3/executions?status=skipped").get_json()
    assert [item["occurrence_id"] for item in skipped["items"]] == [
        item.occurrence_id for item in reversed(ahead)
    ]
    assert {(item["status"], item["superseded"]) for item in skipped["items"]} == {
        ("skipped", True)
    }
    succeeded = api.client.get(f"{API}/schedule/h3/executions?status=succeeded&limit=1")
    first = succeeded.get_json()
    rest = api.client.get(
        f"{API}/schedule/h3/executions?status=succeeded&cursor={first['next_cursor']}"
    ).get_json()
    assert [item["occurrence_id"] for item in first["items"] + rest["items"]] == ran[::-1]
    assert api.client.get(f"{API}/schedule/h3").get_json()["superseded"] == 2
    assert problem_fields(api.client.get(f"{API}/schedule/h3/executions?status=done")) == ["status"]
    # The dead letters take no status.
    assert problem_fields(api.client.get(f"{API}/dead-letters?status=failed")) == ["status"]


def test_the_history_of_an_unknown_schedule_or_one_deleted_unrun_is_404(api: ApiUnderTest) -> None:
    create(api, "h2")
    api.client.delete(f"{API}/schedule/h2")
    api.client.delete(f"{API}/schedule/never-was")  # leaves a tombstone
    for schedule_id in ("h2", "never-was", "never-deleted"):
        response = api.client.get(f"{API}/schedule/{schedule_id}/executions")
        assert response.status_code == 404
        assert response.mimetype == "application/problem+json"


# -- backfill -------------------------------------------------------------------------------


def queued_occurrences(api: ApiUnderTest) -> list[Occurrence]:
    messages = api.backends.queues.occurrences.receive(10, 0, 30)
    found = []
    while messages:
        found += [decode_occurrence(message.body) for message in messages]
        messages = api.backends.queues.occurrences.receive(10, 0, 30)
    return sorted(found, key=lambda item: item.scheduled_time)


def hour_ago(api: ApiUnderTest) -> tuple[str, str, list[str]]:
    """A past hour, and the ids of a quarter-hourly schedule's four occurrences in it."""
    end = api.clock.now().replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(hours=1)
    ids = [f"q1:{iso_z(start + timedelta(minutes=15 * n))}" for n in range(4)]
    return iso_z(start), iso_z(end), ids


def test_backfill_runs_each_past_occurrence_with_its_normal_id(api: ApiUnderTest) -> None:
    create(api, "q1", schedule={"cron": "*/15 * * * *"})
    api.client.post(f"{API}/schedule/q1/pause")
    start, end, ids = hour_ago(api)
    # One ran already: it is left out.
    stored = api.backends.store.get_schedule("default", "q1")
    assert stored is not None
    ran = Occurrence("default", "q1", stored.revision, parse_iso(ids[1][3:]))
    now = api.clock.now()
    execution = api.backends.store.begin_attempt(ran, "x", now, now + timedelta(seconds=30))
    assert execution is not None
    api.backends.store.finish_attempt(
        execution, "x", AttemptOutcome(ExecutionStatus.SUCCEEDED, now, answer=Answer(200))
    )
    answer = api.client.post(f"{API}/schedule/q1/backfill", json={"from": start, "to": end})
    assert answer.status_code == 202, answer.get_json()
    body = answer.get_json()
    assert body["queued"] == [ids[0], ids[2], ids[3]]
    assert body["left_out"] == [{"occurrence_id": ids[1], "reason": "already succeeded"}]
    sent = queued_occurrences(api)
    assert [item.occurrence_id for item in sent] == body["queued"]
    assert all(item.manual and item.revision == stored.revision for item in sent)
    assert api.queued() == 0  # no schedule changed


def test_backfill_fire_once_runs_only_the_latest(api: ApiUnderTest) -> None:
    create(api, "q1", schedule={"cron": "*/15 * * * *"})
    start, end, ids = hour_ago(api)
    body = {"from": start, "to": end, "policy": "fire_once"}
    answer = api.client.post(f"{API}/schedule/q1/backfill", json=body).get_json()
    assert answer["queued"] == [ids[3]]
    assert [item["occurrence_id"] for item in answer["left_out"]] == ids[:3]
    assert [item.occurrence_id for item in queued_occurrences(api)] == [ids[3]]


def left_out_reasons(answer: dict[str, Any]) -> dict[str, str]:
    return {item["occurrence_id"]: item["reason"] for item in answer["left_out"]}


def test_backfill_leaves_out_what_is_before_the_start_or_after_the_end(api: ApiUnderTest) -> None:
    hour = api.clock.now().replace(minute=0, second=0, microsecond=0)

    def quarter(n: int) -> datetime:
        return hour + timedelta(minutes=15 * n)

    timing = {"cron": "*/15 * * * *", "start": iso_z(quarter(-2)), "end": iso_z(quarter(4))}
    create(api, "b1", schedule=timing)
    api.clock.advance(3 * 3600)
    body = {"from": iso_z(quarter(-4)), "to": iso_z(quarter(8))}
    answer = api.client.post(f"{API}/schedule/b1/backfill", json=body)
    assert answer.status_code == 202, answer.get_json()
    queued = [f"b1:{iso_z(quarter(n))}" for n in range(-2, 5)]
    assert answer.get_json()["queued"] == queued
    before = f"before the schedule's start ({iso_z(quarter(-2))})"
    after = f"after the schedule's end ({iso_z(quarter(4))})"
    assert left_out_reasons(answer.get_json()) == {
        **{f"b1:{iso_z(quarter(n))}": before for n in (-4, -3)},
        **{f"b1:{iso_z(quarter(n))}": after for n in (5, 6, 7)},
    }
    assert [item.occurrence_id for item in queued_occurrences(api)] == queued


def test_backfill_runs_no_more_than_max_occurrences_from_the_first(api: ApiUnderTest) -> None:
    create(api, "b2", schedule={"cron": "*/15 * * * *", "max_occurrences": 3})
    stored = api.backends.store.get_schedule("default", "b2")
    assert stored is not None
    # The schedule's first occurrence: the first quarter hour at or after its acceptance.
    hour = stored.accepted_at.replace(minute=0, second=0, microsecond=0)
    moments = [hour + timedelta(minutes=15 * n) for n in range(-4, 8)]
    first = next(index for index, moment in enumerate(moments) if moment >= stored.accepted_at)
    ids = [f"b2:{iso_z(moment)}" for moment in moments]
    api.clock.advance(3 * 3600)
    body = {"from": iso_z(moments[0]), "to": iso_z(moments[-1] + timedelta(minutes=15))}
    answer = api.client.post(f"{API}/schedule/b2/backfill", json=body).get_json()
    assert answer["queued"] == ids[first : first + 3]
    reasons = left_out_reasons(answer)
    assert set(reasons) == set(ids) - set(answer["queued"])
    assert {reasons[item] for item in ids[:first]} == {
        "before the first occurrence, from which max_occurrences counts"
    }
    assert {reasons[item] for item in ids[first + 3 :]} == {
        f"beyond max_occurrences (3), the last was {iso_z(moments[first + 2])}"
    }
    assert [item.occurrence_id for item in queued_occurrences(api)] == answer["queued"]


def test_a_backfill_too_far_after_a_counted_schedules_first_occurrence_is_refused(
    api: ApiUnderTest,
) -> None:
    create(api, "b3", schedule={"cron": "* * * * *", "max_occurrences": 10_000_000})
    api.clock.advance(366 * 24 * 3600)  # over 500,000 minutes to count
    end = api.clock.now().replace(second=0, microsecond=0)
    body = {"from": iso_z(end - timedelta(hours=1)), "to": iso_z(end)}
    assert problem_fields(api.client.post(f"{API}/schedule/b3/backfill", json=body)) == ["from"]
    assert api.occurrences_queued() == 0


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"to": "2026-01-01T00:00:00Z"}, ["from"]),
        ({"from": "2026-01-01T00:00:00", "to": "2026-01-01T01:00:00Z"}, ["from"]),
        ({"from": "yesterday", "to": "2026-01-01T01:00:00Z"}, ["from"]),
        ({"from": "2026-01-01T01:00:00Z", "to": "2026-01-01T00:00:00Z"}, ["from"]),
        ({"from": "2026-01-01T00:00:00Z", "to": "2999-01-01T00:00:00Z"}, ["from", "to"]),
        ({"from": "2020-01-01T00:00:00Z", "to": "2022-01-01T00:00:00Z"}, ["from"]),
        (
            {"from": "2025-01-01T00:00:00Z", "to": "2025-01-03T00:00:00Z", "policy": "skip"},
            ["policy"],
        ),
        ({"from": "2025-01-01T00:00:00Z", "to": "2025-01-02T00:00:00Z", "speed": 2}, ["speed"]),
    ],
)
def test_a_bad_backfill_is_400_naming_the_field_and_queues_nothing(
    api: ApiUnderTest, body: dict[str, Any], fields: list[str]
) -> None:
    create(api, "q2", schedule={"cron": "*/15 * * * *"})
    assert problem_fields(api.client.post(f"{API}/schedule/q2/backfill", json=body)) == fields
    assert api.occurrences_queued() == 0


def test_a_backfill_over_too_many_occurrences_is_refused(api: ApiUnderTest) -> None:
    create(api, "q3", schedule={"cron": "* * * * *"})
    body = {"from": "2025-01-01T00:00:00Z", "to": "2025-01-02T00:00:00Z"}  # 1,440 minutes
    assert problem_fields(api.client.post(f"{API}/schedule/q3/backfill", json=body)) == ["from"]
    assert api.occurrences_queued() == 0
    unknown = api.client.post(f"{API}/schedule/never-was/backfill", json=body)
    assert unknown.status_code == 404


def test_backfilled_occurrences_fire_with_their_idempotency_keys(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        # Hourly at a minute none of whose times comes while the test runs (a quarter-hourly
        # schedule fired by itself whenever the test ran across a quarter hour).
        cron, minute = hourly_cron_away_from_now()
        body = {**BODY, "schedule": {"cron": cron}, "misfire": {"grace_seconds": 1}}
        body["payload"] = {"method": "POST", "url": f"{receiver.url}/hook"}
        assert pipeline.client.put(f"{API}/schedule/q4", json=body).status_code == 202
        stored = pipeline.wait_until_stored("q4")
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        past = {"from": iso_z(end - timedelta(hours=2)), "to": iso_z(end)}
        # The first was skipped (for overlap, as an executor records it): a backfill runs it.
        first = end - timedelta(hours=2) + timedelta(minutes=minute)
        skipped = Occurrence("default", "q4", stored["revision"], first)
        assert pipeline.backends.store.record_skips([(skipped, "overlap: busy")], end) == 1
        answer = pipeline.client.post(f"{API}/schedule/q4/backfill", json=past).get_json()
        calls = receiver.wait_for(2, timeout=10)
        keys = sorted(call.headers["idempotency-key"] for call in calls)
        assert (
            keys
            == answer["queued"]
            == [
                f"q4:{iso_z(end - timedelta(hours=2) + timedelta(minutes=minute))}",
                f"q4:{iso_z(end - timedelta(hours=1) + timedelta(minutes=minute))}",
            ]
        )
        history = pipeline.client.get(f"{API}/schedule/q4/executions").get_json()["items"]
        assert {item["occurrence_id"] for item in history} == set(keys)
        # A second backfill of the same range runs nothing again.
        again = pipeline.client.post(f"{API}/schedule/q4/backfill", json=past).get_json()
        assert again["queued"] == []


# -- dead letters ---------------------------------------------------------------------------


def test_a_dead_letter_is_listed_replayed_with_its_key_and_recorded(tmp_path: Path) -> None:
    answers = [500]
    with (
        running_receiver(lambda call: (answers[-1], {})) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        client = pipeline.client
        cron, minute = hourly_cron_away_from_now()  # none of its times comes meanwhile
        body = {**BODY, "schedule": {"cron": cron}, "retry": {"max_attempts": 1}}
        body["payload"] = {"method": "POST", "url": f"{receiver.url}/hook"}
        assert client.put(f"{API}/schedule/d1", json=body).status_code == 202
        pipeline.wait_until_stored("d1")
        end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        start = end - timedelta(hours=1) + timedelta(minutes=minute)
        occurrence_id = f"d1:{iso_z(start)}"
        range_ = {"from": iso_z(start), "to": iso_z(end)}
        assert client.post(f"{API}/schedule/d1/backfill", json=range_).status_code == 202

        listed = eventually(lambda: client.get(f"{API}/dead-letters").get_json()["items"])
        assert [item["id"] for item in listed] == [occurrence_id]
        letter = listed[0]
        assert (letter["schedule_id"], letter["scheduled_time"]) == ("d1", iso_z(start))
        assert (letter["attempts"], letter["http_status"]) == (1, 500)
        assert letter["error"] and letter["failed_at"]

        answers.append(200)
        replayed = client.post(f"{API}/dead-letters/{occurrence_id}/replay")
        assert replayed.status_code == 202, replayed.get_json()
        assert replayed.get_json() == {
            "id": occurrence_id,
            "schedule_id": "d1",
            "status": "queued",
            "attempt": 2,
        }
        calls = receiver.wait_for(2, timeout=10)
        assert [call.headers["idempotency-key"] for call in calls] == [occurrence_id] * 2
        history = eventually(
            lambda: [
                item
                for item in client.get(f"{API}/schedule/d1/executions").get_json()["items"]
                if item["status"] == "succeeded"
            ]
        )
        assert (history[0]["occurrence_id"], history[0]["attempts"]) == (occurrence_id, 2)
        assert client.get(f"{API}/dead-letters").get_json()["items"] == []
        # Replayed: no longer a dead letter, so neither replayed nor discarded again.
        again = client.post(f"{API}/dead-letters/{occurrence_id}/replay")
        assert again.status_code == 404 and "dead letter" in again.get_json()["detail"]
        assert client.delete(f"{API}/dead-letters/{occurrence_id}").status_code == 404
        # The schedule's change history has the replay, once, naming the occurrence.
        changes = client.get(f"{API}/schedule/d1/changes").get_json()["items"]
        assert [(item["action"], item["revision"]) for item in changes[:1]] == [("replay", None)]
        assert changes[0]["fields"] == [
            {"path": "occurrence_id", "old": None, "new": occurrence_id, "secret": False}
        ]
        assert [item["action"] for item in changes[1:]] == ["create"]


def failed_record(api: ApiUnderTest, schedule_id: str, minute: int) -> str:
    stored = api.backends.store.get_schedule("default", schedule_id)
    assert stored is not None
    now = api.clock.now()
    moment = now.replace(second=0, microsecond=0) - timedelta(minutes=minute)
    occurrence = Occurrence("default", schedule_id, stored.revision, moment)
    execution = api.backends.store.begin_attempt(occurrence, "x", now, now + timedelta(seconds=30))
    assert execution is not None
    outcome = AttemptOutcome(
        ExecutionStatus.FAILED,
        now + timedelta(milliseconds=minute),
        answer=Answer(401),
        error="HTTP 401 from https://hooks.example.com/run?token=abc123",
    )
    api.backends.store.finish_attempt(execution, "x", outcome)
    return occurrence.occurrence_id


def test_dead_letters_page_per_tenant_and_discard(api: ApiUnderTest) -> None:
    create(api, "d2")
    ids = [failed_record(api, "d2", minute) for minute in (1, 2, 3)]
    first = api.client.get(f"{API}/dead-letters?limit=2").get_json()
    rest = api.client.get(f"{API}/dead-letters?limit=2&cursor={first['next_cursor']}").get_json()
    assert [item["id"] for item in first["items"] + rest["items"]] == ids[::-1]
    assert rest["next_cursor"] is None
    assert "abc123" not in first["items"][0]["error"]  # secrets redacted
    discarded = api.client.delete(f"{API}/dead-letters/{ids[0]}")
    assert discarded.status_code == 200
    assert discarded.get_json() == {"id": ids[0], "status": "discarded"}
    listed = api.client.get(f"{API}/dead-letters").get_json()["items"]
    assert [item["id"] for item in listed] == ids[:0:-1]
    history = api.client.get(f"{API}/schedule/d2/executions").get_json()["items"]
    assert {item["status"] for item in history} == {"failed"}
    assert api.client.delete(f"{API}/dead-letters/{ids[0]}").status_code == 404
    assert api.client.post(f"{API}/dead-letters/{ids[0]}/replay").status_code == 404
    for query in ("limit=0", "cursor=bad", "cursor=ZTp4fHk", "colour=red"):
        response = api.client.get(f"{API}/dead-letters?{query}")
        assert response.status_code == 400, query
    # An id no occurrence can have is a 400 naming it, as everywhere else; a well-formed one
    # that is no dead letter, a 404.
    for malformed in ("garbage", "d2:yesterday", "d2:2026-03-08T07:30:00Z", "..:x"):
        for method, path in (("POST", f"{malformed}/replay"), ("DELETE", malformed)):
            answer = api.client.open(f"{API}/dead-letters/{path}", method=method)
            assert problem_fields(answer) == ["occurrence_id"], (method, malformed)
    unknown = "d2:2026-03-08T07:30:00.000Z"
    assert api.client.post(f"{API}/dead-letters/{unknown}/replay").status_code == 404
    assert (
        api.client.post(f"{API}/dead-letters/d2:manual:{unknown[3:]}:ab12/replay").status_code
        == 404
    )
    assert api.occurrences_queued() == 0


def test_a_dead_letter_of_a_deleted_schedule_cannot_be_replayed(api: ApiUnderTest) -> None:
    create(api, "d3")
    occurrence_id = failed_record(api, "d3", 1)
    api.client.delete(f"{API}/schedule/d3")
    response = api.client.post(f"{API}/dead-letters/{occurrence_id}/replay")
    assert response.status_code == 409
    assert "deleted" in response.get_json()["detail"]
    assert api.occurrences_queued() == 0
    assert api.client.delete(f"{API}/dead-letters/{occurrence_id}").status_code == 200


def test_a_replay_that_cannot_be_sent_stays_a_dead_letter(
    api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    create(api, "d4")
    occurrence_id = failed_record(api, "d4", 1)

    def refuse(messages: Any) -> None:
        raise Transient("queue down")

    monkeypatch.setattr(api.backends.queues.occurrences, "send", refuse)
    response = api.client.post(f"{API}/dead-letters/{occurrence_id}/replay")
    assert response.status_code == 503
    listed = api.client.get(f"{API}/dead-letters").get_json()["items"]
    assert [(item["id"], item["attempts"]) for item in listed] == [(occurrence_id, 1)]


# -- jitter ---------------------------------------------------------------------------------


def test_jitter_is_validated_shown_and_patched(api: ApiUnderTest) -> None:
    create(api, "j1", jitter_seconds=30)
    assert api.client.get(f"{API}/schedule/j1").get_json()["jitter_seconds"] == 30
    for bad in (-1, 601, "30", True, None):
        response = api.client.put(f"{API}/schedule/j2", json={**BODY, "jitter_seconds": bad})
        assert problem_fields(response) == ["jitter_seconds"], bad
    assert api.queued() == 0
    assert api.client.patch(f"{API}/schedule/j1", json={"jitter_seconds": 5.5}).status_code == 202
    api.apply()
    assert api.client.get(f"{API}/schedule/j1").get_json()["jitter_seconds"] == 5.5
    assert problem_fields(api.client.patch(f"{API}/schedule/j1", json={"jitter_seconds": 900})) == [
        "jitter_seconds"
    ]


def test_jittered_calls_come_within_the_window_under_their_nominal_ids(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        body = {
            **BODY,
            "schedule": {"interval": {"number": 1, "unit": "second"}},
            "jitter_seconds": 0.9,
            "payload": {"method": "POST", "url": f"{receiver.url}/hook"},
        }
        assert pipeline.client.put(f"{API}/schedule/j3", json=body).status_code == 202
        calls = receiver.wait_for(4, timeout=10)
        pipeline.client.delete(f"{API}/schedule/j3")
        offsets = []
        for call in calls[:4]:
            nominal = parse_iso(call.headers["idempotency-key"].removeprefix("j3:"))
            fired = parse_iso(call.headers["x-scheduler-scheduled-time"])
            offset = (fired - nominal).total_seconds()
            assert 0 <= offset <= 0.9
            assert -0.01 <= call.received_at - fired.timestamp() < 0.5  # at its jittered time
            offsets.append(offset)
        assert len(set(offsets)) > 1
