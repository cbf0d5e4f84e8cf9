"""The rest of the contract: list, pause, resume, trigger, history, idempotent creation, quotas,
secret masking, limits and the OpenAPI document, over the embedded backends."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from shared.errors import Transient
from shared.messages import decode_occurrence
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/run",
        "headers": {"Authorization": "Bearer s3cr3t", "X-Trace": "visible"},
    },
    "tags": ["billing"],
}


def create(api: ApiUnderTest, schedule_id: str, **changes: Any) -> dict[str, Any]:
    response = api.client.put(f"{API}/schedule/{schedule_id}", json={**BODY, **changes})
    assert response.status_code == 202, response.get_json()
    return dict(response.get_json())


def problem_fields(response: Any) -> list[str]:
    assert response.mimetype == "application/problem+json", response.get_data(as_text=True)
    return [error["field"] for error in response.get_json().get("errors", [])]


# -- GET /schedules ----------------------------------------------------------------------


def test_list_filters_by_status_name_tag_and_next_time(api: ApiUnderTest) -> None:
    create(api, "a-daily", name="report daily", tags=["billing"])
    create(api, "b-weekly", name="report weekly", tags=["ops"])
    create(api, "c-cleanup", name="cleanup", schedule={"cron": "0 3 * * *"})
    create(
        api,
        "d-done",
        name="report once",
        schedule={"at": "2020-01-01T00:00:00Z", "fire_if_past": True},
    )
    api.apply()
    api.client.post(f"{API}/schedule/b-weekly/pause")

    def ids(query: str) -> list[str]:
        response = api.client.get(f"{API}/schedules?{query}")
        assert response.status_code == 200, response.get_json()
        return [item["id"] for item in response.get_json()["items"]]

    assert ids("") == ["a-daily", "b-weekly", "c-cleanup", "d-done"]
    assert ids("status=active") == ["a-daily", "c-cleanup", "d-done"]
    assert ids("status=paused") == ["b-weekly"]
    assert ids("name=report") == ["a-daily", "b-weekly", "d-done"]
    assert ids("tag=billing") == ["a-daily", "c-cleanup", "d-done"]
    assert ids("tag=ops&name=report") == ["b-weekly"]
    nine = api.client.get(f"{API}/schedule/a-daily").get_json()["next_schedule_time"]
    three = api.client.get(f"{API}/schedule/c-cleanup").get_json()["next_schedule_time"]
    assert ids(f"next_before={three}") == sorted(
        ["c-cleanup", "d-done"] + (["a-daily", "b-weekly"] if nine <= three else [])
    )
    assert "c-cleanup" in ids(f"next_after={three}&next_before={three}")
    # Secrets are masked in lists too.
    listed = api.client.get(f"{API}/schedules").get_json()["items"][0]
    assert listed["payload"]["headers"] == {"Authorization": "********", "X-Trace": "visible"}


def test_list_pages_in_a_stable_order_with_an_opaque_cursor(api: ApiUnderTest) -> None:
    for number in range(7):
        create(api, f"s{number}")
    api.apply()
    seen: list[str] = []
    url = f"{API}/schedules?limit=3"
    pages = 0
    while True:
        answer = api.client.get(url).get_json()
        pages += 1
        seen += [item["id"] for item in answer["items"]]
        if answer["next_cursor"] is None:
            break
        assert not answer["next_cursor"].startswith("s")  # opaque, not the raw id
        # A schedule created meanwhile, before the cursor, does not disturb the pages.
        create(api, "a-late")
        api.apply()
        url = f"{API}/schedules?limit=3&cursor={answer['next_cursor']}"
    assert seen == [f"s{number}" for number in range(7)]
    assert pages == 3


def test_list_searches_names_tags_and_hosts_and_sorts_either_way_page_by_page(
    api: ApiUnderTest,
) -> None:
    create(api, "a1", name="Nightly report", tags=["billing"])
    create(api, "b2", name="cleanup", tags=["ops"], schedule={"cron": "0 3 * * *"})
    create(
        api,
        "c3",
        name="nightly export",
        tags=["exports"],
        payload={"method": "GET", "url": "https://Exports.example.org:8443/run?token=t0p"},
    )
    create(api, "d4", name="Zeta", schedule={"at": "2020-01-01T00:00:00Z", "fire_if_past": True})
    api.apply()

    def ids(query: str) -> list[str]:
        """Every page of the listing, three at a time, each page's cursor passed on."""
        seen: list[str] = []
        cursor = ""
        while True:
            response = api.client.get(f"{API}/schedules?limit=3&{query}{cursor}")
            assert response.status_code == 200, response.get_json()
            answer = response.get_json()
            seen += [item["id"] for item in answer["items"]]
            if answer["next_cursor"] is None:
                return seen
            cursor = f"&cursor={answer['next_cursor']}"

    assert ids("q=NIGHTLY") == ["a1", "c3"]
    assert ids("q=ops") == ["b2"]
    assert ids("q=exports.example") == ["c3"]
    assert ids("q=https://exports.example.org:8443/other") == ["c3"]
    assert ids("q=t0p") == []  # a URL's query is sealed, not searched
    assert ids("q=%20nightly%20&tag=billing") == ["a1"]
    assert ids("sort=name") == ["b2", "c3", "a1", "d4"]
    assert ids("sort=-name") == ["d4", "a1", "c3", "b2"]
    # By dispatch_cursor (ISO instants, so in the order of their text); none come last.
    listed = api.client.get(f"{API}/schedules").get_json()["items"]
    cursors = {item["id"]: item["dispatch_cursor"] for item in listed}
    timed = sorted((cursor, key) for key, cursor in cursors.items() if cursor)
    untimed = sorted(key for key, cursor in cursors.items() if not cursor)
    assert ids("sort=next") == [key for _, key in timed] + untimed
    assert ids("sort=-next") == [key for _, key in timed[::-1]] + untimed[::-1]
    assert ids("sort=created") == ["a1", "b2", "c3", "d4"]
    assert ids("sort=-created") == ["d4", "c3", "b2", "a1"]
    assert ids("sort=name&q=nightly") == ["c3", "a1"]
    assert ids("sort=id") == ids("") == ["a1", "b2", "c3", "d4"]
    # A cursor is read only in the order that gave it.
    page = api.client.get(f"{API}/schedules?limit=1&sort=name").get_json()
    for other in ("", "sort=-name&", "sort=created&"):
        response = api.client.get(f"{API}/schedules?{other}cursor={page['next_cursor']}")
        assert response.status_code == 400
        assert problem_fields(response) == ["cursor"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=0", "limit"),
        ("sort=newest", "sort"),
        ("sort=", "sort"),
        ("sort=-id", "sort"),
        ("q=", "q"),
        ("q=%20%20", "q"),
        ("q=" + "x" * 201, "q"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("status=deleted", "status"),
        ("status=", "status"),
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=ZTpzMQ", "cursor"),  # an executions cursor given to the schedules list
        ("next_after=yesterday", "next_after"),
        ("next_before=2026-01-01T00:00:00", "next_before"),  # no offset: ambiguous
        ("stauts=active", "stauts"),
        ("name=" + "x" * 201, "name"),
    ],
)
def test_list_refuses_bad_parameters_naming_them(api: ApiUnderTest, query: str, field: str) -> None:
    response = api.client.get(f"{API}/schedules?{query}")
    assert response.status_code == 400
    assert field in problem_fields(response)


