"""Running a worker loop until asked to stop: signals only set flags.

First SIGTERM/SIGINT: stop taking work, finish what is in flight within the shutdown timeout,
leave unfinished queue messages undeleted so they come back. Second signal: exit now.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading
from types import FrameType

log = logging.getLogger(__name__)

# Container allocations (net of those freed) between two collections of the youngest
# generation: the default 700 made the executor collect hundreds of times a second at 2,000
# fires a second, and the older generations' collections walked the whole heap.
YOUNG_COLLECTION_THRESHOLD = 20_000


def settle_heap() -> None:
    """Once a worker is built, before its loop: what start-up allocated (modules, settings,
    clients) stays for the process's life, so it leaves the collector's generations
    (``gc.freeze``), and the youngest generation is collected less often. Almost all of a
    worker's garbage is freed by reference counting; what the collector walked at every
    collection was the start-up's 80,000 objects (a full collection took 80-150 ms on the loop:
    3.8 s of a 30 s run at 2,000 fires a second)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD)


class Shutdown:
    """The stop flag every loop of a process waits on."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self._linked: list[threading.Event] = []
        self._signals = 0

    def request(self) -> None:
        self.requested.set()
        for event in self._linked:
            event.set()

    def link(self, event: threading.Event) -> None:
        """Set ``event`` too when a stop is requested, so a loop sleeping on it wakes up."""
        self._linked.append(event)
        if self.requested.is_set():
            event.set()

    def is_set(self) -> bool:
        return self.requested.is_set()

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking as soon as a stop is requested."""
        return self.requested.wait(timeout)

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._signals += 1
        if self._signals > 1:
            # The second signal: the operator wants out now. Messages in flight come back
            # after their visibility timeout; nothing is lost.
            os._exit(128 + signum)
        log.info("stopping", extra={"event": "shutdown_requested", "signal": signum})
        self.request()
