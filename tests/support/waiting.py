"""Waiting for what a test expects to happen: short real intervals, a deadline, never a sleep
that guesses."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    probe: Callable[[], T],
    timeout: float = 10.0,
    what: str | None = None,
    tolerating: tuple[type[Exception], ...] = (),
) -> T:
    """``probe()``'s first answer that is not falsy, tried every 50 ms; ``AssertionError``
    saying ``what`` (or naming the probe) when none came within ``timeout`` seconds. The
    exceptions in ``tolerating`` count as "not yet" until the deadline, then propagate."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = probe()
        except tolerating:
            if time.monotonic() > deadline:
                raise
        else:
            if answer:
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout}s: {what or probe}")
        time.sleep(0.05)
