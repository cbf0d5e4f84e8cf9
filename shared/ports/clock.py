"""The clock every process reads the time from (tests inject their own)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime

from shared.timeutil import UTC, utc_ms


class Clock(ABC):
    @abstractmethod
    def now(self) -> datetime:
        """The current instant, aware UTC, to the millisecond."""


class SystemClock(Clock):
    def now(self) -> datetime:
        return utc_ms(datetime.now(UTC))
