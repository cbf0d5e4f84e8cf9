"""docs/delivery-targets.md says what it shows: each of its examples is a body the API
accepts, and answers back with the kind it names, the secrets masked."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.targets import KINDS
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.harness import API

DOC = Path(__file__).resolve().parents[3] / "docs" / "delivery-targets.md"


def examples() -> list[dict[str, Any]]:
    blocks = re.findall(r"^```json\n(.*?)^```", DOC.read_text(), re.MULTILINE | re.DOTALL)
    return [json.loads(block) for block in blocks]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    with api_under_test(tmp_path) as api:
        yield api


def test_every_kind_has_an_example_and_each_is_accepted_as_written(api: ApiUnderTest) -> None:
    bodies = examples()
    assert sorted(body["payload"].get("kind", "http") for body in bodies) == sorted(KINDS)
    for number, body in enumerate(bodies):
        answer = api.client.put(f"{API}/schedule/doc-{number}", json=body)
        assert answer.status_code == 202, answer.get_json()
    api.apply()
    for number, body in enumerate(bodies):
        shown = api.client.get(f"{API}/schedule/doc-{number}").get_json()
        assert shown["payload"]["kind"] == body["payload"].get("kind", "http")
        assert "s3cret" not in json.dumps(shown)
