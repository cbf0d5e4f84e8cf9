"""Opening the store and the queues a process's settings name, and closing what was opened."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

from shared.adapters.sqlite.db import SqliteDatabase, sqlite_path
from shared.backoff import Backoff, Stop
from shared.errors import ConfigurationError
from shared.ports import MessageQueue, Queues, QueueSpec, Store
from shared.ports.spans import NoSpans, Spans
from shared.secrets import SecretBox, key_file_keys
from shared.settings import Settings

KEY_FILE = "secret-keys"

log = logging.getLogger(__name__)

DatabaseOpener = Callable[[str], SqliteDatabase]


@dataclass
class Backends:
    store: Store
    queues: Queues
    # Seals webhook secrets in the store and on queue 1.
    secrets: SecretBox
    # What open_backends created besides the adapters: SQLite files, an SQS client.
    resources: list[Callable[[], None]] = field(default_factory=list)
    # Checks that this process can still open its local files (the SQLite databases); each
    # raises Transient when it cannot. Remote backends are readiness, not liveness.
    liveness: list[Callable[[], None]] = field(default_factory=list)
    # What the process records of traces (``open_spans``).
    spans: Spans = field(default_factory=NoSpans)

    def close(self) -> None:
        self.queues.close()
        self.store.close()
        self.spans.close()
        for close in self.resources:
            close()


def open_backends(settings: Settings, *, create: bool = True, wait: Stop | None = None) -> Backends:
    """The store and queues of ``settings``; with ``create``, missing tables/queues are made.
    ``ConfigurationError`` when either URL is not set: nothing is guessed, nothing made.

    With ``wait``, a store or queue that does not answer yet is waited for (``shared.backoff``)
    until it does or ``wait`` says stop (then ``Transient``): a worker started during an outage
    starts when it ends, instead of exiting."""
    settings.require_backends()
    databases: dict[str, SqliteDatabase] = {}

    def database(url: str) -> SqliteDatabase:
        path = sqlite_path(url)
        key = str(path.resolve())
        if key not in databases:
            databases[key] = SqliteDatabase(path)
        return databases[key]

    resources: list[Callable[[], None]] = []
    secrets = secret_box(settings)
    store = _open_store(settings, database, secrets)
    queues = _open_queues(settings, database, resources)
    resources += [opened.close for opened in databases.values()]
    if create:

        def make() -> None:
            store.ensure_indexes()
            for queue in (queues.dead_letters, queues.mutations, queues.occurrences):
                queue.create()

        if wait is None:
            make()
        else:
            Backoff("starting").call(make, wait)
    return Backends(
        store,
        queues,
        secrets,
        resources,
        [opened.check for opened in databases.values()],
        open_spans(settings),
    )


def open_spans(settings: Settings) -> Spans:
    """Spans exported over OTLP when an endpoint is set and the SDK is installed (the ``otel``
    extra); else none recorded, the trace context passed on all the same."""
    if not settings.trace_export:
        return NoSpans()
    try:
        from shared.adapters.otel_spans import exporting_spans
    except ImportError as exc:
        log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed "
            "(pip install 'scheduler-service[otel]'): no spans are exported (%s)",
            exc,
            extra={"event": "trace_export_unavailable"},
        )
        return NoSpans()
    return exporting_spans()


@contextmanager
def opened_store(settings: Settings) -> Iterator[Store]:
    """The store of ``settings`` alone (its tables or indexes made if missing), closed after:
    for the commands that need no queue (``scheduler keys``, ``scheduler reseal``)."""
    settings.require_backends("store_url")
    databases: list[SqliteDatabase] = []

    def database(url: str) -> SqliteDatabase:
        databases.append(SqliteDatabase(sqlite_path(url)))
        return databases[-1]

    store = _open_store(settings, database, secret_box(settings))
    try:
        store.ensure_indexes()
        yield store
    finally:
        store.close()
        for opened in databases:
            opened.close()


def secret_box(settings: Settings) -> SecretBox:
    """``SCHEDULER_SECRET_KEYS``, or the key file beside a SQLite store's database."""
    if settings.secret_keys:
        return SecretBox(settings.secret_keys)
    return SecretBox(key_file_keys(sqlite_path(settings.store_url).parent / KEY_FILE))


def _open_store(settings: Settings, database: DatabaseOpener, secrets: SecretBox) -> Store:
    url = settings.store_url
    if url.startswith("sqlite://"):
        from shared.adapters.sqlite.store import SqliteStore

        return SqliteStore(database(url), secrets=secrets)
    if url.startswith(("mongodb://", "mongodb+srv://")):
        from shared.adapters.mongo.store import MongoStore

        return MongoStore.from_url(
            url,
            settings.mongo_database,
            secrets=secrets,
            execution_retention=timedelta(days=settings.execution_retention_days),
        )
    raise ConfigurationError(f"SCHEDULER_STORE_URL: unsupported store {url!r}")


def _open_queues(
    settings: Settings, database: DatabaseOpener, resources: list[Callable[[], None]]
) -> Queues:
    url = settings.queue_url
    names = (settings.mutations_queue, settings.occurrences_queue)
    if url.startswith("sqlite://"):
        from shared.adapters.sqlite_queue import SqliteQueue

        db = database(url)
        mutations: MessageQueue
        occurrences: MessageQueue
        mutations, occurrences = (
            SqliteQueue(db, QueueSpec(name, settings.dead_letter_queue, settings.max_receives))
            for name in names
        )
        return Queues(
            mutations, occurrences, SqliteQueue(db, QueueSpec(settings.dead_letter_queue))
        )
    if url.startswith("sqs"):
        from shared.adapters.sqs_queue import SqsQueue, sqs_client

        parts = urlsplit(url)
        region = parse_qs(parts.query).get("region", [settings.aws_region])[0]
        if parts.scheme == "sqs":
            endpoint = None
        elif parts.scheme in ("sqs+http", "sqs+https"):
            endpoint = f"{parts.scheme[4:]}://{parts.netloc}"
        else:
            raise ConfigurationError(f"SCHEDULER_QUEUE_URL: unsupported queue URL {url!r}")
        client = sqs_client(endpoint, region)
        resources.append(client.close)
        mutations, occurrences = (
            SqsQueue(client, QueueSpec(name, settings.dead_letter_queue, settings.max_receives))
            for name in names
        )
        return Queues(
            mutations, occurrences, SqsQueue(client, QueueSpec(settings.dead_letter_queue))
        )
    raise ConfigurationError(f"SCHEDULER_QUEUE_URL: unsupported queue {url!r}")
