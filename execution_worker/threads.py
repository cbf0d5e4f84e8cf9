"""The hand-off from the event loop to a thread: one named thread per kind of blocking work
(receiving, checking and beginning, settling), each given a batch at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class WorkThread:
    """A thread of its own for one kind of blocking work, started at its first hand-off."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, work: Callable[..., T], *arguments: Any) -> T:
        """``work(*arguments)`` on this thread; the loop awaits its result."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=self.name)
        return await asyncio.get_running_loop().run_in_executor(self._pool, work, *arguments)

    def shutdown(self) -> None:
        """Take no more work; what runs finishes on its own (the loop does not wait)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
