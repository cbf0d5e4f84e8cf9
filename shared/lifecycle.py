"""Running a worker loop until asked to stop: signals only set flags.

First SIGTERM/SIGINT: stop taking work, finish what is in flight within the shutdown timeout,
leave unfinished queue messages undeleted so they come back. Second signal: exit now.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

log = logging.getLogger(__name__)


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
