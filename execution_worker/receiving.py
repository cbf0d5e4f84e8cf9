"""Receiving, on the executor's receive thread: messages from queue 2 become occurrences to hold.

Each receive takes up to ``receive_batch_size`` messages, made invisible to other executors for
as long as they are held and fired: long enough for a message that arrives when expected
(``dispatch_lead_seconds`` before its time, rounded down to whole seconds) to be held, fired
and given the execution lease of a call with the default timeout, without another visibility
change. A message that cannot be decoded is poison: it goes to the dead-letter queue. A
long-delayed retry received well before its time is sent on (``execution_worker.settler.defer``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from execution_worker.settler import defer
from execution_worker.timer import DEFAULT_CALL_SECONDS, FIRE_SLACK_SECONDS
from shared.errors import PoisonMessage
from shared.messages import decode_occurrence
from shared.model import Occurrence
from shared.ports import Clock, MessageQueue, OutgoingMessage, ReceivedMessage
from shared.settings import Settings

# Receive calls one thread hop makes at most, while the queue gives full batches.
RECEIVES_PER_HOP = 10

# An occurrence to hold, its message, and when the message becomes visible to others again.
ToHold = tuple[Occurrence, ReceivedMessage, datetime]


@dataclass
class Received:
    """What receiving gives the loop: occurrences to hold, and why each poison message (now
    dead-lettered) could not be decoded."""

    to_hold: list[ToHold] = field(default_factory=list)
    poisoned: list[str] = field(default_factory=list)


class Receiving:
    def __init__(
        self,
        occurrences: MessageQueue,
        dead_letters: MessageQueue,
        settings: Settings,
        clock: Clock,
    ) -> None:
        self.occurrences = occurrences
        self.dead_letters = dead_letters
        self.batch_size = settings.receive_batch_size
        self.clock = clock
        # What a held occurrence needs past its time: the execution lease of a call with the
        # default timeout, and a little slack for a late start.
        self.hold_past_due = timedelta(
            seconds=settings.execution_lease_margin_seconds
            + DEFAULT_CALL_SECONDS
            + FIRE_SLACK_SECONDS
        )
        self.visibility = settings.dispatch_lead_seconds + 1.0 + self.hold_past_due.total_seconds()

    def receive_batches(self, wait_seconds: float, room: int) -> Received:
        """``receive_batch`` again while the queue gives full batches and there is room: one
        thread hop for many batches when the queue is busy."""
        received = self.receive_batch(wait_seconds)
        for _ in range(RECEIVES_PER_HOP - 1):
            held = len(received.to_hold)
            if held % self.batch_size or held + self.batch_size > room:
                break
            more = self.receive_batch(0.0)
            received.poisoned += more.poisoned
            if not more.to_hold:
                break
            received.to_hold += more.to_hold
        return received

    def receive_batch(self, wait_seconds: float) -> Received:
        """Receive messages and make each invisible for as long as it is held; dead-letter
        those that cannot be decoded, and send long-delayed retries on (``defer``)."""
        messages = self.occurrences.receive(self.batch_size, wait_seconds, self.visibility)
        now = self.clock.now()
        received = Received()
        for message in messages:
            try:
                occurrence = decode_occurrence(message.body)
            except PoisonMessage as exc:
                self.dead_letters.send([OutgoingMessage(message.body)])
                self.occurrences.delete([message.receipt_handle])
                received.poisoned.append(str(exc))
                continue
            due = occurrence.scheduled_time
            if occurrence.not_before is not None:
                due = max(due, occurrence.not_before)
                if due - now > timedelta(seconds=self.visibility):
                    defer(self.occurrences, occurrence, message.receipt_handle, due, now)
                    continue
            visible_at = now + timedelta(seconds=self.visibility)
            needed = max(due, now) + self.hold_past_due
            if needed > visible_at:
                self.occurrences.change_visibility(
                    message.receipt_handle, (needed - now).total_seconds()
                )
                visible_at = needed
            received.to_hold.append((occurrence, message, visible_at))
        return received
