"""What every benchmark shares: the machine, percentiles, processes, memory, output."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOOPBACK_NETWORKS = "127.0.0.0/8,::1/128"
# A fixed signing secret: the executor signs every call, as it does in production.
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_mb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_mb = int(line.split()[1]) // 1024
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_mb": memory_mb,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "commit": commit or "unknown",
        # Other work on the machine skews every figure: the load when the benchmark started.
        "load_average": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
    }


def machine_line() -> str:
    m = machine()
    return (
        f"machine: {m['cpu']}, {m['cores']} cores, {m['memory_mb']} MB, {m['os']}, "
        f"Python {m['python']}, SQLite {m['sqlite']}, commit {m['commit']}, "
        f"load average {m['load_average']}"
    )


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``; NaN when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values) if values else math.nan,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rss_mb(pid: int) -> float:
    """Resident memory of a process, from /proc (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return math.nan


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far, from /proc (Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    # After the command: state is field 3, utime 14 and stime 15 (1-based, man 5 proc).
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """User + system CPU time each thread of a process has used so far, by thread id (Linux)."""
    seconds: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def thread_names(pid: int) -> dict[int, str]:
    """The Python name of each thread of a process, by thread id, from ``py-spy dump``; a
    thread Python does not know (none here so far) is absent."""
    try:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "py-spy"), "dump", "--json", "--pid", str(pid)],
            capture_output=True,
            timeout=30,
        )
        threads = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        # No py-spy, or not allowed to read the process: the threads keep their ids.
        return {}
    return {
        int(thread["os_thread_id"]): str(thread["thread_name"])
        for thread in threads
        if thread.get("os_thread_id")
    }


def cpu_by_thread(
    pid: int, before: Mapping[int, float], after: Mapping[int, float]
) -> dict[str, float]:
    """CPU seconds between two ``thread_cpu_seconds`` of ``pid``, by the threads' Python names
    (``thread <id>`` for one py-spy did not name, e.g. ended before it looked)."""
    names = thread_names(pid)
    used: dict[str, float] = {}
    for tid, seconds in after.items():
        name = names.get(tid, f"thread {tid}")
        used[name] = used.get(name, 0.0) + seconds - before.get(tid, 0.0)
    return used


