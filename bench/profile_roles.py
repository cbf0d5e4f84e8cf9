"""The executor's CPU per fire by role: each thread's CPU (``bench.firing``'s
``executor_cpu_us_per_fire_by_thread``, from /proc) split by the py-spy samples of that thread
(``BENCH_PYSPY_ARGS=--threads``: all threads, on CPU only) into what each sample was doing.

    BENCH_PYSPY_ARGS=--threads python -m bench.firing --no-peer --rates 500,2000 \\
        --profile-dir DIR --json DIR/run.json
    python -m bench.profile_roles DIR/executor-2000.txt DIR/run.json --rate 2000

A sample's role is the first rule below its stack matches (a frame's text, function and
file, contains the rule's text), in the order of ``ROLES``; the rows of one thread add up to
its CPU, and the threads to the executor's CPU per fire. ``--top N`` lists each thread's
hottest own frames.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from bench.profile_summary import load

# (thread, role, texts: any of them in a frame of the stack). First match wins.
ROLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("*", "start-up (imports, set-up)", ("_find_and_load", "build_executor", "settle_heap")),
    ("*", "garbage collection", ("gc_collect", "collect_generations")),
    (
        "MainThread",
        "metrics and logs (observer)",
        ("Observer", "observe", "metrics", "logging", "Heartbeat"),
    ),
    (
        "MainThread",
        "the call: aiohttp and the socket (request, connection, answer)",
        ("aiohttp/", "_SelectorSocketTransport"),
    ),
    (
        "MainThread",
        "the call: request built and signed",
        ("build_request", "WebhookSigner", "sign"),
    ),
    (
        "MainThread",
        "the call: ours around it (target, sender, span, outcome, clock)",
        ("Delivery.deliver", "HttpTarget", "HttpSender", "_deliver"),
    ),
    ("MainThread", "settling on the loop (batching outcomes)", ("Settling.",)),
    (
        "MainThread",
        "hand-offs to and from the threads",
        (
            "run_in_executor",
            "ThreadPoolExecutor.submit",
            "_chain_future",
            "_call_set_state",
            "_read_from_self",
            "WorkThread.run",
        ),
    ),
    (
        "MainThread",
        "timers and the dispatch loop (hold, due, start calls)",
        (
            "_dispatch_loop",
            "start_calls",
            "_start_call",
            "_start_batch",
            "Executor.hold",
            "_receive_loop",
            "HeldOccurrences",
            "DueOccurrences",
            "HostLimits",
            "_sleep",
        ),
    ),
    ("MainThread", "epoll wait and wake-ups", ("EpollSelector.select",)),
    ("MainThread", "the event loop itself (_run_once, handles, tasks)", ("",)),
    ("begin", "version check: states read (one SELECT a batch)", ("get_schedule_states",)),
    (
        "begin",
        "version check: whole definitions read (no carried one)",
        ("get_schedules", "DefinitionCodec"),
    ),
    ("begin", "opening the carried definitions", ("open_carried", "DefinitionCache")),
    ("begin", "begin write (one upsert a batch)", ("begin_attempts",)),
    ("begin", "queue: visibility of the batch", ("change_visibilities", "SqliteQueue")),
    ("begin", "signing secrets refreshed", ("TenantSigners", "refresh")),
    ("begin", "hand-off back to the loop", ("set_result", "call_soon_threadsafe")),
    ("begin", "the check's decisions (ours)", ("CheckAndBegin",)),
    ("begin", "waiting for work (thread wake-up)", ("",)),
    ("settle", "recording outcomes (settle_attempts)", ("settle_attempts",)),
    ("settle", "deleting the messages", ("delete", "SqliteQueue")),
    ("settle", "hand-off back to the loop", ("set_result", "call_soon_threadsafe")),
    ("settle", "the settler's decisions (ours)", ("Settler",)),
    ("settle", "waiting for work (thread wake-up)", ("",)),
    ("receive", "decoding the messages", ("decode_occurrence",)),
    ("receive", "queue: receive (SQLite statements)", ("SqliteQueue", "SqsQueue")),
    ("receive", "receiving (ours: poison, holding)", ("Receiving.",)),
    ("receive", "hand-off back to the loop", ("set_result", "call_soon_threadsafe")),
    ("receive", "waiting for work (thread wake-up)", ("",)),
    ("*", "other", ("",)),
)


def role_of(thread: str, frames: list[str]) -> str:
    for owner, role, texts in ROLES:
        if owner != "*" and not thread.startswith(owner):
            continue
        if any(text in frame for frame in frames for text in texts):
            return role
    return "other"


def thread_of(frame: str) -> str:
    # ``thread (1234): begin_0`` -> ``begin_0``
    return re.sub(r"^thread \(\d+\):\s*", "", frame).strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("profile", type=Path)
    parser.add_argument("run", type=Path, help="bench.firing --json output of the same run")
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    run = next(r for r in json.loads(args.run.read_text())["runs"] if r["rate"] == args.rate)
    ours = run["ours"]
    cpu = ours["executor_cpu_us_per_fire_by_thread"]
    samples: dict[str, Counter[str]] = defaultdict(Counter)
    own: dict[str, Counter[str]] = defaultdict(Counter)
    for frames, count in load(args.profile):
        thread = thread_of(frames[0])
        samples[thread][role_of(thread, frames[1:])] += count
        own[thread][re.sub(r":\d+\)", ")", frames[-1])] += count
    print(
        f"rate {args.rate:g}/s: {ours['sustained_per_second']:.0f} fires/s, executor "
        f"{ours['cpu_us_per_fire']['executor']:.0f} us/fire"
    )
    total = 0.0
    for thread, us in cpu.items():
        counted = samples.get(thread)
        print(f"{thread:<12} {us:7.0f} us/fire")
        total += us
        if not counted:
            continue
        whole = sum(counted.values())
        for role, count in counted.most_common():
            print(f"    {us * count / whole:7.0f}  {100 * count / whole:5.1f}%  {role}")
        for frame, count in own[thread].most_common(args.top):
            print(f"             self {100 * count / whole:5.1f}%  {frame}")
    print(f"{'sum':<12} {total:7.0f} us/fire")


if __name__ == "__main__":
    main()
