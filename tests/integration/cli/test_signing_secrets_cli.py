"""``scheduler signing-secrets``: a rotation prints its secret once; listings print ids, states
and creation times, never a secret."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import api_under_test
from tests.support.cli import run
from tests.support.serving import serving


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with api_under_test(tmp_path) as api, serving(api.app) as served:
        yield served


def test_a_rotation_prints_its_secret_once(url: str, capfd: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capfd, "signing-secrets", "list", "--url", url)
    assert code == 0
    assert out.splitlines()[1].split() == ["deployment", "current", "-", "-", "-"]

    code, out, _ = run(capfd, "signing-secrets", "rotate", "--url", url)
    assert code == 0, out
    secret = out.split()[1]
    assert secret.startswith("whsec_") and "shown this once" in out
    new_id = out.split("id: ")[1].split()[0]

    code, listing, _ = run(capfd, "signing-secrets", "list", "--url", url)
    rows = [line.split() for line in listing.splitlines()[1:]]
    assert [(row[0], row[1]) for row in rows] == [("deployment", "retiring"), (new_id, "next")]
    assert rows[1][2].endswith("Z")  # its creation time
    assert secret not in listing

    code, raw, _ = run(capfd, "signing-secrets", "list", "--url", url, "--json")
    assert secret not in raw
    assert [item["state"] for item in json.loads(raw)["items"]] == ["retiring", "next"]


def test_a_refused_rotation_says_why(url: str, capfd: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capfd, "signing-secrets", "rotate", "--url", url, "--overlap-seconds", "-5")
    assert code == 1
    assert "400" in err and "overlap_seconds" in err


def test_an_api_out_of_reach_is_said(capfd: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capfd, "signing-secrets", "list", "--url", "http://127.0.0.1:9")
    assert code == 1 and "cannot reach" in err
