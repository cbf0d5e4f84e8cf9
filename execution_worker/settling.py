"""Settling, on the executor's event loop: the attempts that ended, and the messages to delete,
gathered into batches for the settler's thread (``execution_worker.settler``).

Outcomes that end within ``SETTLE_LINGER_SECONDS`` of each other go together, up to
``SETTLE_BATCH``: one ``settle_attempts`` and one delete for the lot. Until recorded, an outcome
counts against what the executor may hold (``pending``), so a slow store slows receiving. Each
batch is reported to the observer as it is handed over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from execution_worker.observer import ExecutorObserver
from execution_worker.settler import Settled, Settler

# Runs a blocking call on the settle thread: ``await on_thread(function, *arguments)``.
OnThread = Callable[..., Awaitable[Any]]

# Outcomes are recorded, and settled messages deleted, together: up to this many, or after
# this long.
SETTLE_BATCH = 200
SETTLE_LINGER_SECONDS = 0.02


class Settling:
    def __init__(self, settler: Settler, observer: ExecutorObserver) -> None:
        self.settler = settler
        self.observer = observer
        self._outcomes: list[Settled] = []
        self._to_delete: list[str] = []
        self._settling = 0
        self._arrived: asyncio.Event | None = None

    @property
    def pending(self) -> int:
        """Outcomes not recorded yet."""
        return len(self._outcomes) + self._settling

    def add(self, settled: Settled) -> None:
        self._outcomes.append(settled)
        if self._arrived is not None:
            self._arrived.set()

    def delete(self, receipts: list[str]) -> None:
        """Delete messages whose occurrence needs nothing more (skipped, duplicates)."""
        if receipts:
            self._to_delete.extend(receipts)
            if self._arrived is not None:
                self._arrived.set()

    def take(self) -> tuple[list[Settled], list[str]]:
        """The outcomes and deletions not handed over yet, reported to the observer."""
        outcomes, self._outcomes = self._outcomes, []
        to_delete, self._to_delete = self._to_delete, []
        if outcomes:
            self.observer.settling(outcomes)
        return outcomes, to_delete

    async def run(self, stopping: asyncio.Event, on_thread: OnThread) -> None:
        """Hand what arrives to the settler until ``stopping`` is set and nothing is left; the
        settler's store and queue calls run through ``on_thread``."""
        self._arrived = arrived = asyncio.Event()
        while True:
            if not (self._outcomes or self._to_delete):
                if stopping.is_set():
                    return
                arrived.clear()
                waiter = asyncio.ensure_future(arrived.wait())
                stopper = asyncio.ensure_future(stopping.wait())
                await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
                stopper.cancel()
                continue
            if len(self._outcomes) + len(self._to_delete) < SETTLE_BATCH:
                await asyncio.sleep(SETTLE_LINGER_SECONDS)  # a moment for more to arrive
            outcomes, to_delete = self.take()
            self._settling = len(outcomes)
            try:
                await on_thread(self.settler.settle_now, outcomes, to_delete)
            except Exception:
                self.observer.settle_failed()
            finally:
                self._settling = 0
