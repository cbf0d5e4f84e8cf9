"""Odd input anywhere is a 4xx naming the field, never a 500: a sweep over every field of the body
with wrong JSON types, huge strings, unicode and nulls, plus odd JSON, paths and query strings."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

BODY: dict[str, Any] = {
    "id": "sweep-1",
    "name": "sweep",
    "description": "every field, every odd value",
    "type": "API",
    "schedule": {
        "interval": {"number": 5, "unit": "minute"},
        "timezone": "Europe/Paris",
        "start": "2027-01-01T09:00:00",
        "end": "2028-01-01T09:00:00",
        "max_occurrences": 10,
    },
    "payload": {
        "method": "POST",
        "url": "https://hooks.example.com/run",
        "headers": {"X-A": "b"},
        "queryParameters": {"q": "1"},
        "body": {"k": "v"},
        "timeout_seconds": 5,
    },
    "metadata": {"team": "x"},
    "tags": ["a"],
    "priority": 3,
    "retry": {"max_attempts": 3, "backoff_seconds": 1, "max_backoff_seconds": 30},
    "misfire": {"policy": "skip", "grace_seconds": 60},
}
SEED_SCHEDULE = {
    "start_date": "05/02/2027",
    "end_date": "05/04/2027",
    "timeZone": "Asia/Calcutta",
    "time_of_day": "11:53",
    "am_pm": "AM",
    "repeat_interval": {"number": 2, "unit": "minute"},
}
ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    1.5,
    10**30,
    "",
    "x" * 100_000,
    "\u00e9\u2603\U0001f600 \u202e",
    "\x00",
    [],
    [None],
    {},
    {"nested": {"deeper": [1, {"x": None}]}},
]
# Values a field may take as they are (metadata and body take any JSON).
FREE = {"payload.body", "metadata"}


def paths(document: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for name, value in document.items():
        path = f"{prefix}{name}"
        yield path
        if isinstance(value, dict) and path not in FREE:
            yield from paths(value, path + ".")


def replaced(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(document))
    *parents, last = path.split(".")
    target = copy
    for name in parents:
        target = target[name]
    target[last] = value
    return copy


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path_factory.mktemp("sweep")) as under_test:
        yield under_test


def assert_clean(response: Any, context: Any) -> None:
    assert response.status_code < 500, (context, response.get_data(as_text=True)[:500])
    if response.status_code >= 400:
        assert response.mimetype == "application/problem+json", context
        problem = response.get_json()
        assert problem["status"] == response.status_code
        if response.status_code == 400:
            assert problem["errors"], context
            assert all(error["field"] for error in problem["errors"]), context


def test_the_reference_bodies_are_valid(api: ApiUnderTest) -> None:
    assert api.client.post(f"{API}/schedule", json=BODY).status_code == 202
    seed = {**BODY, "id": "sweep-seed", "schedule": SEED_SCHEDULE}
    assert api.client.post(f"{API}/schedule", json=seed).status_code == 202


@pytest.mark.parametrize(
    "path",
    [
        *paths(BODY),
        *(f"schedule.{name}" for name in SEED_SCHEDULE),
        "schedule.cron",
        "schedule.rrule",
        "schedule.at",
    ],
)
def test_every_field_with_every_odd_value_is_4xx_naming_it(api: ApiUnderTest, path: str) -> None:
    base = BODY
    if path.startswith("schedule.") and path.split(".")[1] in SEED_SCHEDULE:
        base = {**BODY, "schedule": SEED_SCHEDULE}
    elif path in ("schedule.cron", "schedule.rrule", "schedule.at"):
        base = {**BODY, "schedule": {"timezone": "UTC", path.split(".")[1]: "placeholder"}}
    for value in ODD_VALUES:
        body = replaced(base, path, value)
        response = api.client.post(f"{API}/schedule", json=body)
        assert_clean(response, (path, repr(value)[:60]))
        if response.status_code == 400:
            named = [error["field"] for error in response.get_json()["errors"]]
            top = path.split(".")[0]
            assert any(
                field == path or field.startswith(top) or path.startswith(field) for field in named
            ), (path, repr(value)[:60], named)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"null",
        b"[]",
        b'"a string"',
        b"12",
        b"{",
        b'{"name": NaN}',
        b'{"payload": {"timeout_seconds": Infinity}}',
        b'{"payload": {"timeout_seconds": 1e999}}',
        b'{"name": "\\ud800"}',
        b'{"\\udc00": 1}',
        b"\xff\xfe{}",
        b"[" * 50_000 + b"]" * 50_000,
        b'{"a": ' * 20_000 + b"1" + b"}" * 20_000,
        b'{"priority": ' + b"9" * 5000 + b"}",
        b'{"name": "x", "name": "y"}',
    ],
)
def test_odd_json_is_4xx(api: ApiUnderTest, raw: bytes) -> None:
    for method, path in (
        ("POST", "/schedule"),
        ("PUT", "/schedule/odd"),
        ("POST", "/schedule/preview"),
    ):
        response = api.client.open(
            f"{API}{path}", method=method, data=raw, content_type="application/json"
        )
        assert_clean(response, (path, raw[:40]))
        assert response.status_code in (400, 413), (path, raw[:40], response.status_code)


@pytest.mark.parametrize(
    "schedule_id",
    [
        "x" * 129,
        "x" * 5000,
        "\u00e9t\u00e9",
        "a b",
        "a:b",
        "..",
        "-leading",
        "\U0001f600",
        "%00",
        "null",
        "preview",
    ],
)
def test_odd_ids_in_paths_are_4xx_or_clean(api: ApiUnderTest, schedule_id: str) -> None:
    base = f"{API}/schedule/{quote(schedule_id, safe='')}"
    for method, path in (
        ("GET", base),
        ("PUT", base),
        ("DELETE", base),
        ("POST", f"{base}/pause"),
        ("POST", f"{base}/resume"),
        ("POST", f"{base}/trigger"),
        ("GET", f"{base}/executions"),
    ):
        response = api.client.open(path, method=method, json=BODY | {"id": None})
        assert_clean(response, (method, path))


def id_routes(schedule_id: str) -> list[tuple[str, str, Any]]:
    """Every route that names a schedule, with a body it would take."""
    base = f"{API}/schedule/{quote(schedule_id, safe='')}"
    past = {"from": "2025-01-01T00:00:00Z", "to": "2025-01-01T01:00:00Z"}
    return [
        ("GET", base, None),
        ("PUT", base, {key: value for key, value in BODY.items() if key != "id"}),
        ("PATCH", base, {"name": "renamed"}),
        ("DELETE", base, None),
        ("POST", f"{base}/pause", None),
        ("POST", f"{base}/resume", None),
        ("POST", f"{base}/trigger", None),
        ("GET", f"{base}/executions", None),
        ("POST", f"{base}/backfill", past),
    ]


@pytest.mark.parametrize("schedule_id", ["x" * 129, "a b", "a:b", "-leading", "\u00e9t\u00e9"])
def test_an_id_no_schedule_can_have_is_400_naming_id_on_every_route(
    api: ApiUnderTest, schedule_id: str
) -> None:
    queued = api.queued()
    for method, path, body in id_routes(schedule_id):
        response = api.client.open(path, method=method, json=body)
        assert response.status_code == 400, (method, path, response.get_json())
        assert [error["field"] for error in response.get_json()["errors"]] == ["id"], path
    assert api.queued() == queued


def test_a_well_formed_unknown_id_stays_404(api: ApiUnderTest) -> None:
    for method, path, body in id_routes("never-was"):
        if method != "PUT":  # a PUT creates it
            response = api.client.open(path, method=method, json=body)
            assert response.status_code == 404, (method, path, response.get_json())


def test_the_openapi_document_lists_the_400_of_every_route_naming_a_schedule(
    api: ApiUnderTest,
) -> None:
    paths = api.client.get("/openapi.json").get_json()["paths"]
    for method, path, _ in id_routes("{schedule_id}"):
        operation = paths[path.replace("%7B", "{").replace("%7D", "}")][method.lower()]
        expected = {"400"} if method == "PUT" else {"400", "404"}
        assert expected <= set(operation["responses"]), (method, path)


@pytest.mark.parametrize(
    "query",
    [
        "limit=-1",
        "limit=1e3",
        "limit=99999999999999999999999",
        "status=%00",
        "name=%FF%FE",
        "tag=" + "t" * 5000,
        "next_after=2026-13-45T99:99:99Z",
        "next_after=99999-01-01T00:00:00Z",
        "next_before=0001-01-01T00:00:00%2B14:00",
        "cursor=" + "A" * 2000,
        "cursor=%E2%98%83",
        "cursor=czo",
        "limit=5&limit=6",
    ],
)
def test_odd_query_strings_are_4xx_or_clean(api: ApiUnderTest, query: str) -> None:
    for path in ("/schedules", "/schedule/sweep-1/executions"):
        assert_clean(api.client.get(f"{API}{path}?{query}"), (path, query))
