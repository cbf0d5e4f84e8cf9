"""Scoped keys (issue 28 item 5): every route of the API and the console declares the role it
needs; a key below it gets a 403 naming that role, before anything else of the request is read;
the OpenAPI document shows each operation's role; the console shows only what the key may do;
``scheduler keys create --role`` makes keys of each role."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.routing import Rule
from werkzeug.routing.converters import AnyConverter

from scheduler_cli import keys
from scheduler_client import Forbidden, SchedulerClient
from scheduler_service.app import PUBLIC_PATHS
from scheduler_service.roles import declared_role
from shared.ports import Role
from shared.settings import Settings, key_entry
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API
from tests.support.serving import serving

KEY = {role: f"sk_{role.value}_0123456789abcdef" for role in Role}
OTHER_TENANT_KEY = "sk_globex_write_0123456789abcdef"
KEYS = (
    *(f"acme/{role.value}:{key}" for role, key in KEY.items()),
    f"globex/write:{OTHER_TENANT_KEY}",
)
BODY: dict[str, Any] = {
    "name": "nightly",
    "schedule": {"cron": "0 2 * * *"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/n"},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def checked_routes(app: Flask) -> Iterator[tuple[Rule, str]]:
    """Every rule of the URL map and method a key is checked for: all but static files, the
    public paths (probes, metrics, documentation) and the console's login."""
    for rule in app.url_map.iter_rules():
        if rule.endpoint in ("static", "console.static", "console.login"):
            continue
        if rule.rule in PUBLIC_PATHS or rule.rule.startswith("/docs"):
            continue
        for method in sorted(rule.methods or ()):
            if method not in ("HEAD", "OPTIONS"):
                yield rule, method


def url_of(rule: Rule) -> str:
    """A URL the rule matches: its parameters filled in (with a value ``any`` allows)."""
    values = {}
    for name in rule.arguments:
        converter = rule._converters[name]
        values[name] = sorted(converter.items)[0] if isinstance(converter, AnyConverter) else "x-1"
    _, path = rule.build(values)
    return path


def console_client(api: ApiUnderTest, key: str) -> FlaskClient:
    client = api.app.test_client()
    signed_in = client.post("/console/login", data={"api_key": key, "next": "/console/"})
    assert signed_in.status_code == 303
    return client


def test_every_route_declares_its_role_and_refuses_a_lesser_key_naming_it(
    api: ApiUnderTest,
) -> None:
    routes = list(checked_routes(api.app))
    assert len(routes) > 30  # the API's and the console's
    undeclared = [
        (rule.rule, method)
        for rule, method in routes
        if declared_role(api.app, rule.endpoint, method) is None
    ]
    assert undeclared == []
    refused_by_role: dict[Role, set[Role]] = {role: set() for role in Role}
    for held in (Role.READ, Role.WRITE):
        api_headers = {"X-API-Key": KEY[held]}
        for rule, method in routes:
            needed = declared_role(api.app, rule.endpoint, method)
            assert needed is not None
            url = url_of(rule)
            if rule.endpoint.startswith("console."):
                # Signed in anew for each: the walk passes /console/logout too.
                console = console_client(api, KEY[held])
                answer = console.open(url, method=method, data={})
                text = answer.get_data(as_text=True)
            else:
                answer = api.client.open(url, method=method, headers=api_headers, json={})
                text = answer.get_data(as_text=True)
            # Signed in, the key known: what follows is the role's doing.
            assert answer.status_code != 401, (held, method, url)
            if rule.endpoint != "console.logout":  # which sends to the login page
                assert "/console/login" not in answer.headers.get("Location", ""), (held, url)
            if held.grants(needed):
                assert answer.status_code != 403, (held, method, url, text)
                continue
            refused_by_role[held].add(needed)
            assert answer.status_code == 403, (held, method, url)
            assert f"role {needed.value}" in text, (held, method, url, text)
            if not rule.endpoint.startswith("console."):
                problem = answer.get_json()
                assert answer.mimetype == "application/problem+json"
                assert problem["required_role"] == needed.value, (method, url)
    # What is not a route is a 404 for every role, in the API and the console.
    reader = {"X-API-Key": KEY[Role.READ]}
    assert api.client.post(f"{API}/nowhere", headers=reader).status_code == 404
    assert console_client(api, KEY[Role.READ]).get("/console/nowhere").status_code == 404
    # Read keys meet refusals for write and admin, write keys only for admin.
    assert refused_by_role[Role.READ] == {Role.WRITE, Role.ADMIN}
    assert refused_by_role[Role.WRITE] == {Role.ADMIN}