# -- pause, resume, trigger, executions ----------------------------------------------------


def test_pause_and_resume_answer_the_schedule(api: ApiUnderTest) -> None:
    create(api, "p1")
    api.apply()
    paused = api.client.post(f"{API}/schedule/p1/pause")
    assert paused.status_code == 202
    assert paused.get_json()["status"] == "paused"
    assert paused.get_json()["payload"]["headers"]["Authorization"] == "********"
    assert api.client.post(f"{API}/schedule/p1/pause").get_json()["status"] == "paused"
    resumed = api.client.post(f"{API}/schedule/p1/resume")
    assert resumed.status_code == 202
    assert resumed.get_json()["status"] == "active"
    assert resumed.get_json()["next_schedule_time"] is not None


@pytest.mark.parametrize("action", ["pause", "resume", "trigger"])
def test_actions_on_unknown_or_deleted_schedules_are_404(api: ApiUnderTest, action: str) -> None:
    create(api, "gone")
    api.apply()
    api.client.delete(f"{API}/schedule/gone")
    for schedule_id in ("never-was", "gone"):
        response = api.client.post(f"{API}/schedule/{schedule_id}/{action}")
        assert response.status_code == 404, (schedule_id, response.get_json())
        assert response.mimetype == "application/problem+json"
    assert api.occurrences_queued() == 0


