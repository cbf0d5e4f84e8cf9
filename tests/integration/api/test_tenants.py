"""API keys and tenants: every endpoint, tried across two tenants, shows nothing of the other."""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_cli import keys
from scheduler_service import auth
from scheduler_service.app import create_app
from shared.backends import open_backends
from shared.logs import JsonFormatter
from shared.ports import ApiKey, ScheduleFilter
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver

ACME_KEY = "sk_acme_0123456789abcdef"
GLOBEX_KEY = "sk_globex_0123456789abcdef"
STORED_KEY = "sk_stored_0123456789abcdef"
KEYS = (f"acme:{ACME_KEY}", f"globex:sha256:{hashlib.sha256(GLOBEX_KEY.encode()).hexdigest()}")

BODY: dict[str, Any] = {
    "name": "nightly",
    "schedule": {"cron": "0 2 * * *"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
    "tags": ["t"],
}


def as_acme() -> dict[str, str]:
    return {"X-API-Key": ACME_KEY}


def as_globex() -> dict[str, str]:
    return {"Authorization": f"Bearer {GLOBEX_KEY}"}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def test_every_endpoint_is_scoped_to_the_callers_tenant(api: ApiUnderTest) -> None:
    client = api.client
    assert client.put(f"{API}/schedule/acme-only", json=BODY, headers=as_acme()).status_code == 202
    assert client.put(f"{API}/schedule/shared", json=BODY, headers=as_acme()).status_code == 202
    globex_body = {**BODY, "name": "globex's"}
    assert (
        client.put(f"{API}/schedule/shared", json=globex_body, headers=as_globex()).status_code
        == 202
    )
    api.apply()
    client.post(f"{API}/schedule/acme-only/trigger", headers=as_acme())

    # Globex tries every endpoint on acme's schedule: 404 each time, and nothing changes.
    other = f"{API}/schedule/acme-only"
    attempts = [
        client.get(other, headers=as_globex()),
        client.delete(other, headers=as_globex()),
        client.post(f"{other}/pause", headers=as_globex()),
        client.post(f"{other}/resume", headers=as_globex()),
        client.post(f"{other}/trigger", headers=as_globex()),
        client.get(f"{other}/executions", headers=as_globex()),
        client.get(f"{other}/changes", headers=as_globex()),
    ]
    assert [response.status_code for response in attempts] == [404] * 7
    assert all(r.mimetype == "application/problem+json" for r in attempts)
    listed = client.get(f"{API}/schedules", headers=as_globex()).get_json()["items"]
    assert [(item["id"], item["name"]) for item in listed] == [("shared", "globex's")]
    for query in ("tag=t", "name=nightly", "status=active"):
        found = client.get(f"{API}/schedules?{query}", headers=as_globex()).get_json()["items"]
        assert "acme-only" not in [item["id"] for item in found]
    # Acme's schedule is untouched: active, one trigger queued (acme's own).
    mine = client.get(other, headers=as_acme()).get_json()
    assert mine["status"] == "active"
    assert api.occurrences_queued() == 1
    # The same id in two tenants is two schedules; each changes only its own.
    client.post(f"{API}/schedule/shared/pause", headers=as_globex())
    assert client.get(f"{API}/schedule/shared", headers=as_acme()).get_json()["status"] == "active"
    client.delete(f"{API}/schedule/shared", headers=as_acme())
    assert client.get(f"{API}/schedule/shared", headers=as_globex()).status_code == 200
    # A cursor from one tenant's pages reads only the other's own schedules.
    page = client.get(f"{API}/schedules?limit=1", headers=as_acme()).get_json()
    assert [item["id"] for item in page["items"]] == ["acme-only"]
    # Idempotency keys are per tenant: the same key creates one schedule in each.
    key = {"Idempotency-Key": "same-key"}
    first = client.post(f"{API}/schedule", json=BODY, headers={**as_acme(), **key})
    second = client.post(f"{API}/schedule", json=BODY, headers={**as_globex(), **key})
    assert first.status_code == second.status_code == 202
    assert "Idempotent-Replayed" not in second.headers
    assert first.get_json()["id"] != second.get_json()["id"]


def test_quotas_count_each_tenant_alone(tmp_path: Path) -> None:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS, tenant_schedule_quota=1) as api:
        assert api.client.put(f"{API}/schedule/a", json=BODY, headers=as_acme()).status_code == 202
        api.apply()
        assert api.client.put(f"{API}/schedule/b", json=BODY, headers=as_acme()).status_code == 403
        assert (
            api.client.put(f"{API}/schedule/b", json=BODY, headers=as_globex()).status_code == 202
        )


