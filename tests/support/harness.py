"""Running the pipeline inside a test: settings, backends and the workers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from execution_worker.worker import Executor
from polling_worker.worker import Poller
from processor_worker.worker import Processor
from scheduler_cli.components import build_executor, build_poller, build_processor
from scheduler_service.app import create_app
from shared.backends import Backends, open_backends
from shared.lifecycle import Shutdown
from shared.secrets import SecretBox
from shared.settings import Settings

API = "/scheduler-service/v1"
# Seals payloads where a test has no SQLite key file: MongoDB stores (where it is required).
SECRET_KEY = "SukMKV7xXEs-qZMGvu801THEA_PmsAPXiOYd3-3Dat4="
TEST_SECRETS = SecretBox([SECRET_KEY])

# Fast loops so a test sees a schedule fire within a second or two.
FAST = {
    "poll_interval_seconds": 0.1,
    "receive_wait_seconds": 0.2,
    "lookahead_seconds": 10.0,
    "dispatch_lead_seconds": 1.0,
    "allowed_networks": ("127.0.0.0/8", "::1/128"),
    "webhook_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "log_format": "text",
    "api_auth": "none",
}


def sqlite_settings(directory: Path, **overrides: Any) -> Settings:
    url = f"sqlite:///{directory.resolve() / 'scheduler.db'}"
    return Settings.from_env({}, **{"store_url": url, "queue_url": url, **FAST, **overrides})


class Pipeline:
    """The API (as a Flask test client) and the three workers, each in its own thread."""

    def __init__(self, settings: Settings, backends: Backends) -> None:
        self.settings = settings
        self.backends = backends
        self.app = create_app(settings, backends)
        self.client: FlaskClient = self.app.test_client()
        self.processor: Processor = build_processor(settings, backends)
        self.poller: Poller = build_poller(settings, backends)
        self.executor: Executor = build_executor(settings, backends)
        self.processor.on_applied = self.poller.wake.set
        self.shutdown = Shutdown()
        self.threads: list[threading.Thread] = []

    def start(self, *names: str) -> Pipeline:
        """Start the named workers (``processor``, ``poller``, ``executor``), by default all."""
        for name in names or ("processor", "poller", "executor"):
            self.run_worker(getattr(self, name))
        return self

    def run_worker(self, worker: Processor | Poller | Executor) -> None:
        thread = threading.Thread(target=worker.run, args=(self.shutdown,), daemon=True)
        thread.start()
        self.threads.append(thread)

    def another(self, kind: str) -> Poller | Executor:
        """A second poller or executor on the same backends, with its own identity."""
        settings = self.settings.with_changes(worker_id=f"{kind}-{len(self.threads)}")
        if kind == "poller":
            return build_poller(settings, self.backends)
        return build_executor(settings, self.backends)

    def stop(self) -> None:
        self.shutdown.request()
        for thread in self.threads:
            thread.join(timeout=10)

    def wait_until_stored(self, schedule_id: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            response = self.client.get(f"{API}/schedule/{schedule_id}")
            if response.status_code == 200:
                body: dict[str, Any] = response.get_json()
                return body
            time.sleep(0.01)
        raise AssertionError(f"schedule {schedule_id} was not stored within {timeout}s")


@contextmanager
def running_pipeline(settings: Settings, backends: Backends | None = None) -> Iterator[Pipeline]:
    owned = backends is None
    backends = backends or open_backends(settings)
    pipeline = Pipeline(settings, backends).start()
    try:
        yield pipeline
    finally:
        pipeline.stop()
        if owned:
            backends.close()


@contextmanager
def pipeline_parts(settings: Settings) -> Iterator[Pipeline]:
    """A pipeline whose API and processor run; the test starts the poller and executor later."""
    backends = open_backends(settings)
    pipeline = Pipeline(settings, backends).start("processor")
    try:
        yield pipeline
    finally:
        pipeline.stop()
        backends.close()