class RssSampler:
    """Samples a process's resident memory every ``interval`` seconds in a thread."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            value = rss_mb(self.pid)
            if not math.isnan(value):
                self.samples.append((time.time(), value))
            self._stop.wait(self.interval)

    @property
    def peak(self) -> float:
        return max((value for _, value in self.samples), default=math.nan)

    def at(self, moment: float) -> float:
        """The first sample taken at or after ``moment`` (epoch seconds)."""
        for taken, value in self.samples:
            if taken >= moment:
                return value
        return math.nan


@dataclass
class Backend:
    """Where a benchmark keeps its state: SQLite files in a directory, or MongoDB / SQS URLs.

    Each run gets its own SQLite file, MongoDB database or SQS queue names, so runs never see
    each other's data.
    """

    store_url: str
    queue_url: str
    env: dict[str, str] = field(default_factory=dict)
    label: str = "sqlite"

    def settings_env(self, **extra: Any) -> dict[str, str]:
        env = {
            "SCHEDULER_STORE_URL": self.store_url,
            "SCHEDULER_QUEUE_URL": self.queue_url,
            "SCHEDULER_ALLOWED_NETWORKS": LOOPBACK_NETWORKS,
            "SCHEDULER_WEBHOOK_SECRET": WEBHOOK_SECRET,
            **self.env,
        }
        env.update({f"SCHEDULER_{name.upper()}": str(value) for name, value in extra.items()})
        return env

    def settings(self, **extra: Any) -> Any:
        from shared.settings import Settings

        return Settings.from_env(self.settings_env(**extra))


@contextmanager
def backend(
    store_url: str | None, queue_url: str | None, keep: Path | None = None
) -> Iterator[Backend]:
    """A fresh backend for one run; SQLite in a temporary directory unless URLs are given."""
    run = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="scheduler-bench-") as tmp:
        directory = keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        sqlite_url = f"sqlite:///{directory.resolve() / 'scheduler.db'}"
        env: dict[str, str] = {}
        labels = []
        store = store_url or sqlite_url
        queue = queue_url or sqlite_url
        if store.startswith("mongodb"):
            env["SCHEDULER_MONGO_DATABASE"] = f"scheduler_bench_{run}"
            from shared.secrets import new_secret_key

            # The run's own key: its database is dropped at the end.
            env["SCHEDULER_SECRET_KEYS"] = new_secret_key()
            labels.append("mongodb")
        else:
            labels.append("sqlite store")
        if queue.startswith("sqs"):
            env.update(
                {
                    "SCHEDULER_MUTATIONS_QUEUE": f"bench-{run}-mutations",
                    "SCHEDULER_OCCURRENCES_QUEUE": f"bench-{run}-occurrences",
                    "SCHEDULER_DEAD_LETTER_QUEUE": f"bench-{run}-dead-letters",
                    "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
                    "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
                }
            )
            labels.append("sqs queues")
        else:
            labels.append("sqlite queues")
        os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
        yield Backend(store, queue, env, " + ".join(labels))
        if store.startswith("mongodb"):
            _drop_mongo(store, env["SCHEDULER_MONGO_DATABASE"])


def _drop_mongo(url: str, database: str) -> None:
    import pymongo

    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(url)
    try:
        client.drop_database(database)
    finally:
        client.close()


class Component:
    """A real ``scheduler <command>`` process, its output in a log file."""

    def __init__(
        self, command: str, env: Mapping[str, str], log_dir: Path, args: Sequence[str] = ()
    ) -> None:
        self.command = command
        self.log_path = log_dir / f"{command}-{uuid.uuid4().hex[:6]}.log"
        self._log = self.log_path.open("wb")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "scheduler_cli.main", command, *args],
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def stop(self, timeout: float = 30.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            return self.popen.wait(10)
        finally:
            self._log.close()

    def wait_for_output(self, text: str, timeout: float) -> bool:
        """Whether ``text`` appeared in its output within ``timeout`` seconds (False also once
        the process has ended without it)."""
        deadline = time.monotonic() + timeout
        while True:
            if text in self.log_path.read_text(errors="replace"):
                return True
            if time.monotonic() > deadline or self.popen.poll() is not None:
                return False
            time.sleep(0.05)

    def output_tail(self, chars: int = 2000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


@contextmanager
def profiled(
    pid: int, path: Path | None, rate: int = 200, subprocesses: bool = False
) -> Iterator[None]:
    """Sample ``pid`` with py-spy into a speedscope/flamegraph file while the block runs."""
    if path is None:
        yield
        return
    spy = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "py-spy"),
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(rate),
            "--format",
            "raw" if path.suffix == ".txt" else "flamegraph",
            "--output",
            str(path),
            "--nonblocking",
            *(["--subprocesses"] if subprocesses else []),
            # e.g. BENCH_PYSPY_ARGS=--gil: only the thread holding the GIL (CPU, not waiting).
            *os.environ.get("BENCH_PYSPY_ARGS", "").split(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        try:
            spy.wait(30)
        except subprocess.TimeoutExpired:
            spy.kill()


def common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store-url",
        default=os.environ.get("BENCH_STORE_URL"),
        help="mongodb://… to measure MongoDB (default: SQLite in a temporary directory)",
    )
    parser.add_argument(
        "--queue-url",
        default=os.environ.get("BENCH_QUEUE_URL"),
        help="sqs+http://127.0.0.1:PORT for moto/LocalStack (default: SQLite queues)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")


def report(name: str, result: dict[str, Any], json_path: Path | None) -> None:
    """Print the figures (and write them as JSON); every benchmark ends with this."""
    result = {"benchmark": name, "machine": machine(), **result}
    print(machine_line())
    print(json.dumps(result, indent=2, default=str))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=2, default=str) + "\n")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table, numbers rounded for reading."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            if math.isnan(value):
                return "-"
            return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)