def test_trigger_queues_one_manual_occurrence_with_its_own_id(api: ApiUnderTest) -> None:
    create(api, "t1", schedule={"at": "2020-01-01T00:00:00Z", "fire_if_past": True})  # completed
    create(api, "t2")
    api.apply()
    api.client.post(f"{API}/schedule/t2/pause")
    answers = [api.client.post(f"{API}/schedule/{sid}/trigger") for sid in ("t1", "t2", "t2")]
    assert [answer.status_code for answer in answers] == [202, 202, 202]
    bodies = [answer.get_json() for answer in answers]
    assert bodies[0]["status"] == "queued"
    occurrence_ids = [body["occurrence_id"] for body in bodies]
    assert len(set(occurrence_ids)) == 3  # two triggers in one millisecond still differ
    for body in bodies:
        schedule_id, kind, *_ = body["occurrence_id"].split(":")
        assert (schedule_id, kind) == (body["id"], "manual")
    messages = api.backends.queues.occurrences.receive(10, 0, 30)
    occurrences: list[Occurrence] = [decode_occurrence(message.body) for message in messages]
    assert sorted(o.occurrence_id for o in occurrences) == sorted(occurrence_ids)
    assert all(o.manual for o in occurrences)
    # Queue 1 got nothing: a trigger changes no schedule.
    assert api.queued() == 0


def test_executions_newest_first_paginated_with_every_detail(api: ApiUnderTest) -> None:
    create(api, "e1")
    api.apply()
    stored = api.backends.store.get_schedule("default", "e1")
    assert stored is not None
    base = api.clock.now()
    store = api.backends.store
    for number in range(5):
        occurrence = Occurrence(
            "default", "e1", stored.revision, base.replace(minute=number), occurrence_id=""
        )
        execution = store.begin_attempt(occurrence, "x", base, base)
        assert execution is not None
        outcome = AttemptOutcome(
            ExecutionStatus.FAILED if number == 4 else ExecutionStatus.SUCCEEDED,
            base,
            answer=Answer(500 if number == 4 else 200),
            duration_ms=12.5,
            error="HTTP 500" if number == 4 else None,
        )
        store.finish_attempt(execution, "x", outcome)
    first = api.client.get(f"{API}/schedule/e1/executions?limit=2").get_json()
    assert [item["scheduled_time"][14:16] for item in first["items"]] == ["04", "03"]
    newest = first["items"][0]
    assert newest["status"] == "failed"
    assert (newest["attempts"], newest["http_status"], newest["error"]) == (1, 500, "HTTP 500")
    assert newest["duration_ms"] == 12.5
    assert "lateness_ms" in newest and newest["manual"] is False
    second = api.client.get(
        f"{API}/schedule/e1/executions?limit=2&cursor={first['next_cursor']}"
    ).get_json()
    third = api.client.get(
        f"{API}/schedule/e1/executions?limit=2&cursor={second['next_cursor']}"
    ).get_json()
    assert [len(page["items"]) for page in (first, second, third)] == [2, 2, 1]
    assert third["next_cursor"] is None
    for query in ("limit=0", "limit=999", "cursor=%25%25", "cursor=cztlMQ", "cursor=ZTp4fHk"):
        response = api.client.get(f"{API}/schedule/e1/executions?{query}")
        assert response.status_code == 400, query
        assert problem_fields(response) in (["limit"], ["cursor"])


# -- idempotent creation ---------------------------------------------------------------------


