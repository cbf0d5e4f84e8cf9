"""The collector's time in an executor, for ``bench.firing`` (bench only, never at run time).

With this directory first on ``PYTHONPATH``, each ``scheduler executor`` the benchmark starts
appends, at most twice a second after a collection, ``<unix time> <collector's thread CPU
seconds so far> <collections so far> <generation>`` to ``$BENCH_GC_DIR/gc-<pid>.txt`` (default
``/tmp``); the lines before and after a firing window (``firing_window_started_at`` and
``firing_window_seconds`` in the run's JSON) give its collections and their CPU.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

_totals = {"started": -1.0, "seconds": 0.0, "collections": 0.0, "written": 0.0}


def _note(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _totals["started"] = time.thread_time()
        return
    if _totals["started"] < 0:
        return
    _totals["seconds"] += time.thread_time() - _totals["started"]
    _totals["collections"] += 1
    _totals["started"] = -1.0
    now = time.time()
    if now - _totals["written"] > 0.5:
        _totals["written"] = now
        path = Path(os.environ.get("BENCH_GC_DIR", "/tmp")) / f"gc-{os.getpid()}.txt"
        with path.open("a") as out:
            out.write(
                f"{now} {_totals['seconds']} {_totals['collections']:.0f} {info['generation']}\n"
            )


if b"\0executor" in Path("/proc/self/cmdline").read_bytes():
    gc.callbacks.append(_note)