def test_an_admin_key_is_refused_nothing(api: ApiUnderTest) -> None:
    for rule, method in checked_routes(api.app):
        url = url_of(rule)
        if rule.endpoint.startswith("console."):
            answer = console_client(api, KEY[Role.ADMIN]).open(url, method=method, data={})
        else:
            headers = {"X-API-Key": KEY[Role.ADMIN]}
            answer = api.client.open(url, method=method, headers=headers, json={})
        assert answer.status_code != 403, (method, url)


def test_a_refused_request_changes_nothing_and_its_body_is_not_read(api: ApiUnderTest) -> None:
    reader = {"X-API-Key": KEY[Role.READ]}
    writer = {"X-API-Key": KEY[Role.WRITE]}
    assert api.client.put(f"{API}/schedule/nightly", json=BODY, headers=writer).status_code == 202
    api.apply()
    # A read key with a bad body: the role is what it hears about, not the body.
    refused = api.client.put(f"{API}/schedule/nightly", data="{not json", headers=reader)
    assert refused.status_code == 403 and refused.get_json()["required_role"] == "write"
    assert api.client.delete(f"{API}/schedule/nightly", headers=reader).status_code == 403
    assert api.client.post(f"{API}/schedule/nightly/pause", headers=reader).status_code == 403
    api.apply()
    stored = api.client.get(f"{API}/schedule/nightly", headers=reader)
    assert stored.status_code == 200 and stored.get_json()["status"] == "active"
    assert api.client.get(f"{API}/schedules", headers=reader).get_json()["items"][0]["id"] == (
        "nightly"
    )
    rotate = api.client.post(f"{API}/signing-secrets/rotate", json={}, headers=writer)
    assert rotate.status_code == 403
    assert rotate.get_json()["detail"] == (
        "this needs a key with role admin; this key's role is write"
    )


def test_tenancy_holds_whatever_the_role(api: ApiUnderTest) -> None:
    acme_writer = {"X-API-Key": KEY[Role.WRITE]}
    globex_writer = {"X-API-Key": OTHER_TENANT_KEY}
    assert api.client.put(
        f"{API}/schedule/acme-job", json=BODY, headers=acme_writer
    ).status_code == (202)
    api.apply()
    for key in (OTHER_TENANT_KEY,):
        headers = {"X-API-Key": key}
        assert api.client.get(f"{API}/schedule/acme-job", headers=headers).status_code == 404
        assert api.client.delete(f"{API}/schedule/acme-job", headers=headers).status_code == 404
        assert api.client.get(f"{API}/schedules", headers=globex_writer).get_json()["items"] == []
    admin = {"X-API-Key": KEY[Role.ADMIN]}
    assert api.client.get(f"{API}/schedule/acme-job", headers=admin).status_code == 200


def test_the_openapi_document_shows_each_operations_role_and_its_403(
    api: ApiUnderTest,
) -> None:
    document = api.client.get("/openapi.json").get_json()
    seen: dict[str, str] = {}
    for path, operations in document["paths"].items():
        if path in PUBLIC_PATHS:
            continue
        for method, operation in operations.items():
            if method == "parameters":
                continue
            role = operation["x-required-role"]
            seen[operation["operationId"]] = role
            if role == "read":
                assert "403" not in operation["responses"], operation["operationId"]
            else:
                assert f"below {role}" in operation["responses"]["403"]["description"]
    assert seen["listSchedules"] == "read" and seen["getSchedule"] == "read"
    assert seen["createSchedule"] == "write" and seen["deleteSchedule"] == "write"
    assert seen["replayDeadLetter"] == "write"
    assert seen["rotateSigningSecret"] == "admin" and seen["listSigningSecrets"] == "admin"
    # The quota's 403 stays documented beside the role's.
    create = document["paths"][f"{API}/schedule"]["post"]["responses"]["403"]["description"]
    assert "quota" in create and "below write" in create
    problem = document["components"]["schemas"]["Problem"]["properties"]["required_role"]
    assert problem["enum"] == ["read", "write", "admin"]


