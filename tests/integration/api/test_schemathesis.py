"""schemathesis against the served OpenAPI document, over the embedded backends.

For every operation it generates requests from the spec (valid ones and, in negative mode,
invalid ones) and checks that no answer is a 5xx and every answer is declared in the spec with
a body that matches its schema. Bounded: a few dozen examples per operation, about a minute.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from scheduler_service.app import create_app
from shared.backends import open_backends
from tests.support.harness import sqlite_settings
from tests.support.network_guard import loopback_only

API_KEY = "sk_schemathesis_0123456789"
EXAMPLES_PER_OPERATION = 150


# schemathesis builds its tests when the module is collected, so the app exists from then on
# (schemathesis.pytest.from_fixture does not work with this pytest); the fixture below cleans up.
_directory = Path(tempfile.mkdtemp(prefix="schemathesis-"))
_settings = sqlite_settings(
    _directory, api_auth="keys", api_keys=(f"fuzz:{API_KEY}",), tenant_schedule_quota=50
)
_backends = open_backends(_settings)
schema = schemathesis.openapi.from_wsgi("/openapi.json", create_app(_settings, _backends))
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=EXAMPLES_PER_OPERATION,
)


@pytest.fixture(scope="module", autouse=True)
def backends_closed_at_the_end() -> Iterator[None]:
    with loopback_only():
        yield
    _backends.close()
    shutil.rmtree(_directory, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors_and_every_answer_matches_the_spec(case: schemathesis.Case) -> None:
    case.call_and_validate(
        headers={"X-API-Key": API_KEY},
        checks=[not_a_server_error, response_schema_conformance],
    )
