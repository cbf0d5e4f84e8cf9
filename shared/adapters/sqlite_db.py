"""A SQLite database file shared by threads and processes: WAL mode, one connection per thread."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from shared.errors import ConfigurationError, Transient


def sqlite_path(url: str) -> Path:
    """``sqlite:///relative/file.db`` or ``sqlite:////absolute/file.db`` → the file's path."""
    parts = urlsplit(url)
    if parts.scheme != "sqlite" or parts.netloc or not parts.path.startswith("/"):
        raise ConfigurationError(f"not a sqlite URL: {url!r} (use sqlite:///path/to/file.db)")
    path = parts.path[1:]
    if not path:
        raise ConfigurationError(f"sqlite URL without a file: {url!r}")
    return Path(path)


class SqliteDatabase:
    """Connections to one database file, one per thread, all in autocommit mode.

    Writes go through ``write()``, which takes SQLite's write lock up front (``BEGIN IMMEDIATE``)
    so a read-then-write inside it is atomic across threads and processes. The threads of one
    process first queue on a Python lock: only one of them at a time asks SQLite for its write
    lock. Without it, threads that find the database locked sleep in SQLite's busy handler
    (1, 2, 5, 10 … 100 ms steps) and a burst of writes from 32 threads turns into a convoy of
    sleepers; with it, a waiting thread wakes the moment the previous write commits. Other
    processes still meet the busy handler, as before.
    """

    def __init__(self, path: Path, busy_timeout_seconds: float = 30.0) -> None:
        self.path = path
        self.busy_timeout_seconds = busy_timeout_seconds
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        with self.write() as connection:
            connection.execute("PRAGMA user_version")
        self.connection().execute("PRAGMA journal_mode=WAL")

    def connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout_seconds,
                isolation_level=None,
                check_same_thread=False,
            )
            connection.row_factory = sqlite3.Row
            # NORMAL is durable against a killed process in WAL mode; only an OS crash can
            # lose the last transactions.
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        connection = self.connection()
        if getattr(self._local, "writing", False):
            raise RuntimeError("a write inside a write on the same thread would deadlock")
        if not self._write_lock.acquire(timeout=self.busy_timeout_seconds):
            raise Transient("sqlite busy: another thread of this process holds the write lock")
        self._local.writing = True
        try:
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise Transient(f"sqlite busy: {exc}") from exc
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            else:
                connection.execute("COMMIT")
        finally:
            self._local.writing = False
            self._write_lock.release()

    def write_one(self, sql: str, parameters: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """One writing statement as a transaction of its own; the rows it returns (RETURNING).

        SQLite takes the write lock when such a statement starts, as ``BEGIN IMMEDIATE`` would,
        so a statement that reads and writes (an upsert) is atomic; and it costs one call into
        SQLite instead of three, each of which lets another thread take the GIL.
        """
        connection = self.connection()
        if getattr(self._local, "writing", False):
            raise RuntimeError("a write inside a write on the same thread would deadlock")
        if not self._write_lock.acquire(timeout=self.busy_timeout_seconds):
            raise Transient("sqlite busy: another thread of this process holds the write lock")
        try:
            return connection.execute(sql, parameters).fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise Transient(f"sqlite busy: {exc}") from exc
            raise
        finally:
            self._write_lock.release()

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()
