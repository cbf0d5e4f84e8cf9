"""Slow and idle clients against ``scheduler dev`` and ``scheduler api``, as users start them.

Four phases, loopback only:

1. **Half-sent requests.** ``--half-sent`` connections each send a request's first lines and
   then nothing, held ``--hold`` seconds. Meanwhile ``/healthz`` is asked every half second
   (1 s timeout each), and a one-time schedule created before the phase fires at the
   receiver: its lateness is when the call arrived after its time.
2. **After they leave.** The threads, descriptors and resident memory of the service's
   processes (the one started and its children), before, while held and ``--settle`` seconds
   after the clients closed.
3. **Trickling headers.** ``--trickle`` connections each send one header line every
   ``--trickle-interval`` seconds for ``--trickle-seconds``; ``/healthz`` is asked every second.
4. **Past the connection bound** (``--bound N``, started with ``SCHEDULER_API_MAX_CONNECTIONS``
   set to N): N idle connections, then one request more: its status, or that none came.
5. **A busy API.** ``--busy`` clients post costly bodies (26,000 unknown members, 256 KB: some
   70 ms of CPU each) without a pause for ``--busy-seconds``, while a schedule fires every
   second: the lateness of its calls, quiet and busy.

    .venv/bin/python -m bench.slow_clients --target dev
    .venv/bin/python -m bench.slow_clients --target api --half-sent 300
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.common import WEBHOOK_SECRET, Component, free_port, report, table
from bench.receiver import ReceiverProcess

API = "/scheduler-service/v1"
# A request's first lines: the headers never end (no blank line), the body never comes.
HALF_SENT = (
    b"POST " + API.encode() + b"/schedule HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 1000\r\n"
)


def tree_pids(root: int) -> list[int]:
    """``root`` and every process descended from it, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                parents.setdefault(int(fields[1]), []).append(int(entry))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(parents.get(pid, []))
    return found


def resources(root: int) -> dict[str, float]:
    """Threads, open descriptors and resident MB of ``root`` and its descendants."""
    threads = descriptors = 0
    rss_kb = 0
    for pid in tree_pids(root):
        with contextlib.suppress(OSError):
            descriptors += len(os.listdir(f"/proc/{pid}/fd"))
            threads += len(os.listdir(f"/proc/{pid}/task"))
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss_kb += int(line.split()[1])
    return {"threads": threads, "fds": descriptors, "rss_mb": round(rss_kb / 1024, 1)}


def request(port: int, method: str, path: str, body: Any = None, timeout: float = 1.0) -> int:
    """One request on a connection of its own; its status (raises on no answer)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if data is not None else {}
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def healthz(port: int, timeout: float = 1.0) -> float | None:
    """How long ``/healthz`` took to answer 200, in seconds; ``None`` if it did not in time."""
    started = time.monotonic()
    try:
        status = request(port, "GET", "/healthz", timeout=timeout)
    except (OSError, http.client.HTTPException):
        return None
    return time.monotonic() - started if status == 200 else None


@contextlib.contextmanager
def half_sent(port: int, count: int, first: bytes = HALF_SENT) -> Iterator[list[socket.socket]]:
    """``count`` connections that sent ``first`` and nothing more, closed on leaving."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            with contextlib.suppress(OSError):
                client = socket.create_connection(("127.0.0.1", port), timeout=5)
                client.sendall(first)
                held.append(client)
        yield held
    finally:
        for client in held:
            client.close()


class Prober:
    """Asks ``/healthz`` every ``interval`` seconds on a thread until stopped."""

    def __init__(self, port: int, interval: float, timeout: float = 1.0) -> None:
        self.port, self.interval, self.timeout = port, interval, timeout
        self.latencies: list[float | None] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.latencies.append(healthz(self.port, self.timeout))
            self._stop.wait(self.interval)

    def summary(self) -> dict[str, Any]:
        answered = [latency for latency in self.latencies if latency is not None]
        return {
            "probes": len(self.latencies),
            "answered": len(answered),
            "max_ms": round(max(answered) * 1000, 1) if answered else None,
        }


def trickle(port: int, count: int, interval: float, seconds: float) -> dict[str, Any]:
    """``count`` connections sending one header line every ``interval`` seconds, while
    ``/healthz`` is asked every second; how many probes were answered, and how long the
    server kept the trickling connections open."""
    clients = []
    for _ in range(count):
        with contextlib.suppress(OSError):
            client = socket.create_connection(("127.0.0.1", port), timeout=5)
            client.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            clients.append(client)
    started = time.monotonic()
    closed_after: dict[int, float] = {}
    with Prober(port, 1.0) as prober:
        line = 0
        while time.monotonic() - started < seconds:
            time.sleep(interval)
            line += 1
            for number, client in enumerate(clients):
                if number in closed_after:
                    continue
                try:
                    client.sendall(b"X-Line-%d: x\r\n" % line)
                except OSError:
                    closed_after[number] = round(time.monotonic() - started, 1)
    for client in clients:
        client.close()
    return {
        "connections": len(clients),
        **prober.summary(),
        "closed_by_server": len(closed_after),
        "closed_after_s": max(closed_after.values()) if closed_after else None,
    }


