"""The clock a schedule's changes are ordered by."""

from __future__ import annotations

import threading
import time


class RevisionClock:
    """Revisions that order mutations: microseconds since the epoch, strictly increasing here.

    Several API processes order a schedule's mutations by their clocks; keep them in sync (NTP).
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            return self._last
