"""The API over embedded backends for endpoint tests: a test client, the processor, a clock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from processor_worker.worker import Processor
from scheduler_cli.components import build_processor
from scheduler_service.app import create_app
from shared.backends import Backends, open_backends
from shared.ports import Clock
from shared.settings import Settings
from shared.timeutil import UTC, utc_ms
from tests.support.harness import sqlite_settings


class SteppedClock(Clock):
    """The real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def now(self) -> datetime:
        return utc_ms(datetime.now(UTC) + self.offset)

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@dataclass
class ApiUnderTest:
    app: Flask
    client: FlaskClient
    backends: Backends
    processor: Processor
    settings: Settings
    clock: SteppedClock

    def queued(self) -> int:
        depth = self.backends.queues.mutations.depth()
        return depth.visible + depth.in_flight + depth.delayed

    def occurrences_queued(self) -> int:
        depth = self.backends.queues.occurrences.depth()
        return depth.visible + depth.in_flight + depth.delayed

    def apply(self) -> None:
        """Let the processor store everything queue 1 holds."""
        while self.processor.process_batch():
            pass


@contextmanager
def api_under_test(directory: Path, **overrides: Any) -> Iterator[ApiUnderTest]:
    settings = sqlite_settings(directory, **overrides)
    backends = open_backends(settings)
    clock = SteppedClock()
    app = create_app(settings, backends, clock)
    try:
        yield ApiUnderTest(
            app,
            app.test_client(),
            backends,
            build_processor(settings, backends),
            settings,
            clock,
        )
    finally:
        backends.close()
