"""Waiting out a backend outage: a bounded backoff that notices the recovery at once.

Every worker loop that calls the store (the poller's claims and advances, the processor's
writes, the executor's check-and-begin and its settler) goes through a ``Backoff`` when a call
fails with ``Transient``: it waits, tries again, and goes on the moment a call succeeds.

The pause before the next try starts at ``first`` and doubles up to ``cap``; a success resets
it. The time the failed try itself took counts toward its pause. A MongoDB call that finds no
server waits out its server selection (``serverSelectionTimeoutMS``, 3 s), during which pymongo
checks the server every half second: such a try is followed by the next at once, so some call
is always waiting on the server and the first answer after an outage is noticed within half a
second, not at the end of a pause. A try that fails at once (a connection reset, a SQLite file
that cannot be opened) is followed by a pause, at most ``cap``: that is how late such a
recovery can be noticed, and it bounds how fast a loop retries. See docs/operations.md, "When
the store is unreachable".

One line is logged when a backend becomes unavailable (WARNING, ``backend_unavailable``) and one
when it answers again (INFO, ``backend_recovered``, with how long it was away); the tries in
between log at DEBUG.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from shared.errors import Transient

log = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_PAUSE_SECONDS = 0.05
MAX_PAUSE_SECONDS = 1.0


class Stop(Protocol):
    """What a retry waits on: ``wait(seconds)`` returns True as soon as a stop is requested."""

    def wait(self, timeout: float) -> bool: ...


@dataclass(eq=False)
class Backoff:
    """The pauses of one loop between tries of work its backend failed (see the module);
    ``what`` names the work in the log lines (``"poller: claim"``)."""

    what: str
    first: float = FIRST_PAUSE_SECONDS
    cap: float = MAX_PAUSE_SECONDS
    clock: Callable[[], float] = time.monotonic
    _pause: float = field(init=False)
    _failing_since: float | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._pause = self.first

    @property
    def failing(self) -> bool:
        """Whether the last try failed."""
        return self._failing_since is not None

    def failed(self, error: BaseException, took: float) -> float:
        """A try that took ``took`` seconds failed with ``error``: how long to wait before the
        next (its pause less what the try already waited)."""
        if self._failing_since is None:
            self._failing_since = self.clock() - took
            log.warning(
                "%s: backend unavailable, trying again: %s",
                self.what,
                error,
                extra={"event": "backend_unavailable", "error": str(error)},
            )
        else:
            log.debug("%s: backend still unavailable: %s", self.what, error)
        pause = max(0.0, self._pause - took)
        self._pause = min(self._pause * 2, self.cap)
        return pause

    def succeeded(self) -> None:
        """A try succeeded: the next failure starts from the first pause again."""
        self._pause = self.first
        if self._failing_since is not None:
            away = self.clock() - self._failing_since
            self._failing_since = None
            log.info(
                "%s: backend available again after %.1f s",
                self.what,
                away,
                extra={"event": "backend_recovered", "duration_ms": round(away * 1000.0)},
            )

    def call(self, work: Callable[[], T], stop: Stop, until: float | None = None) -> T:
        """``work()`` until it does not raise ``Transient``, pausing between tries. Gives up,
        raising the last error, when a stop is requested or when the next try would start
        after ``until`` (a ``clock`` time: while a lease or a message's visibility holds)."""
        while True:
            started = self.clock()
            try:
                result = work()
            except Transient as exc:
                pause = self.failed(exc, self.clock() - started)
                if until is not None and self.clock() + pause >= until:
                    raise
                if stop.wait(pause):
                    raise
                continue
            self.succeeded()
            return result
