"""The held occurrences: received from queue 2, waiting for their moment; the due ones,
waiting for room among the calls in flight; and the times that govern holding and firing them.

``HeldOccurrences`` is a heap ordered by due time, then priority (higher first), then arrival.
``DueOccurrences`` gives the due ones to the calls by urgency: when the executor is behind
(more is due than it has room to call), the highest priority first, each priority level worth
``PRIORITY_STEP`` of lateness (docs/architecture.md, "Priority under a backlog"). Both are used
by the executor's event loop only, so they need no lock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from shared.model import Occurrence, Payload, Schedule
from shared.ports import ReceivedMessage

# A call's timeout unless its schedule sets another: the receive visibility covers it.
DEFAULT_CALL_SECONDS: float = Payload.timeout_seconds
# How late a fire may start and still need no visibility change; also how long after a lease
# ends its message comes back.
FIRE_SLACK_SECONDS = 1.0
FIRE_SLACK = timedelta(seconds=FIRE_SLACK_SECONDS)
# Occurrences due this soon are checked and begun together, then each is called at its
# moment: the thread hop's latency is hidden, and the batches grow with the load.
PREPARE_AHEAD = timedelta(milliseconds=20)
# A batch goes when its earliest occurrence is this close to its moment (the most the hop to
# the begin thread may take without making it late), with everything due within
# ``PREPARE_AHEAD``: the occurrences of the 10 ms after the earliest go together, at every rate.
CHECK_LEAD = timedelta(milliseconds=10)
# What one level of priority is worth in lateness when the executor is behind: a due
# occurrence goes before those of lower priority unless they are due this much earlier per
# level between them. An occurrence is overtaken only by those due less than 9 steps after it.
PRIORITY_STEP = timedelta(seconds=60)


@dataclass(order=True)
class Held:
    """An occurrence held until ``due``; its message is invisible to others until ``visible_at``."""

    due: datetime
    rank: tuple[int, int]
    occurrence: Occurrence = field(compare=False)
    message: ReceivedMessage = field(compare=False)
    visible_at: datetime = field(compare=False)
    # Its schedule as the last version check read it, and when: set when the check passed but
    # its host had no free call slot (it waits parked, and may go without reading again).
    checked: tuple[Schedule, datetime] | None = field(default=None, compare=False)
    # The start and lease end of each begin the store failed: one whose write went through
    # (its answer lost) left a record this delivery may take as its own (``CheckAndBegin``).
    begin_tried: tuple[tuple[datetime, datetime], ...] = field(default=(), compare=False)


class HeldOccurrences:
    def __init__(self) -> None:
        self._heap: list[Held] = []
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def hold(self, occurrence: Occurrence, message: ReceivedMessage, visible_at: datetime) -> Held:
        """Hold an occurrence until its time (a long-delayed retry: until ``not_before``)."""
        due = occurrence.scheduled_time
        if occurrence.not_before is not None:
            due = max(due, occurrence.not_before)
        item = Held(
            due, (-occurrence.priority, next(self._sequence)), occurrence, message, visible_at
        )
        heapq.heappush(self._heap, item)
        return item

    def put_back(self, items: Iterable[Held]) -> None:
        for item in items:
            heapq.heappush(self._heap, item)

    def next_due(self) -> datetime | None:
        return self._heap[0].due if self._heap else None

    def pop_due(self, now: datetime) -> list[Held]:
        """Every occurrence due at ``now``, earliest (then highest priority) first."""
        due: list[Held] = []
        while self._heap and self._heap[0].due <= now:
            due.append(heapq.heappop(self._heap))
        return due

    def take_all(self) -> list[Held]:
        held, self._heap = self._heap, []
        return held


_FIRST = datetime.min.replace(tzinfo=UTC)


class DueOccurrences:
    """The due occurrences waiting for room among the calls, most urgent first: by their due
    time less ``PRIORITY_STEP`` per level of priority, then arrival. Those put back (due again
    after a store failure, handed back by their host's slot) go before all the others, in
    their order."""

    def __init__(self) -> None:
        # (put back first: 0, urgency, sequence, item); put back items count their sequence
        # down, so the latest put back go first.
        self._heap: list[tuple[int, datetime, int, Held]] = []
        self._sequence = itertools.count()
        self._front = 0

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Held]:
        return (entry[3] for entry in self._heap)

    def add(self, items: Iterable[Held]) -> None:
        for item in items:
            urgency = item.due - item.occurrence.priority * PRIORITY_STEP
            heapq.heappush(self._heap, (1, urgency, next(self._sequence), item))

    def put_back(self, items: Sequence[Held]) -> None:
        """Before every other, in their order."""
        self._front -= len(items)
        for offset, item in enumerate(items):
            heapq.heappush(self._heap, (0, _FIRST, self._front + offset, item))

    def take(self, count: int) -> list[Held]:
        """The ``count`` most urgent (fewer if fewer are due)."""
        return [heapq.heappop(self._heap)[3] for _ in range(min(count, len(self._heap)))]

    def clear(self) -> None:
        self._heap.clear()
