"""A SQLite database file shared by threads and processes: WAL mode, one connection per thread."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
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
    sleepers; with it, a waiting thread wakes the moment the previous write commits.

    Against other processes, writes do not use SQLite's busy handler either: each thread writes
    on a second connection that fails at once when the database is locked, and ``write()``
    tries again after 0.1 ms, doubling up to 2 ms, until ``busy_timeout_seconds``. A write
    that waits for another process's commit (the API's enqueue for the processor's, the
    executor's for the poller's) waits about as long as that commit takes, not the next step
    of SQLite's schedule. Reads keep SQLite's busy handler (in WAL mode they rarely need it).
    """

    def __init__(self, path: Path, busy_timeout_seconds: float = 30.0) -> None:
        self.path = path
        self.busy_timeout_seconds = busy_timeout_seconds
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Readable by its owner only: it holds API key hashes and sealed webhook secrets.
        # SQLite gives the -wal and -shm files the same mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        with self.write() as connection:
            connection.execute("PRAGMA user_version")
        self.connection().execute("PRAGMA journal_mode=WAL")

    def connection(self) -> sqlite3.Connection:
        """This thread's connection for reads."""
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._open(self.busy_timeout_seconds)
            self._local.connection = connection
        return connection

    def _writer(self) -> sqlite3.Connection:
        """This thread's connection for writes: no busy handler, ``_retrying`` waits instead."""
        connection: sqlite3.Connection | None = getattr(self._local, "writer", None)
        if connection is None:
            connection = self._open(0.0)
            self._local.writer = connection
        return connection

    def _open(self, timeout: float) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        connection.row_factory = sqlite3.Row
        # NORMAL is durable against a killed process in WAL mode; only an OS crash can
        # lose the last transactions.
        connection.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            self._connections.append(connection)
        return connection

    def _retrying(self, connection: sqlite3.Connection, sql: str, parameters: Any) -> Any:
        """Run a statement that takes the write lock, trying again while another process holds
        it (briefly, then a little longer, until ``busy_timeout_seconds``)."""
        deadline = time.monotonic() + self.busy_timeout_seconds
        pause = 0.0001
        while True:
            try:
                return connection.execute(sql, parameters)
            except sqlite3.OperationalError as exc:
                message = str(exc)
                if "locked" not in message and "busy" not in message:
                    raise
                if time.monotonic() >= deadline:
                    raise Transient(f"sqlite busy: {exc}") from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.002)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        connection = self._writer()
        if getattr(self._local, "writing", False):
            raise RuntimeError("a write inside a write on the same thread would deadlock")
        if not self._write_lock.acquire(timeout=self.busy_timeout_seconds):
            raise Transient("sqlite busy: another thread of this process holds the write lock")
        self._local.writing = True
        try:
            self._retrying(connection, "BEGIN IMMEDIATE", ())
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
        connection = self._writer()
        if getattr(self._local, "writing", False):
            raise RuntimeError("a write inside a write on the same thread would deadlock")
        if not self._write_lock.acquire(timeout=self.busy_timeout_seconds):
            raise Transient("sqlite busy: another thread of this process holds the write lock")
        try:
            rows: list[sqlite3.Row] = self._retrying(connection, sql, parameters).fetchall()
            return rows
        finally:
            self._write_lock.release()

    def close(self) -> None:
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
        self._local = threading.local()