def test_a_repeated_post_with_an_idempotency_key_creates_nothing_new(api: ApiUnderTest) -> None:
    headers = {"Idempotency-Key": "order-42"}
    first = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert first.status_code == 202
    assert "Idempotent-Replayed" not in first.headers
    again = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert again.status_code == 202
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert again.headers["Location"] == first.headers["Location"]
    assert api.queued() == 1
    # The same body with the keys in another order is the same request.
    reordered = dict(reversed(list(BODY.items())))
    assert api.client.post(f"{API}/schedule", json=reordered, headers=headers).status_code == 202
    assert api.queued() == 1
    # Another body under the same key: a conflict, and nothing enqueued.
    other = api.client.post(f"{API}/schedule", json={**BODY, "name": "x"}, headers=headers)
    assert other.status_code == 409
    assert other.mimetype == "application/problem+json"
    assert api.queued() == 1
    # Without the key, the same body is another schedule.
    assert api.client.post(f"{API}/schedule", json=BODY).get_json()["id"] != first.get_json()["id"]
    api.apply()
    assert len(api.client.get(f"{API}/schedules").get_json()["items"]) == 2


def test_idempotency_keys_on_put_and_their_validation(api: ApiUnderTest) -> None:
    headers = {"Idempotency-Key": "put-1"}
    first = api.client.put(f"{API}/schedule/k1", json=BODY, headers=headers)
    again = api.client.put(f"{API}/schedule/k1", json=BODY, headers=headers)
    assert again.get_json()["revision"] == first.get_json()["revision"]
    assert api.queued() == 1
    # The same key for another path is another request.
    assert api.client.put(f"{API}/schedule/k2", json=BODY, headers=headers).status_code == 409
    for bad in ("", "x" * 256, "has space", "naïve"):
        response = api.client.post(
            f"{API}/schedule",
            json=BODY,
            headers={"Idempotency-Key": bad.encode().decode("latin-1")},
        )
        assert response.status_code == 400, bad
        assert problem_fields(response) == ["Idempotency-Key"]
    # A bad body with a key is a 400 and records nothing: fixed, it goes through.
    broken = {**BODY, "priority": 99}
    key = {"Idempotency-Key": "fix-me"}
    assert api.client.post(f"{API}/schedule", json=broken, headers=key).status_code == 400
    assert api.client.post(f"{API}/schedule", json=BODY, headers=key).status_code == 202