def test_the_console_shows_only_what_the_key_may_do(api: ApiUnderTest) -> None:
    writer = {"X-API-Key": KEY[Role.WRITE]}
    assert api.client.put(f"{API}/schedule/nightly", json=BODY, headers=writer).status_code == 202
    api.apply()
    pages = ("/console/", "/console/schedules", "/console/schedules/nightly")
    actions = ('id="pause"', 'id="delete"', 'id="edit"', 'id="bulk-pause"', "New schedule")
    seen: dict[Role, str] = {}
    for role in Role:
        client = console_client(api, KEY[role])
        seen[role] = "".join(client.get(page).get_data(as_text=True) for page in pages)
        assert f"{role.value} key" in seen[role]
    for action in actions:
        assert action not in seen[Role.READ], action
        assert action in seen[Role.WRITE] and action in seen[Role.ADMIN], action
    assert 'id="history"' in seen[Role.READ]
    assert "Signing secrets" not in seen[Role.READ] and "Signing secrets" not in seen[Role.WRITE]
    assert "Signing secrets" in seen[Role.ADMIN]


def test_the_client_raises_forbidden_naming_the_role(api: ApiUnderTest) -> None:
    with serving(api.app) as url:
        reader = SchedulerClient(url, KEY[Role.READ])
        assert list(reader.list()) == []
        with pytest.raises(Forbidden) as refused:
            reader.create(BODY)
        assert refused.value.status == 403 and refused.value.required_role == "write"
        with pytest.raises(Forbidden) as refused:
            SchedulerClient(url, KEY[Role.WRITE]).rotate_signing_secret()
        assert refused.value.required_role == "admin"


def run_keys(settings: Settings, *argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser()
    keys.add_commands(parser.add_subparsers(dest="command"))
    out = io.StringIO()
    return keys.run(parser.parse_args(["keys", *argv]), settings, out), out.getvalue()


def test_keys_are_created_with_a_role_and_listed_with_it(api: ApiUnderTest) -> None:
    status, created = run_keys(
        api.settings, "create", "initech", "--role", "read", "--name", "dash"
    )
    assert status == 0 and "role: read" in created
    key = created.split("key: ")[1].split()[0]
    key_id = created.split("id: ")[1].split()[0]
    status, listed = run_keys(api.settings, "list", "--tenant", "initech")
    assert status == 0 and listed.split()[:3] == [key_id, "initech", "read"]
    headers = {"X-API-Key": key}
    assert api.client.get(f"{API}/schedules", headers=headers).status_code == 200
    refused = api.client.post(f"{API}/schedule", json=BODY, headers=headers)
    assert refused.status_code == 403 and refused.get_json()["required_role"] == "write"
    status, created = run_keys(api.settings, "create", "initech")
    assert status == 0 and "role: admin" in created
    status, printed = run_keys(api.settings, "create", "initech", "--role", "write", "--print-only")
    entry = printed.split("SCHEDULER_API_KEYS entry: ")[1].strip()
    assert key_entry(entry) is not None and key_entry(entry)[:2] == ("initech", Role.WRITE)
    with pytest.raises(SystemExit):
        run_keys(api.settings, "create", "initech", "--role", "owner")


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("acme:sk_0123456789abcdef", ("acme", Role.ADMIN)),
        ("acme/read:sk_0123456789abcdef", ("acme", Role.READ)),
        ("acme/write:sha256:" + "ab" * 32, ("acme", Role.WRITE)),
        ("acme/owner:sk_0123456789abcdef", None),
        ("acme/:sk_0123456789abcdef", None),
    ],
)
def test_a_configured_key_names_its_role_after_its_tenant(
    entry: str, expected: tuple[str, Role] | None
) -> None:
    parsed = key_entry(entry)
    assert (parsed[:2] if parsed else None) == expected
