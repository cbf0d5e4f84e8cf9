"""``/signing-secrets``: a tenant lists and rotates its own signing secrets, sees a secret only
in the answer of the rotation that made it, and never sees or rotates another tenant's."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

ACME_KEY = "sk_acme_0123456789abcdef"
GLOBEX_KEY = "sk_globex_0123456789abcdef"
KEYS = (f"acme:{ACME_KEY}", f"globex:sha256:{hashlib.sha256(GLOBEX_KEY.encode()).hexdigest()}")
ACME = {"X-API-Key": ACME_KEY}
GLOBEX = {"X-API-Key": GLOBEX_KEY}
SECRETS = f"{API}/signing-secrets"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path, api_auth="keys", api_keys=KEYS) as under_test:
        yield under_test


def states(api: ApiUnderTest, headers: dict[str, str]) -> list[tuple[str, str]]:
    answer = api.client.get(SECRETS, headers=headers)
    assert answer.status_code == 200
    return [(item["id"], item["state"]) for item in answer.get_json()["items"]]


def test_a_tenant_rotates_its_own_secret_and_sees_it_once(api: ApiUnderTest) -> None:
    assert states(api, ACME) == [("deployment", "current")]
    answer = api.client.post(f"{SECRETS}/rotate", headers=ACME)
    assert answer.status_code == 201, answer.get_json()
    rotation = answer.get_json()
    assert rotation["secret"].startswith("whsec_")
    assert [(item["id"], item["state"]) for item in rotation["items"]] == [
        ("deployment", "retiring"),
        (rotation["id"], "next"),
    ]
    deployment, new = rotation["items"]
    assert deployment["retires_at"] == new["current_from"] == rotation["current_from"]
    assert deployment["created_at"] is None and new["created_at"] == rotation["created_at"]
    # Never shown again: not in the listing, nor anywhere in the store's answers.
    listing = api.client.get(SECRETS, headers=ACME)
    assert rotation["secret"] not in listing.get_data(as_text=True)
    assert [item["id"] for item in listing.get_json()["items"]] == ["deployment", rotation["id"]]
    # Globex sees and signs with the deployment's secret still; it cannot reach acme's.
    assert states(api, GLOBEX) == [("deployment", "current")]
    assert rotation["id"] not in api.client.get(SECRETS, headers=GLOBEX).get_data(as_text=True)


def test_a_rotation_without_overlap_retires_the_old_secret_at_once(api: ApiUnderTest) -> None:
    rotation = api.client.post(
        f"{SECRETS}/rotate", json={"overlap_seconds": 0}, headers=ACME
    ).get_json()
    assert rotation["current_from"] is None
    assert states(api, ACME) == [(rotation["id"], "current")]


def test_a_fourth_secret_at_once_is_a_409(api: ApiUnderTest) -> None:
    for _ in range(2):
        assert api.client.post(f"{SECRETS}/rotate", headers=ACME).status_code == 201
    refused = api.client.post(f"{SECRETS}/rotate", headers=ACME)
    assert refused.status_code == 409 and refused.mimetype == "application/problem+json"
    assert "rotate again from" in refused.get_json()["detail"]
    assert len(states(api, ACME)) == 3


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"overlap_seconds": -1}, "overlap_seconds"),
        ({"overlap_seconds": 2_592_001}, "overlap_seconds"),
        ({"overlap_seconds": "60"}, "overlap_seconds"),
        ({"overlap_seconds": True}, "overlap_seconds"),
        ({"overlap": 60}, "overlap"),
    ],
)
def test_a_bad_rotation_is_a_400_naming_the_field(
    api: ApiUnderTest, body: dict[str, object], field: str
) -> None:
    answer = api.client.post(f"{SECRETS}/rotate", json=body, headers=ACME)
    assert answer.status_code == 400
    assert field in json.dumps(answer.get_json()["errors"])
    assert states(api, ACME) == [("deployment", "current")]


def test_without_a_key_nothing_is_listed_or_rotated(api: ApiUnderTest) -> None:
    assert api.client.get(SECRETS).status_code == 401
    assert api.client.post(f"{SECRETS}/rotate").status_code == 401
    assert states(api, ACME) == [("deployment", "current")]


def test_the_openapi_document_shows_both_operations(api: ApiUnderTest) -> None:
    document = api.client.get("/openapi.json").get_json()
    assert document["paths"]["/scheduler-service/v1/signing-secrets"]["get"]["operationId"] == (
        "listSigningSecrets"
    )
    rotate = document["paths"]["/scheduler-service/v1/signing-secrets/rotate"]["post"]
    assert rotate["operationId"] == "rotateSigningSecret"
    assert {"201", "400", "409"} <= set(rotate["responses"])


def test_a_rotation_repeated_with_its_idempotency_key_answers_again_and_rotates_once(
    api: ApiUnderTest, tmp_path: Path
) -> None:
    key = {**ACME, "Idempotency-Key": "rotate-1"}
    first = api.client.post(f"{SECRETS}/rotate", json={"overlap_seconds": 60}, headers=key)
    assert first.status_code == 201, first.get_json()
    assert "Idempotent-Replayed" not in first.headers
    again = api.client.post(f"{SECRETS}/rotate", json={"overlap_seconds": 60}, headers=key)
    assert again.status_code == 201, again.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    assert states(api, ACME) == [("deployment", "retiring"), (first.get_json()["id"], "next")]
    # Another body under the same key: refused, nothing rotated.
    other = api.client.post(f"{SECRETS}/rotate", json={"overlap_seconds": 0}, headers=key)
    assert other.status_code == 409 and other.mimetype == "application/problem+json"
    assert "Idempotency-Key" in other.get_json()["detail"]
    assert states(api, ACME) == [("deployment", "retiring"), (first.get_json()["id"], "next")]
    # The key is acme's: globex rotating under it rotates its own, once.
    globex = api.client.post(
        f"{SECRETS}/rotate",
        json={"overlap_seconds": 60},
        headers={**GLOBEX, "Idempotency-Key": "rotate-1"},
    )
    assert globex.status_code == 201 and "Idempotent-Replayed" not in globex.headers
    assert globex.get_json()["secret"] != first.get_json()["secret"]
    # The secret is kept for the repeat sealed, like the tenant's set: never in the clear.
    secret = first.get_json()["secret"].encode()
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert files and not [path for path in files if secret in path.read_bytes()]


def test_a_rotation_with_a_malformed_idempotency_key_is_a_400_naming_it(api: ApiUnderTest) -> None:
    refused = api.client.post(f"{SECRETS}/rotate", headers={**ACME, "Idempotency-Key": "a b"})
    assert refused.status_code == 400
    assert "Idempotency-Key" in json.dumps(refused.get_json())
    assert states(api, ACME) == [("deployment", "current")]