def test_requests_without_a_valid_key_are_401(api: ApiUnderTest) -> None:
    for headers in (
        {},
        {"X-API-Key": "sk_wrong_0123456789"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Basic {ACME_KEY}"},
        {"X-API-Key": "k" * 5000},
    ):
        for method, path in (("GET", "/schedules"), ("POST", "/schedule"), ("GET", "/schedule/x")):
            response = api.client.open(f"{API}{path}", method=method, json=BODY, headers=headers)
            assert response.status_code == 401, (headers, path)
            assert response.mimetype == "application/problem+json"
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert api.queued() == 0
    # Health and the spec need no key.
    assert api.client.get("/healthz").status_code == 200
    assert api.client.get("/openapi.json").status_code == 200


def test_keys_stored_hashed_in_the_store_are_accepted(api: ApiUnderTest) -> None:
    digest = auth.hash_key(STORED_KEY)
    api.backends.store.add_api_key(ApiKey(digest, "initech", "ci", api.clock.now()))
    headers = {"X-API-Key": STORED_KEY}
    assert api.client.put(f"{API}/schedule/i1", json=BODY, headers=headers).status_code == 202
    api.apply()
    assert api.backends.store.get_schedule("initech", "i1") is not None
    assert STORED_KEY not in str(api.backends.store.list_api_keys())
    api.backends.store.delete_api_key(digest[:12])
    assert api.client.get(f"{API}/schedule/i1", headers=headers).status_code == 401


def test_auto_mode_is_open_until_a_key_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "AUTO_RECHECK_SECONDS", 0.0)
    with api_under_test(tmp_path, api_auth="auto") as api:
        assert api.client.put(f"{API}/schedule/d1", json=BODY).status_code == 202
        api.apply()
        assert api.backends.store.get_schedule("default", "d1") is not None
        digest = auth.hash_key(STORED_KEY)
        api.backends.store.add_api_key(ApiKey(digest, "initech", "", api.clock.now()))
        assert api.client.get(f"{API}/schedule/d1").status_code == 401
        assert (
            api.client.get(f"{API}/schedules", headers={"X-API-Key": STORED_KEY}).status_code == 200
        )


def test_without_keys_everyone_is_the_default_tenant(tmp_path: Path) -> None:
    with api_under_test(tmp_path, api_auth="none", default_tenant="solo") as api:
        assert api.client.put(f"{API}/schedule/s1", json=BODY).status_code == 202
        # A key, even a made-up one, changes nothing when keys are off.
        headers = {"X-API-Key": "anything-at-all-123"}
        assert api.client.put(f"{API}/schedule/s2", json=BODY, headers=headers).status_code == 202
        api.apply()
        listed = api.backends.store.list_schedules("solo", ScheduleFilter(), 10, None)
        assert {schedule.schedule_id for schedule in listed.items} == {"s1", "s2"}


def test_secret_header_values_never_reach_the_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret, token = "Bearer sup3r-s3cret-value", "tok-9f8e7d6c"
    caplog.set_level(logging.DEBUG)
    with running_receiver(lambda call: (503, {})) as receiver:
        settings = sqlite_settings(tmp_path)
        with running_pipeline(settings) as pipeline:
            body = {
                "name": "leaky?",
                "schedule": {"at": "2020-01-01T00:00:00Z", "fire_if_past": True},
                "payload": {
                    "method": "POST",
                    "url": f"{receiver.url}/hook",
                    "headers": {"Authorization": secret, "X-Api-Token": token},
                    "timeout_seconds": 2,
                },
                "retry": {"max_attempts": 2, "backoff_seconds": 0.05},
            }
            answer = pipeline.client.post(f"{API}/schedule", json=body).get_json()
            calls = receiver.wait_for(2, 10)
            assert len(calls) == 2
            assert calls[0].headers["authorization"] == secret  # the call uses the real value
            shown = pipeline.client.get(f"{API}/schedule/{answer['id']}").get_json()
            assert secret not in str(shown) and token not in str(shown)
            # A bad header value is refused without echoing it.
            bad = {**body, "payload": {**body["payload"], "headers": {"X-Key": secret + "\n"}}}
            refused = pipeline.client.post(f"{API}/schedule", json=bad)
            assert refused.status_code == 400
            assert secret not in refused.get_data(as_text=True)
    formatter = JsonFormatter()
    logged = "\n".join(formatter.format(record) for record in caplog.records)
    assert "occurrence_failed" in logged or "occurrence_retrying" in logged
    assert secret not in logged and "sup3r" not in logged
    assert token not in logged


def test_create_app_says_how_it_authenticates(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    settings = sqlite_settings(tmp_path, api_auth="none")
    backends = open_backends(settings)
    try:
        create_app(settings, backends)
    finally:
        backends.close()
    assert "no API key needed" in caplog.text


def test_scheduler_keys_create_list_revoke(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, api_auth="keys")
    open_backends(settings).close()  # the API's database: keys are never put in a new one

    def run(*argv: str) -> tuple[int, str]:
        parser = argparse.ArgumentParser()
        keys.add_commands(parser.add_subparsers(dest="command"))
        out = io.StringIO()
        return keys.run(parser.parse_args(["keys", *argv]), settings, out), out.getvalue()

    status, created = run("create", "initech", "--name", "ci")
    assert status == 0
    key = created.split("key: ")[1].split()[0]
    key_id = created.split("id: ")[1].split()[0]
    status, listed = run("list")
    assert key_id in listed and "initech" in listed and key not in listed
    backends = open_backends(settings)
    try:
        client = create_app(settings, backends).test_client()
        assert client.get(f"{API}/schedules", headers={"X-API-Key": key}).status_code == 200
        assert run("revoke", key_id) == (0, "revoked 1 key(s)\n")
        assert client.get(f"{API}/schedules", headers={"X-API-Key": key}).status_code == 401
    finally:
        backends.close()
    assert run("revoke", key_id)[0] == 1
    assert run("create", "bad tenant!")[0] == 2
    status, printed = run("create", "acme", "--print-only")
    assert status == 0 and "SCHEDULER_API_KEYS entry: acme/admin:sha256:" in printed