def test_a_failed_enqueue_releases_the_key_for_a_retry(
    api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = api.backends.queues.mutations
    original = queue.send

    def unavailable(*args: Any) -> None:
        raise Transient("queue down")

    monkeypatch.setattr(queue, "send", unavailable)
    headers = {"Idempotency-Key": "retry-me"}
    down = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert down.status_code == 503
    assert down.headers["Retry-After"] == "1"
    monkeypatch.setattr(queue, "send", original)
    retried = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert retried.status_code == 202
    assert "Idempotent-Replayed" not in retried.headers
    assert api.queued() == 1


def test_a_repeat_long_after_a_lost_enqueue_sends_the_same_mutation_again(
    api: ApiUnderTest,
) -> None:
    headers = {"Idempotency-Key": "lost"}
    first = api.client.post(f"{API}/schedule", json=BODY, headers=headers).get_json()
    # The API died after recording the key and before the mutation left: simulate by dropping it.
    [message] = api.backends.queues.mutations.receive(1, 0, 30)
    api.backends.queues.mutations.delete([message.receipt_handle])
    assert api.client.post(f"{API}/schedule", json=BODY, headers=headers).status_code == 202
    assert api.queued() == 0  # too soon to tell a lost mutation from a slow processor
    api.clock.advance(31)
    again = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert again.get_json() == first
    assert api.queued() == 1
    api.apply()
    stored = api.client.get(f"{API}/schedule/{first['id']}").get_json()
    assert stored["revision"] == first["revision"]
    # Once stored, repeats send nothing more.
    api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert api.queued() == 0


# -- quotas ----------------------------------------------------------------------------------


def test_a_tenant_over_its_quota_is_refused_with_403(tmp_path: Path) -> None:
    with api_under_test(tmp_path, tenant_schedule_quota=2) as api:
        create(api, "q1")
        create(api, "q2")
        api.apply()
        refused = api.client.post(f"{API}/schedule", json=BODY)
        assert refused.status_code == 403
        assert refused.mimetype == "application/problem+json"
        assert "quota is 2" in refused.get_json()["detail"]
        assert api.queued() == 0
        # Replacing a live schedule does not add one; a paused one still counts.
        assert api.client.put(f"{API}/schedule/q1", json=BODY).status_code == 202
        api.client.post(f"{API}/schedule/q2/pause")
        assert api.client.put(f"{API}/schedule/q3", json=BODY).status_code == 403
        api.client.delete(f"{API}/schedule/q2")
        assert api.client.put(f"{API}/schedule/q3", json=BODY).status_code == 202


# -- secrets and limits ------------------------------------------------------------------


def test_secret_headers_and_query_values_are_masked_by_configurable_patterns(
    tmp_path: Path,
) -> None:
    with api_under_test(tmp_path, secret_headers=("authorization", "*-token", "x-tenant")) as api:
        payload = {
            **BODY["payload"],
            "headers": {
                "Authorization": "Basic abc",
                "X-Auth-Token": "t0k",
                "X-Tenant": "acme",
                "X-Visible": "yes",
            },
            "queryParameters": {"x-tenant": "acme", "page": "2"},
            "url": "https://hooks.example.com/run?x-tenant=acme&page=2&x-auth-token=t0k",
        }
        create(api, "m1", payload=payload)
        api.apply()
        view = api.client.get(f"{API}/schedule/m1").get_json()["payload"]
        assert view["headers"] == {
            "Authorization": "********",
            "X-Auth-Token": "********",
            "X-Tenant": "********",
            "X-Visible": "yes",
        }
        assert view["queryParameters"] == {"x-tenant": "********", "page": "2"}
        assert view["url"] == (
            "https://hooks.example.com/run?x-tenant=********&page=2&x-auth-token=********"
        )
        # The stored value is the real one: only the call uses it.
        stored = api.backends.store.get_schedule("default", "m1")
        assert stored is not None
        assert stored.live_definition.payload.headers["X-Auth-Token"] == "t0k"


def default_masks(api: ApiUnderTest) -> None:
    headers = {
        "Authorization": "a",
        "Proxy-Authorization": "b",
        "Cookie": "c",
        "X-Api-Key": "d",
        "X-Access-Token": "e",
        "X-Client-Secret": "f",
        "X-Request-Id": "visible",
    }
    create(api, "m2", payload={**BODY["payload"], "headers": headers})
    api.apply()
    shown = api.client.get(f"{API}/schedule/m2").get_json()["payload"]["headers"]
    assert {name for name, value in shown.items() if value != "********"} == {"X-Request-Id"}


def test_the_default_patterns_mask_the_usual_secrets(api: ApiUnderTest) -> None:
    default_masks(api)


@pytest.mark.parametrize(
    ("payload_change", "field"),
    [
        ({"headers": {f"X-H{n}": "v" for n in range(51)}}, "payload.headers"),
        ({"headers": {"X-Big": "v" * 8193}}, "payload.headers"),
        ({"headers": {"X-Nul": "a\u0000b"}}, "payload.headers"),
        ({"headers": {"X-Uni": "caf\u00e9 \u2603"}}, "payload.headers"),
        ({"headers": {"X-Num": 5}}, "payload.headers"),
        ({"url": "https://example.com/" + "a" * 2048}, "payload.url"),
        ({"url": "http://exa mple.com/"}, "payload.url"),
        ({"url": "http://[::1"}, "payload.url"),
        ({"url": "http://example.com:99999/"}, "payload.url"),
        ({"url": "http://user:pw@example.com/"}, "payload.url"),
        ({"queryParameters": {f"p{n}": "v" for n in range(101)}}, "payload.queryParameters"),
        ({"queryParameters": {"p": "v" * 2049}}, "payload.queryParameters"),
    ],
)
def test_payload_limits_are_400_naming_the_field(
    api: ApiUnderTest, payload_change: dict[str, Any], field: str
) -> None:
    body = {**BODY, "payload": {**BODY["payload"], **payload_change}}
    response = api.client.post(f"{API}/schedule", json=body)
    assert response.status_code == 400, response.get_json()
    assert field in problem_fields(response)
    assert api.queued() == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "n" * 201}, "name"),
        ({"description": "d" * 2001}, "description"),
        ({"tags": ["t" * 101]}, "tags.0"),
        ({"tags": [f"t{n}" for n in range(51)]}, "tags"),
        ({"metadata": {"blob": "x" * 17000}}, "metadata"),
        ({"id": "i" * 129}, "id"),
        ({"id": "has:colon"}, "id"),
    ],
)
def test_string_and_size_limits_are_400_naming_the_field(
    api: ApiUnderTest, change: dict[str, Any], field: str
) -> None:
    response = api.client.post(f"{API}/schedule", json={**BODY, **change})
    assert response.status_code == 400, response.get_json()
    assert field in problem_fields(response)


