"""What a request body costs the API, against its size, for the shapes an attacker would send.

Each shape is built at each size and posted to ``POST /schedule`` through the Flask app (no
socket): alone as the body, and (where it is JSON a schedule can carry) as a schedule's
``payload.body``. For each, the CPU time of the body check (``parse_body``, as the API runs it
before any view) and of the whole request, and the answer's status. CPU time of the thread,
best of ``--repeat``: what the work costs whatever else the machine runs.

    .venv/bin/python -m bench.bodies                       # sizes 20 KB .. 256 KB
    .venv/bin/python -m bench.bodies --sizes 20480,40960 --max-seconds 30
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import backend, report, table

LIMIT = 262_144
PATH = "/scheduler-service/v1/schedule"


def _fill(size: int, unit: bytes, head: bytes = b"", tail: bytes = b"") -> bytes:
    return head + unit * max(0, (size - len(head) - len(tail)) // len(unit)) + tail


def _keys(size: int) -> bytes:
    items: list[bytes] = []
    total, number = 2, 0
    while True:
        item = b'"k%d":1' % number
        if total + len(item) + 1 > size:
            return b"{" + b",".join(items) + b"}"
        items.append(item)
        total += len(item) + 1
        number += 1


# name -> (a body of about ``size`` bytes, whether a schedule's payload.body can carry it)
SHAPES: dict[str, tuple[Callable[[int], bytes], bool]] = {
    # The body: a quote, then escaped quotes, never closed.
    "escaped quotes, unclosed": (lambda n: _fill(n, b'\\"', b'"'), False),
    "escaped quotes, closed": (lambda n: _fill(n, b'\\"', b'"', b'"'), True),
    "escaped backslashes": (lambda n: _fill(n, b"\\\\", b'"', b'"'), True),
    "unicode escapes": (lambda n: _fill(n, b"\\u00e9", b'"', b'"'), True),
    "lone surrogates": (lambda n: _fill(n, b"\\ud800", b'"', b'"'), False),
    "surrogate pairs": (lambda n: _fill(n, b"\\ud83d\\ude00", b'"', b'"'), True),
    "open brackets": (lambda n: _fill(n, b"["), False),
    "64 deep, then wide": (lambda n: _fill(n, b"1,", b"[" * 64, b"1" + b"]" * 64), False),
    "empty arrays": (lambda n: _fill(n, b"[],", b"[", b"[]]"), True),
    "empty objects": (lambda n: _fill(n, b"{},", b"[", b"{}]"), True),
    "small keys": (_keys, True),
    "one key repeated": (lambda n: _fill(n, b'"a":1,', b"{", b'"a":1}'), True),
    "floats": (lambda n: _fill(n, b"0.1,", b"[", b"0.1]"), True),
    "a huge float last": (lambda n: _fill(n, b"1,", b"[", b"1e999]"), False),
    "4,300-digit integers": (lambda n: _fill(n, b"1" * 4300 + b",", b"[", b"1]"), True),
    "strings of one quote": (lambda n: _fill(n, b'"\\"",', b"[", b'""]'), True),
}


def measure(app: Any, body: bytes, repeat: int) -> tuple[float, float, int]:
    """(body check ms, whole request ms, status): CPU time of this thread, best of ``repeat``."""
    from scheduler_service.requests import bodies

    checked: list[float] = []
    original = bodies.parse_body

    def timed(data: bytes) -> Any:
        started = time.thread_time()
        try:
            return original(data)
        finally:
            checked.append(time.thread_time() - started)

    best_check, best_request, status = float("inf"), float("inf"), 0
    bodies.parse_body = timed
    try:
        for _ in range(repeat):
            checked.clear()
            client = app.test_client()
            started = time.thread_time()
            answer = client.post(PATH, data=body, content_type="application/json")
            best_request = min(best_request, time.thread_time() - started)
            best_check = min(best_check, sum(checked))
            status = answer.status_code
    finally:
        bodies.parse_body = original
    return best_check * 1000, best_request * 1000, status


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="20480,40960,81920,131072,262144")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=60.0,
        help="a shape that took longer than this at one size is not tried at larger ones",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]

    from scheduler_service.app import create_app
    from shared.backends import open_backends

    rows: list[list[Any]] = []
    results: list[dict[str, Any]] = []
    with backend(None, None) as where:
        settings = where.settings(api_auth="none", max_body_bytes=LIMIT)
        backends = open_backends(settings)
        try:
            app = create_app(settings, backends)
            for name, (make, fits) in SHAPES.items():
                variants: list[tuple[str, Callable[[int], bytes]]] = [("body", make)]
                if fits:
                    variants.append(("payload.body", partial(carried, make)))
                for where_in, build in variants:
                    for size in sizes:
                        body = build(size)
                        check_ms, request_ms, status = measure(app, body, args.repeat)
                        results.append(
                            {
                                "shape": name,
                                "in": where_in,
                                "bytes": len(body),
                                "check_ms": check_ms,
                                "request_ms": request_ms,
                                "status": status,
                            }
                        )
                        rows.append([name, where_in, len(body), check_ms, request_ms, status])
                        if request_ms > args.max_seconds * 1000:
                            break
        finally:
            backends.close()
    print(table(["shape", "as", "bytes", "check ms", "request ms", "status"], rows))
    worst = max(results, key=lambda item: item["check_ms"])
    print(
        f"worst body check: {worst['check_ms']:.1f} ms ({worst['shape']}, {worst['in']}, "
        f"{worst['bytes']:,} bytes)"
    )
    result = {"sizes": sizes, "repeat": args.repeat, "results": results}
    report("bodies", result, args.json)
    return result


def carried(make: Callable[[int], bytes], size: int) -> bytes:
    """A schedule carrying the shape in ``payload.body``, the whole body about ``size``."""
    head = json.dumps(
        {
            "name": "bodies",
            "schedule": {"cron": "0 9 * * *"},
            "payload": {"method": "POST", "url": "https://hooks.example.com/bodies", "body": 0},
        }
    ).encode()
    before, _, after = head.rpartition(b"0")
    return before + make(size - len(before) - len(after)) + after


if __name__ == "__main__":
    main()
