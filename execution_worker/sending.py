"""Calls in flight per destination (``DeliveryTarget.destination``: an HTTP target's host): at
most a limit per host, so one slow endpoint cannot take every slot of the executor. Occurrences
over the limit wait their turn, first come first served, and are called as soon as a call to
their host ends (their lateness is recorded as usual)."""

from __future__ import annotations

import threading
from collections import defaultdict, deque
from typing import Generic, TypeVar

T = TypeVar("T")


class HostLimits(Generic[T]):
    """Counts calls in flight per destination; parks what is over its limit. Thread-safe: the
    executor takes slots off the loop (with the version check) and gives them back on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[str, int] = defaultdict(int)
        self._waiting: dict[str, deque[T]] = defaultdict(deque)
        # Items ``release`` handed back (by identity): first in line when they come again.
        self._handed_back: set[int] = set()

    def take(self, host: str, limit: int, item: T) -> bool:
        """Take a slot for ``item``; if ``host`` has ``limit`` calls in flight, park it instead
        (``False``): ``release`` hands it back when a slot frees, and then it goes first."""
        with self._lock:
            handed_back = id(item) in self._handed_back
            self._handed_back.discard(id(item))
            waiting = self._waiting[host]
            if self._in_flight[host] < limit and (handed_back or not waiting):
                self._in_flight[host] += 1
                return True
            if handed_back:
                waiting.appendleft(item)
            else:
                waiting.append(item)
            return False

    def release(self, host: str) -> T | None:
        """End a call to ``host``; the next parked item for it, if any, to try again."""
        with self._lock:
            self._in_flight[host] -= 1
            if self._in_flight[host] <= 0:
                del self._in_flight[host]
            waiting = self._waiting.get(host)
            if not waiting:
                self._waiting.pop(host, None)
                return None
            item = waiting.popleft()
            self._handed_back.add(id(item))
            return item

    def parked(self) -> int:
        with self._lock:
            return sum(len(items) for items in self._waiting.values())

    def take_all_parked(self) -> list[T]:
        with self._lock:
            items = [item for waiting in self._waiting.values() for item in waiting]
            self._waiting.clear()
            self._handed_back.clear()
            return items
