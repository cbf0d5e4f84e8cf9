"""Clocks for tests that need time to stand still or move on command."""

from __future__ import annotations

from datetime import datetime

from shared.ports import Clock


class FixedClock(Clock):
    """Always the same instant (``current``, which a test may set)."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        return self.current