def test_a_body_over_the_limit_is_413_even_without_a_content_length(api: ApiUnderTest) -> None:
    big = b'{"name": "' + b"x" * 300_000 + b'"}'
    response = api.client.post(
        f"{API}/schedule",
        input_stream=io.BytesIO(big),
        headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert response.status_code == 413
    assert response.mimetype == "application/problem+json"


# -- the OpenAPI document ------------------------------------------------------------------


def test_the_served_spec_declares_every_operation_and_its_errors(api: ApiUnderTest) -> None:
    spec = api.client.get("/openapi.json").get_json()
    operations = {
        (method.upper(), path.removeprefix(API))
        for path, item in spec["paths"].items()
        for method in item
        if method != "parameters"
    }
    expected = {
        ("POST", "/schedule"),
        ("GET", "/schedules"),
        ("GET", "/schedule/{schedule_id}"),
        ("PUT", "/schedule/{schedule_id}"),
        ("DELETE", "/schedule/{schedule_id}"),
        ("POST", "/schedule/{schedule_id}/pause"),
        ("POST", "/schedule/{schedule_id}/resume"),
        ("POST", "/schedule/{schedule_id}/trigger"),
        ("GET", "/schedule/{schedule_id}/executions"),
        ("POST", "/schedule/preview"),
    }
    assert expected <= operations
    create_op = spec["paths"][f"{API}/schedule"]["post"]
    assert {"202", "400", "401", "403", "409", "413", "415"} <= set(create_op["responses"])
    assert "application/problem+json" in create_op["responses"]["409"]["content"]
    assert [p["name"] for p in create_op["parameters"]] == [
        "Idempotency-Key",
        "traceparent",
        "tracestate",
    ]
    assert set(spec["components"]["securitySchemes"]) == {"ApiKey", "Bearer"}
    assert api.client.get("/docs").status_code == 200


def test_the_served_spec_says_what_a_priority_is(api: ApiUnderTest) -> None:
    priority = api.client.get("/openapi.json").get_json()["components"]["schemas"]["ScheduleBody"][
        "properties"
    ]["priority"]
    assert (priority["minimum"], priority["maximum"], priority["default"]) == (0, 9, 5)
    assert "the higher goes first" in priority["description"]


def test_a_create_that_could_not_be_sent_gives_its_quota_slot_back(tmp_path: Path) -> None:
    with api_under_test(tmp_path, tenant_schedule_quota=1) as api:
        mutations = api.backends.queues.mutations
        send = mutations.send

        def unavailable(messages: Any) -> None:
            raise Transient("queue 1 is down")

        mutations.send = unavailable  # type: ignore[method-assign]
        assert api.client.post(f"{API}/schedule", json=BODY).status_code == 503
        mutations.send = send  # type: ignore[method-assign]
        assert api.client.post(f"{API}/schedule", json=BODY).status_code == 202
        assert api.client.post(f"{API}/schedule", json=BODY).status_code == 403


def test_repeats_of_an_idempotent_create_take_one_quota_slot(tmp_path: Path) -> None:
    with api_under_test(tmp_path, tenant_schedule_quota=2) as api:
        for _ in range(3):
            repeat = api.client.post(f"{API}/schedule", json=BODY, headers={"Idempotency-Key": "k"})
            assert repeat.status_code == 202
        assert api.client.post(f"{API}/schedule", json=BODY).status_code == 202
        assert api.client.post(f"{API}/schedule", json=BODY).status_code == 403
