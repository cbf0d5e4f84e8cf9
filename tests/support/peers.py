"""The wire peers: LocalStack (SQS; SNS and STS for the delivery targets) and nx-27017
(MongoDB), started without Docker.

``scripts/peers install`` puts each in its own virtual environment under ``.peers/``;
``tests/conftest.py`` starts each once per test session, on a free port of 127.0.0.1 with its
data in a temporary directory, and stops it at the end. A peer that does not come up fails the
tests that need it with the end of its log. ``SCHEDULER_TEST_PEERS=0`` skips them (visibly) for
a quick local run; CI never sets it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo.errors import PyMongoError

from shared.adapters.sqs_queue import sqs_client
from shared.backends import Backends, open_backends
from shared.settings import Settings
from tests.support.harness import FAST, SECRET_KEY, sqlite_settings
from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = ROOT / ".peers"
ENABLED = os.environ.get("SCHEDULER_TEST_PEERS", "1").strip() != "0"
DISABLED_REASON = "wire peers turned off by SCHEDULER_TEST_PEERS=0"
REGION = "us-east-1"

# A real MongoDB and a real SQS endpoint (AWS or LocalStack elsewhere) of the developer's, when
# set: the same suites run against them too, and fail rather than skip if they do not answer.
MONGO_URL = os.environ.get("SCHEDULER_TEST_MONGO_URL") or None
SQS_URL = os.environ.get("SCHEDULER_TEST_SQS_URL") or None

# Backend variants of the end-to-end and multi-process tests: the wire peers, and the URLs above
# (with a peer standing in for whichever of the two is not set).
WIRE_VARIANTS = ["wire-peers", *(["wire-urls"] if MONGO_URL or SQS_URL else [])]


class PeerError(Exception):
    """A peer is not installed, or did not come up."""


@dataclass
class Peer:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM to the peer's process group; SIGKILL if it is still there after ``timeout``."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                break
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                continue
        self.process.wait(5)


def _executable(relative: str) -> Path:
    path = PEERS_DIR / relative
    if not path.exists():
        raise PeerError(
            f"{path} is missing: run `scripts/peers install` (scripts/test does it), "
            "or set SCHEDULER_TEST_PEERS=0 to skip the tests on the wire peers"
        )
    return path


def _spawn(
    name: str, command: list[str], env: dict[str, str], directory: Path
) -> tuple[subprocess.Popen[bytes], Path]:
    log_path = directory / f"{name}.log"
    # Its own session, so stop() reaches anything it starts; where util-linux's setpriv is
    # there, the peer also dies with this process if pytest itself is killed.
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*prefix, *command],
            env=env,
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log_path


def _wait_until_ready(peer: Peer, ready: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if peer.process.poll() is not None:
            raise PeerError(
                f"{peer.name} exited with code {peer.process.returncode} before answering on "
                f"{peer.url}; the end of {peer.log_path}:\n{peer.log_tail()}"
            )
        if ready():
            return
        time.sleep(0.1)
    peer.stop()
    raise PeerError(
        f"{peer.name} did not answer on {peer.url} within {timeout:.0f} s; "
        f"the end of {peer.log_path}:\n{peer.log_tail()}"
    )


def start_nx_27017(directory: Path, timeout: float = 30.0) -> Peer:
    """nx-27017 on 127.0.0.1 (its default host, given anyway), one SQLite file per database."""
    executable = _executable("nx-27017/bin/nx-27017")
    port = free_port()
    command = [
        str(executable),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--data-dir",
        str(directory / "data"),
        "--log-file",
        str(directory / "nx-27017.server.log"),
        "--pid-file",
        str(directory / "nx-27017.pid"),
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(directory)}
    process, log_path = _spawn("nx-27017", command, env, directory)
    peer = Peer("nx-27017", f"mongodb://127.0.0.1:{port}/", process, log_path)

    def ready() -> bool:
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            peer.url, serverSelectionTimeoutMS=300, connectTimeoutMS=300
        )
        try:
            client.admin.command("ping")
            return True
        except PyMongoError:
            return False
        finally:
            client.close()

    _wait_until_ready(peer, ready, timeout)
    return peer


def start_localstack(
    directory: Path, timeout: float = 90.0, settings: Mapping[str, str] | None = None
) -> Peer:
    """LocalStack's runtime, SQS (and SNS and STS, for the delivery targets), on 127.0.0.1,
    reaching nothing beyond loopback; with ``settings`` (its environment variables: docker
    compose's image's, say) too, save where it listens and keeps its files."""
    python = _executable("localstack/bin/python")
    port = free_port()
    listen = f"127.0.0.1:{port}"
    env = {
        **(settings or {}),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(directory),
        "SERVICES": "sqs,sns,sts",
        "GATEWAY_LISTEN": listen,
        "LOCALSTACK_HOST": listen,
        # Hypercorn binds the host it is given; the default (twisted) server binds 0.0.0.0.
        "GATEWAY_SERVER": "hypercorn",
        # Not "in a container" (this sandbox looks like one): its files go under
        # FILESYSTEM_ROOT instead of /var/lib/localstack, and it does not probe the Docker
        # bridge (172.17.0.1) at import.
        "OVERRIDE_IN_DOCKER": "0",
        "DOCKER_BRIDGE_IP": "127.0.0.1",
        "FILESYSTEM_ROOT": str(directory / "filesystem"),
        # Nothing off the machine: no analytics, no DNS server (it looks up an upstream one),
        # no certificate download.
        "DISABLE_EVENTS": "1",
        "DNS_ADDRESS": "0",
        "SKIP_SSL_CERT_DOWNLOAD": "1",
    }
    process, log_path = _spawn(
        "localstack", [str(python), "-m", "localstack.runtime.main"], env, directory
    )
    peer = Peer("localstack", f"http://{listen}", process, log_path)

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{peer.url}/_localstack/health", timeout=1) as answer:
                body = answer.read().decode()
            if '"sqs": "available"' not in body and '"sqs": "running"' not in body:
                return False
            # LocalStack's first SQS request (of any kind) takes seconds, 8 to 13 on a loaded
            # two-core machine: made here, it is not the first test's, whose process would
            # spend it starting (scheduler api's start took 15 s, most of a health wait).
            warm = f"{peer.url}/?Action=ListQueues"
            with urllib.request.urlopen(warm, timeout=timeout) as answer:
                status: int = answer.status
                return status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False

    _wait_until_ready(peer, ready, timeout)
    return peer


def fake_aws(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Fake credentials, and nothing from the developer's own AWS configuration."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(directory / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(directory / "no-aws-credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


def aws_for(monkeypatch: pytest.MonkeyPatch, directory: Path, variant: str) -> str:
    """AWS settings for the SQS endpoint of ``variant``; returns the region to sign for.

    A peer gets fake credentials. ``SCHEDULER_TEST_SQS_URL`` gets the developer's own
    configuration (``AWS_ACCESS_KEY_ID`` or ``AWS_PROFILE``, ``AWS_REGION``), or fake keys when
    none is set, as a LocalStack elsewhere needs.
    """
    if variant in ("sqs-url", "wire-urls") and SQS_URL:
        if not (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")):
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or REGION
    fake_aws(monkeypatch, directory)
    return REGION


@dataclass(frozen=True)
class WireBackends:
    """A MongoDB database and SQS queues of one test's own on servers over the wire."""

    mongo_url: str
    sqs_endpoint: str
    region: str
    database: str
    suffix: str

    @property
    def queue_url(self) -> str:
        scheme, _, address = self.sqs_endpoint.partition("://")
        return f"sqs+{scheme}://{address.rstrip('/')}?region={self.region}"

    @property
    def queue_names(self) -> dict[str, str]:
        return {
            "mutations_queue": f"mutations-{self.suffix}",
            "occurrences_queue": f"occurrences-{self.suffix}",
            "dead_letter_queue": f"dead-letters-{self.suffix}",
        }

    def settings_values(self) -> dict[str, str]:
        return {
            "store_url": self.mongo_url,
            "queue_url": self.queue_url,
            "mongo_database": self.database,
            "secret_keys": SECRET_KEY,
            **self.queue_names,
        }

    def env(self) -> dict[str, str]:
        """The ``SCHEDULER_*`` variables that point a ``scheduler`` process at these backends."""
        values = self.settings_values()
        return {f"SCHEDULER_{name.upper()}": value for name, value in values.items()}

    def settings(self, base: Settings) -> Settings:
        return base.with_changes(**{**self.settings_values(), "secret_keys": (SECRET_KEY,)})

    def open(self, base: Settings) -> Backends:
        return open_backends(self.settings(base))

    def drop(self) -> None:
        client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
            self.mongo_url, serverSelectionTimeoutMS=3000
        )
        try:
            client.drop_database(self.database)
        finally:
            client.close()
        sqs = sqs_client(self.sqs_endpoint, self.region)
        try:
            for name in self.queue_names.values():
                try:
                    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
                except sqs.exceptions.QueueDoesNotExist:
                    continue
                sqs.delete_queue(QueueUrl=url)
        finally:
            sqs.close()


