"""Opening the store and the queues a process's settings name, and closing what was opened."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

from shared.adapters.sqlite_db import SqliteDatabase, sqlite_path
from shared.errors import ConfigurationError
from shared.ports import MessageQueue, Queues, Store
from shared.settings import Settings

DatabaseOpener = Callable[[str], SqliteDatabase]


@dataclass
class Backends:
    store: Store
    queues: Queues
    # What open_backends created besides the adapters: SQLite files, an SQS client.
    resources: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        self.queues.close()
        self.store.close()
        for close in self.resources:
            close()


def open_backends(settings: Settings, *, create: bool = True) -> Backends:
    """The store and queues of ``settings``; with ``create``, missing tables/queues are made."""
    databases: dict[str, SqliteDatabase] = {}

    def database(url: str) -> SqliteDatabase:
        path = sqlite_path(url)
        key = str(path.resolve())
        if key not in databases:
            databases[key] = SqliteDatabase(path)
        return databases[key]

    resources: list[Callable[[], None]] = []
    store = _open_store(settings, database)
    queues = _open_queues(settings, database, resources)
    resources += [opened.close for opened in databases.values()]
    if create:
        store.ensure_indexes()
        for queue in (queues.dead_letters, queues.mutations, queues.occurrences):
            queue.create()
    return Backends(store, queues, resources)


def _open_store(settings: Settings, database: DatabaseOpener) -> Store:
    url = settings.store_url
    if url.startswith("sqlite://"):
        from shared.adapters.sqlite_store import SqliteStore

        return SqliteStore(database(url))
    if url.startswith(("mongodb://", "mongodb+srv://")):
        from shared.adapters.mongo_store import MongoStore

        return MongoStore.from_url(
            url,
            settings.mongo_database,
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
            SqliteQueue(db, name, settings.dead_letter_queue, settings.max_receives)
            for name in names
        )
        return Queues(mutations, occurrences, SqliteQueue(db, settings.dead_letter_queue))
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
            SqsQueue(client, name, settings.dead_letter_queue, settings.max_receives)
            for name in names
        )
        return Queues(mutations, occurrences, SqsQueue(client, settings.dead_letter_queue))
    raise ConfigurationError(f"SCHEDULER_QUEUE_URL: unsupported queue {url!r}")
