"""The embedded database's connections: bounded however many threads come and go, and opened
safely by many processes at once on a fresh file."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from shared.adapters.sqlite.db import SqliteDatabase
from shared.backends import open_backends
from tests.support.harness import sqlite_settings


def open_fds() -> int:
    return len(os.listdir(f"/proc/{os.getpid()}/fd"))


def test_connections_of_finished_threads_are_reused_not_leaked(tmp_path: Path) -> None:
    database = SqliteDatabase(tmp_path / "s.db")
    try:

        def use() -> None:
            database.connection().execute("SELECT 1").fetchone()
            with database.write() as connection:
                connection.execute("PRAGMA user_version")

        def one_thread() -> None:
            thread = threading.Thread(target=use)
            thread.start()
            thread.join()

        for _ in range(20):
            one_thread()
        before = open_fds()
        for _ in range(300):
            one_thread()
        assert open_fds() <= before
    finally:
        database.close()


def test_close_closes_the_connections_of_live_threads_too(tmp_path: Path) -> None:
    baseline = open_fds()
    database = SqliteDatabase(tmp_path / "s.db")
    database.connection().execute("SELECT 1").fetchone()
    database.close()
    assert open_fds() == baseline


def open_components(url: str, start: multiprocessing.synchronize.Barrier) -> None:
    """What a component does at start-up: open the store and queues, create the tables."""
    start.wait()
    backends = open_backends(sqlite_settings(Path(url)))
    try:
        backends.store.count_schedules()
    finally:
        backends.close()


@pytest.mark.slow
def test_eight_processes_open_a_fresh_file_at_once(tmp_path: Path) -> None:
    # Forked so the eight start within microseconds of each other (a fresh interpreter each
    # would spread them over a second of imports); several rounds, each on a new file.
    context = multiprocessing.get_context("fork")
    for round_number in range(5):
        directory = tmp_path / f"round{round_number}"
        start = context.Barrier(8)
        processes = [
            context.Process(target=open_components, args=(str(directory), start)) for _ in range(8)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [process.exitcode for process in processes] == [0] * 8, f"round {round_number}"
