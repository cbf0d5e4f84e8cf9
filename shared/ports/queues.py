"""The queues' port: SQS's semantics (queue 1 mutations, queue 2 occurrences, dead letters)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from shared.errors import SchedulerError


@dataclass(frozen=True)
class OutgoingMessage:
    body: str
    delay_seconds: float = 0.0


@dataclass(frozen=True)
class ReceivedMessage:
    message_id: str
    body: str
    receipt_handle: str
    receive_count: int
    sent_at: datetime | None = None


@dataclass(frozen=True)
class QueueDepth:
    visible: int
    in_flight: int
    delayed: int


class MessageTooLarge(SchedulerError):
    """A message over the queue's size limit: the queue refuses it, whenever it is sent."""

    def __init__(self, queue: str, size: int, limit: int) -> None:
        super().__init__(f"a message of {size} bytes is over the {limit}-byte limit of {queue!r}")
        self.size = size
        self.limit = limit


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """Which queue a ``MessageQueue`` is: its ``name``, and the queue a message received more
    than ``max_receives`` times goes to instead (``dead_letter_queue``; ``None``: it stays)."""

    name: str
    dead_letter_queue: str | None = None
    max_receives: int = 20


class MessageQueue(ABC):
    """A queue with SQS's semantics.

    A received message is invisible for its visibility timeout and comes back if it is not
    deleted; ``receive_count`` counts its deliveries; a delayed message is invisible until its
    delay passes; a message received more than the queue's ``max_receives`` goes to its
    dead-letter queue instead. Delivery is at least once; order is not guaranteed.
    """

    def __init__(self, spec: QueueSpec) -> None:
        self.spec = spec
        self.name = spec.name

    @abstractmethod
    def send(self, messages: Sequence[OutgoingMessage]) -> None:
        """Enqueue messages (in batches as the backend allows); all or an exception.

        ``MessageTooLarge`` (and nothing sent) when one is over the queue's size limit.
        """

    @abstractmethod
    def receive(
        self, max_messages: int, wait_seconds: float, visibility_timeout: float
    ) -> list[ReceivedMessage]:
        """Up to ``max_messages`` visible messages, waiting at most ``wait_seconds`` for one."""

    @abstractmethod
    def delete(self, receipt_handles: Sequence[str]) -> None:
        """Remove received messages for good. Unknown or stale receipts are ignored."""

    @abstractmethod
    def change_visibility(self, receipt_handle: str, timeout_seconds: float) -> None:
        """Make a received message visible again ``timeout_seconds`` from now."""

    @abstractmethod
    def change_visibilities(self, changes: Sequence[tuple[str, float]]) -> None:
        """``change_visibility`` for each ``(receipt_handle, timeout_seconds)``, in as few
        requests as the backend allows. Unknown or stale receipts are ignored."""

    @abstractmethod
    def create(self) -> None:
        """Create the queue, and its link to the dead-letter queue, if missing (idempotent)."""

    @abstractmethod
    def depth(self) -> QueueDepth:
        """Approximate counts of visible, in-flight and delayed messages."""

    @abstractmethod
    def close(self) -> None:
        """Release the clients this adapter created."""


@dataclass(frozen=True)
class Queues:
    """The queues of the pipeline: mutations (queue 1), occurrences (queue 2), dead letters."""

    mutations: MessageQueue
    occurrences: MessageQueue
    dead_letters: MessageQueue

    def close(self) -> None:
        for queue in (self.mutations, self.occurrences, self.dead_letters):
            queue.close()