def beyond_bound(port: int, bound: int) -> dict[str, Any]:
    """``bound`` idle connections, then a request on one more: its status or that none came."""
    with half_sent(port, bound, b"") as held:
        time.sleep(0.5)
        try:
            status: int | str = request(port, "GET", "/healthz", timeout=5.0)
        except (OSError, http.client.HTTPException) as exc:
            status = f"no answer ({type(exc).__name__})"
        return {"held": len(held), "next_request": status}


def busy(port: int, clients: int, seconds: float) -> int:
    """``clients`` threads posting costly bodies for ``seconds``; how many were answered."""
    from bench.bodies import SHAPES

    body = SHAPES["small keys"][0](256 * 1024)
    answered = [0] * clients
    until = time.monotonic() + seconds

    def post(number: int) -> None:
        while time.monotonic() < until:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            with contextlib.suppress(OSError, http.client.HTTPException):
                connection.request(
                    "POST", f"{API}/schedule", body, {"Content-Type": "application/json"}
                )
                connection.getresponse().read()
                answered[number] += 1
            connection.close()

    threads = [threading.Thread(target=post, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(answered)


def fire_lateness_ms(receiver: ReceiverProcess, start: float, end: float) -> dict[str, Any]:
    """The lateness of the calls that arrived between ``start`` and ``end`` (epoch seconds)."""
    late = sorted(
        (arrived - datetime.fromisoformat(scheduled.replace("Z", "+00:00")).timestamp()) * 1000
        for arrived, scheduled, _ in receiver.dump()
        if scheduled and start <= arrived <= end
    )
    if not late:
        return {"fires": 0}
    return {
        "fires": len(late),
        "p50_ms": round(late[len(late) // 2], 1),
        "max_ms": round(late[-1], 1),
    }


def while_busy(receiver: ReceiverProcess, port: int, clients: int, seconds: float) -> Any:
    """Phase 5: a schedule firing every second, quiet for ``seconds``, then busy as long."""
    receiver.reset()
    body = {
        "name": "every-second",
        "schedule": {"cron": "@every 1s"},
        "payload": {"method": "POST", "url": f"{receiver.url}/every-second"},
    }
    if request(port, "POST", f"{API}/schedule", body, timeout=10.0) != 202:
        raise RuntimeError("the recurring schedule was not accepted")
    time.sleep(3)  # its first fires
    quiet_from = time.time()
    time.sleep(seconds)
    busy_from = time.time()
    answered = busy(port, clients, seconds)
    busy_to = time.time()
    time.sleep(1)
    return {
        "clients": clients,
        "costly_requests_answered": answered,
        "quiet": fire_lateness_ms(receiver, quiet_from, busy_from),
        "busy": fire_lateness_ms(receiver, busy_from, busy_to),
    }


def fires_once(receiver: ReceiverProcess, port: int, due_in: float) -> datetime:
    """Creates a one-time schedule calling the receiver ``due_in`` seconds from now."""
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=due_in)
    body = {
        "name": "on-time",
        "schedule": {"at": at.isoformat().replace("+00:00", "Z")},
        "payload": {"method": "POST", "url": f"{receiver.url}/on-time"},
    }
    status = request(port, "POST", f"{API}/schedule", body, timeout=10.0)
    if status != 202:
        raise RuntimeError(f"the schedule was not accepted: {status}")
    return at


def lateness_ms(receiver: ReceiverProcess, due: datetime, wait_until: float) -> float | None:
    receiver.wait_for(1, wait_until)
    arrivals = receiver.dump()
    if not arrivals:
        return None
    return round((arrivals[0][0] - due.timestamp()) * 1000, 1)


def start(target: str, directory: Path, port: int, env: dict[str, str]) -> list[Component]:
    """The service as users start it: ``scheduler dev``, or the four components apart with
    the API under gunicorn. The first component is the one serving HTTP."""
    if target == "dev":
        env = {"SCHEDULER_LOG_FORMAT": "text", **env}
        args = ["--port", str(port), "--data-dir", str(directory / "data")]
        return [Component("dev", env, directory, args)]
    url = f"sqlite:///{directory / 'scheduler.db'}"
    env = {
        "SCHEDULER_STORE_URL": url,
        "SCHEDULER_QUEUE_URL": url,
        "SCHEDULER_PORT": str(port),
        "SCHEDULER_API_AUTH": "none",
        "SCHEDULER_ALLOWED_NETWORKS": "127.0.0.0/8",
        "SCHEDULER_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "SCHEDULER_POLL_INTERVAL_SECONDS": "0.2",
        **env,
    }
    return [Component(name, env, directory) for name in ("api", "processor", "poller", "executor")]


def wait_healthy(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if healthz(port) is not None:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the service on port {port} did not answer /healthz")


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"target": args.target}
    receiver = ReceiverProcess()
    try:
        with tempfile.TemporaryDirectory(prefix="slow-clients-") as tmp:
            with started(args.target, Path(tmp) / "attacks", {}) as (port, served):
                time.sleep(3)  # the workers start beside the API
                result["baseline"] = resources(served)
                due = fires_once(receiver, port, due_in=args.hold / 2 + 2)
                with half_sent(port, args.half_sent) as held, Prober(port, 0.5) as prober:
                    time.sleep(args.hold / 2)  # before a client timeout of the hold's length
                    result["held"] = {"connections": len(held), **resources(served)}
                    time.sleep(args.hold / 2)
                result["healthz_while_held"] = prober.summary()
                result["fire_lateness_ms"] = lateness_ms(receiver, due, time.time() + 10)
                time.sleep(args.settle)
                result["after_settle"] = resources(served)
                result["trickle"] = trickle(
                    port, args.trickle, args.trickle_interval, args.trickle_seconds
                )
                if args.busy:
                    result["busy"] = while_busy(receiver, port, args.busy, args.busy_seconds)
            if args.bound:
                # One API process (the bound is each process's), started anew with the bound.
                env = {
                    "SCHEDULER_API_MAX_CONNECTIONS": str(args.bound),
                    "SCHEDULER_API_WORKERS": "1",
                }
                with started(args.target, Path(tmp) / "bound", env) as (port, _):
                    result["beyond_bound"] = beyond_bound(port, args.bound)
    finally:
        receiver.stop()
    return result


@contextlib.contextmanager
def started(target: str, directory: Path, env: dict[str, str]) -> Iterator[tuple[int, int]]:
    """The service up and answering: its port, and the pid of the process serving HTTP (whose
    children are counted with it)."""
    directory.mkdir(parents=True)
    port = free_port()
    components = start(target, directory, port, env)
    try:
        wait_healthy(port)
        yield port, components[0].pid
    finally:
        for component in reversed(components):
            component.stop()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--target", choices=("dev", "api"), default="dev")
    parser.add_argument("--half-sent", type=int, default=1000)
    parser.add_argument("--hold", type=float, default=10.0)
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--trickle", type=int, default=24)
    parser.add_argument("--trickle-interval", type=float, default=5.0)
    parser.add_argument("--trickle-seconds", type=float, default=20.0)
    parser.add_argument("--bound", type=int, default=0, help="SCHEDULER_API_MAX_CONNECTIONS")
    parser.add_argument("--busy", type=int, default=8, help="clients posting costly bodies")
    parser.add_argument("--busy-seconds", type=float, default=10.0)
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    result = run(args)
    rows = [
        [phase, figures.get("threads"), figures.get("fds"), figures.get("rss_mb")]
        for phase, figures in (
            ("baseline", result["baseline"]),
            (f"{result['held']['connections']} half-sent held", result["held"]),
            (f"{args.settle:g} s after they left", result["after_settle"]),
        )
    ]
    print(table(["service " + args.target, "threads", "fds", "RSS MB"], rows))
    probes = result["healthz_while_held"]
    print(
        f"/healthz while held: {probes['answered']} of {probes['probes']} answered within 1 s "
        f"(slowest {probes['max_ms']} ms); the due occurrence was "
        f"{result['fire_lateness_ms']} ms late"
    )
    trickled = result["trickle"]
    print(
        f"{trickled['connections']} trickling connections: /healthz {trickled['answered']} of "
        f"{trickled['probes']}; closed by the server: {trickled['closed_by_server']} "
        f"(the last after {trickled['closed_after_s']} s)"
    )
    if "busy" in result:
        quiet, hot = result["busy"]["quiet"], result["busy"]["busy"]
        print(
            f"a schedule firing every second: lateness p50 {quiet.get('p50_ms')} ms, max "
            f"{quiet.get('max_ms')} ms quiet; p50 {hot.get('p50_ms')} ms, max {hot.get('max_ms')}"
            f" ms while {args.busy} clients kept the API busy "
            f"({result['busy']['costly_requests_answered']} costly requests answered)"
        )
    if "beyond_bound" in result:
        print(f"past the bound of {args.bound}: {result['beyond_bound']['next_request']}")
    report("slow_clients", result, args.json)
    return result


if __name__ == "__main__":
    main()
