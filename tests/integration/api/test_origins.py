"""A web page a developer visits must not drive their scheduler (issue 22 item 5): cross-site
requests by their ``Origin``, DNS rebinding by their ``Host`` (``scheduler_service.origins``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

BODY: dict[str, Any] = {
    "name": "target",
    "schedule": {"cron": "0 9 * * *"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
}
KEY = "sk_acme_0123456789abcdef"


@pytest.fixture
def keyless(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="none") as api:
        assert api.client.put(f"{API}/schedule/target", json=BODY).status_code == 202
        api.apply()
        yield api


def test_a_cross_site_request_without_a_key_is_refused_and_changes_nothing(
    keyless: ApiUnderTest,
) -> None:
    for method, path in (
        ("POST", "/schedule/target/pause"),
        ("POST", "/schedule/target/trigger"),
        ("DELETE", "/schedule/target"),
        ("POST", "/dead-letters/target:2026-01-01T00:00:00.000Z/replay"),
        ("PUT", "/schedule/other"),
    ):
        for origin in ("http://evil.example", "http://localhost:9999", "null"):
            answer = keyless.client.open(
                f"{API}{path}", method=method, headers={"Origin": origin}, json=BODY
            )
            assert answer.status_code == 403, (method, path, origin)
            assert answer.mimetype == "application/problem+json"
            assert origin in answer.get_json()["detail"]
    assert keyless.queued() == 0 and keyless.occurrences_queued() == 0
    assert keyless.client.get(f"{API}/schedule/target").get_json()["status"] == "active"


def test_requests_of_its_own_pages_and_without_an_origin_are_served(
    keyless: ApiUnderTest,
) -> None:
    own = {"Origin": "http://localhost"}  # the test client's Host
    assert keyless.client.post(f"{API}/schedule/target/pause", headers=own).status_code == 202
    assert keyless.client.post(f"{API}/schedule/target/resume").status_code == 202
    # A page may read (a GET is not an unsafe method); without CORS it cannot see the answer.
    answer = keyless.client.get(f"{API}/schedule/target", headers={"Origin": "http://evil.example"})
    assert answer.status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io"]
)
def test_a_host_the_server_does_not_answer_for_is_421_on_every_path(
    keyless: ApiUnderTest, host: str
) -> None:
    # DNS rebinding: the page is same-origin with its own name, which now resolves to us.
    for method, path in (
        ("GET", f"{API}/schedule/target"),
        ("GET", f"{API}/schedules"),
        ("POST", f"{API}/schedule/target/pause"),
        ("GET", "/console/"),
        ("GET", "/metrics"),
    ):
        answer = keyless.client.open(
            path, method=method, headers={"Host": host, "Origin": f"http://{host}"}
        )
        assert answer.status_code == 421, (method, path)
        assert host in answer.get_json()["detail"]
    assert keyless.client.get(f"{API}/schedule/target").get_json()["status"] == "active"


@pytest.mark.parametrize(
    "host", ["localhost:8080", "127.0.0.1:8080", "[::1]:8080", "10.1.2.3:8080", "LOCALHOST"]
)
def test_ip_addresses_and_localhost_are_answered(keyless: ApiUnderTest, host: str) -> None:
    answer = keyless.client.get(f"{API}/schedule/target", headers={"Host": host})
    assert answer.status_code == 200


def test_allowed_hosts_name_more_and_then_apply_with_keys_too(tmp_path: Path) -> None:
    with api_under_test(tmp_path, api_auth="none", allowed_hosts=("scheduler.example.com",)) as api:
        named = {"Host": "scheduler.example.com"}
        assert api.client.get(f"{API}/schedules", headers=named).status_code == 200
        assert api.client.get(f"{API}/schedules", headers={"Host": "x.example"}).status_code == 421
    with api_under_test(tmp_path / "keys", api_auth="keys", api_keys=(f"acme:{KEY}",)) as api:
        # With keys and no list, any name: a rebinding page has no key.
        headers = {"X-API-Key": KEY, "Host": "scheduler.internal"}
        assert api.client.get(f"{API}/schedules", headers=headers).status_code == 200
        # The Origin check holds whatever the auth.
        headers["Origin"] = "http://evil.example"
        assert api.client.put(f"{API}/schedule/a", headers=headers, json=BODY).status_code == 403
    with api_under_test(
        tmp_path / "both", api_auth="keys", api_keys=(f"acme:{KEY}",), allowed_hosts=("a.b",)
    ) as api:
        headers = {"X-API-Key": KEY, "Host": "scheduler.internal"}
        assert api.client.get(f"{API}/schedules", headers=headers).status_code == 421
        assert api.client.get(f"{API}/schedules", headers={"X-API-Key": KEY}).status_code == 200
