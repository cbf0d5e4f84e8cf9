"""Fixtures shared by every tier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import peers
from tests.support.api import ApiUnderTest, api_under_test


@pytest.fixture(scope="session")
def nx_27017(tmp_path_factory: pytest.TempPathFactory) -> Iterator[peers.Peer]:
    """nx-27017, a MongoDB wire server, started on first use and stopped at the session's end."""
    if not peers.ENABLED:
        pytest.skip(peers.DISABLED_REASON)
    peer = peers.start_nx_27017(tmp_path_factory.mktemp("nx-27017"))
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(scope="session")
def localstack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[peers.Peer]:
    """LocalStack (SQS, SNS and STS), started on first use and stopped at the session's end."""
    if not peers.ENABLED:
        pytest.skip(peers.DISABLED_REASON)
    peer = peers.start_localstack(tmp_path_factory.mktemp("localstack"))
    try:
        yield peer
    finally:
        peer.stop()


@pytest.fixture(params=["sqlite", *peers.WIRE_VARIANTS])
def component_backends(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[peers.ComponentBackends]:
    """The backends of ``scheduler`` processes: one SQLite file, or MongoDB and SQS on the wire."""
    with peers.component_backends(request, monkeypatch, tmp_path, request.param) as backends:
        yield backends


@pytest.fixture
def api(tmp_path: Path) -> Iterator[ApiUnderTest]:
    """The API over embedded backends in this process (``tests.support.api``); a module that
    wants other settings defines an ``api`` of its own."""
    with api_under_test(tmp_path) as under_test:
        yield under_test
