"""A SQLite database file shared by threads and processes: WAL mode, pooled connections."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
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


class _Connections:
    """A pair of connections to the file: for reads, with SQLite's busy handler, and for
    writes, without it (``SqliteDatabase._retrying`` waits instead)."""

    def __init__(self, reader: sqlite3.Connection, writer: sqlite3.Connection) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.reader.close()
        self.writer.close()


class _Lease:
    """A thread's hold on a pair, kept in its thread-local storage. When the thread ends Python
    drops its locals, and the lease's finalizer gives the pair back to the pool."""

    def __init__(self, connections: _Connections) -> None:
        self.connections = connections
        self.writing = False


class SqliteDatabase:
    """Connections to one database file, a pair per thread, all in autocommit mode.

    A thread takes a pair from a pool the first time it needs one and gives it back when it
    ends, so a server with a thread per request (``scheduler dev``) holds as many pairs as it
    has live threads plus at most ``max_idle`` idle ones, however many requests it serves.

    Opening waits for other processes at every step: the busy handler is set when a connection
    is made, before any statement, and the switch to WAL is tried again while another process
    holds the lock (components started together on a fresh file all open it at once).

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

    def __init__(self, path: Path, busy_timeout_seconds: float = 30.0, max_idle: int = 8) -> None:
        self.path = path
        self.busy_timeout_seconds = busy_timeout_seconds
        self.max_idle = max_idle
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Readable by its owner only: it holds API key hashes and sealed webhook secrets.
        # SQLite gives the -wal and -shm files the same mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
        self._local = threading.local()
        self._idle: list[_Connections] = []
        # Every pair open now, lent or idle: what close() closes.
        self._open: set[_Connections] = set()
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        connection = self._connect()
        try:
            self._retrying(connection, "PRAGMA journal_mode=WAL", ())
        finally:
            connection.close()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection for reads."""
        return self._lease().connections.reader

    def check(self) -> None:
        """Open the file anew and read its schema: fails (``Transient``) when the process cannot
        open it now, for want of file descriptors, permissions or the file itself."""
        try:
            # mode=rw: a missing file is an error, not a new empty database.
            uri = f"{self.path.resolve().as_uri()}?mode=rw"
            connection = sqlite3.connect(uri, uri=True, timeout=self.busy_timeout_seconds)
            try:
                connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                connection.close()
        except sqlite3.Error as exc:
            raise Transient(f"sqlite cannot open {self.path}: {exc}") from exc

    def _lease(self) -> _Lease:
        lease: _Lease | None = getattr(self._local, "lease", None)
        if lease is None:
            with self._lock:
                connections = self._idle.pop() if self._idle else None
            if connections is None:
                connections = self._open_pair()
                with self._lock:
                    self._open.add(connections)
            lease = _Lease(connections)
            weakref.finalize(lease, self._give_back, connections)
            self._local.lease = lease
        return lease

    def _give_back(self, connections: _Connections) -> None:
        with self._lock:
            if connections not in self._open:
                return  # closed by close() meanwhile
            if len(self._idle) < self.max_idle:
                self._idle.append(connections)
                return
            self._open.discard(connections)
        connections.close()

    def _connect(self) -> sqlite3.Connection:
        # The timeout is SQLite's busy handler, in force from the first statement on.
        connection = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout_seconds,
            isolation_level=None,
            check_same_thread=False,
        )
        connection.row_factory = sqlite3.Row
        return connection

    def _open_pair(self) -> _Connections:
        reader = self._connect()
        writer = self._connect()
        try:
            for connection in (reader, writer):
                # NORMAL is durable against a killed process in WAL mode; only an OS crash can
                # lose the last transactions.
                self._retrying(connection, "PRAGMA synchronous=NORMAL", ())
            writer.execute("PRAGMA busy_timeout=0")
        except BaseException:
            reader.close()
            writer.close()
            raise
        return _Connections(reader, writer)

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
    def _writer(self) -> Iterator[sqlite3.Connection]:
        """This thread's writing connection, under the process's write lock."""
        lease = self._lease()
        if lease.writing:
            raise RuntimeError("a write inside a write on the same thread would deadlock")
        if not self._write_lock.acquire(timeout=self.busy_timeout_seconds):
            raise Transient("sqlite busy: another thread of this process holds the write lock")
        lease.writing = True
        try:
            yield lease.connections.writer
        finally:
            lease.writing = False
            self._write_lock.release()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with self._writer() as connection:
            self._retrying(connection, "BEGIN IMMEDIATE", ())
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            else:
                connection.execute("COMMIT")

    def write_one(
        self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[sqlite3.Row]:
        """One writing statement as a transaction of its own; the rows it returns (RETURNING).

        SQLite takes the write lock when such a statement starts, as ``BEGIN IMMEDIATE`` would,
        so a statement that reads and writes (an upsert) is atomic; and it costs one call into
        SQLite instead of three, each of which lets another thread take the GIL.
        """
        with self._writer() as connection:
            rows: list[sqlite3.Row] = self._retrying(connection, sql, parameters).fetchall()
            return rows

    def close(self) -> None:
        with self._lock:
            for connections in self._open:
                connections.close()
            self._open.clear()
            self._idle.clear()
        self._local = threading.local()
