"""The calls of ``SchedulerClient`` on dead letters: list, replay, discard."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast
from urllib.parse import quote

from scheduler_client._transport import Transport
from scheduler_client.types import DeadLetter, DeadLetterPage, Discarded, Replayed


class DeadLetters(Transport):
    def dead_letters(self, *, limit: int | None = None) -> Iterator[DeadLetter]:
        """The occurrences that failed for good, the latest failure first, a page at a time."""
        for item in self._pages("/dead-letters", {"limit": limit}):
            yield cast(DeadLetter, item)

    def dead_letters_page(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> DeadLetterPage:
        """One page of ``dead_letters`` and its ``next_cursor``."""
        return cast(DeadLetterPage, self._page("/dead-letters", {"limit": limit}, cursor))

    def replay(self, occurrence_id: str) -> Replayed:
        """Fire a dead letter again (same occurrence id and ``Idempotency-Key``), recorded as
        one more attempt. Not repeated once sent: a repeat of one that was applied is a 404."""
        path = f"/dead-letters/{quote(occurrence_id, safe='')}/replay"
        return cast(Replayed, self._call("POST", path, idempotent=False))

    def discard(self, occurrence_id: str) -> Discarded:
        """Take a dead letter off the list for good (its record stays in the history)."""
        path = f"/dead-letters/{quote(occurrence_id, safe='')}"
        return cast(Discarded, self._call("DELETE", path, idempotent=False))