def mongo_url_for(request: pytest.FixtureRequest, variant: str) -> str:
    """The MongoDB of a variant: ``SCHEDULER_TEST_MONGO_URL`` or the session's nx-27017."""
    if variant in ("mongo-url", "wire-urls") and MONGO_URL:
        return MONGO_URL
    peer: Peer = request.getfixturevalue("nx_27017")
    return peer.url


def sqs_endpoint_for(request: pytest.FixtureRequest, variant: str) -> str:
    """The SQS endpoint of a variant: ``SCHEDULER_TEST_SQS_URL`` or the session's LocalStack."""
    if variant in ("sqs-url", "wire-urls") and SQS_URL:
        return SQS_URL
    peer: Peer = request.getfixturevalue("localstack")
    return peer.url


@contextmanager
def wire_backends(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, directory: Path, variant: str
) -> Iterator[WireBackends]:
    """A database and queues of this test's own on the wire servers of ``variant``.

    The AWS settings go into this process's environment, so processes it starts inherit them.
    """
    mongo_url = mongo_url_for(request, variant)
    sqs_endpoint = sqs_endpoint_for(request, variant)
    region = aws_for(monkeypatch, directory, variant)
    suffix = uuid.uuid4().hex[:12]
    backends = WireBackends(mongo_url, sqs_endpoint, region, f"scheduler_test_{suffix}", suffix)
    try:
        yield backends
    finally:
        backends.drop()


@dataclass(frozen=True)
class ComponentBackends:
    """Where the ``scheduler`` processes of a test keep their state."""

    variant: str
    env: dict[str, str]  # the SCHEDULER_* variables for the processes
    settings: Settings  # the same backends, for the test's own look at them

    def open(self) -> Backends:
        return open_backends(self.settings)


@contextmanager
def component_backends(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, directory: Path, variant: str
) -> Iterator[ComponentBackends]:
    """``sqlite``: one SQLite file in ``directory``; else the wire servers of ``variant``."""
    if variant == "sqlite":
        settings = sqlite_settings(directory)
        env = {"SCHEDULER_STORE_URL": settings.store_url, "SCHEDULER_QUEUE_URL": settings.queue_url}
        yield ComponentBackends(variant, env, settings)
        return
    with wire_backends(request, monkeypatch, directory, variant) as wire:
        yield ComponentBackends(variant, wire.env(), wire.settings(Settings.from_env({}, **FAST)))
