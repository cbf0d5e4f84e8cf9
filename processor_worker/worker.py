"""The processor: consumes queue 1, computes ``next_schedule_time``, writes the store.

When the store is unreachable, a batch's write is tried again after a bounded backoff
(``shared.backoff``) that notices its return at once, while the batch's messages stay invisible;
only then do they come back to be received again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from shared.backoff import Backoff
from shared.calendar_reads import business_calendars
from shared.changes import Change
from shared.counts import Counts
from shared.errors import Transient
from shared.lifecycle import Shutdown
from shared.messages import DefinitionMutation, decode_mutation
from shared.metrics import MUTATIONS, PROCESSING, Heartbeat
from shared.notations import first_occurrence
from shared.ports import (
    Clock,
    MessageQueue,
    OutgoingMessage,
    ReceivedMessage,
    Store,
    SystemClock,
)
from shared.ports.spans import NoSpans, OpenSpan, SpanKind, Spans, SpanStart
from shared.recurrence import TooMuchWork
from shared.secrets import SecretBox
from shared.timeutil import iso_z

log = logging.getLogger(__name__)

VISIBILITY_TIMEOUT_SECONDS = 30.0
# A batch's write is tried again until this long before its messages become visible again.
VISIBILITY_MARGIN_SECONDS = 2.0


# What the processor counts (``Processor.stats``), each by its result in MUTATIONS; deferred:
# out of CPU budget, left on queue 1 for another try.
COUNTS = {
    result: [(MUTATIONS, result)] for result in ("applied", "ignored", "poisoned", "deferred")
}


class Processor:
    def __init__(
        self,
        store: Store,
        mutations: MessageQueue,
        dead_letters: MessageQueue,
        secrets: SecretBox,
        batch_size: int = 10,
        wait_seconds: float = 1.0,
        clock: Clock | None = None,
        on_applied: Callable[[], None] | None = None,
        spans: Spans | None = None,
    ) -> None:
        self.store = store
        self.spans = spans or NoSpans()
        self.mutations = mutations
        self.dead_letters = dead_letters
        self.secrets = secrets
        self.batch_size = batch_size
        self.wait_seconds = wait_seconds
        self.clock = clock or SystemClock()
        self.stats = Counts(COUNTS)
        self.on_applied = on_applied
        self.heartbeat = Heartbeat(max(30.0, 3 * wait_seconds))
        self.backoff = Backoff("processor")
        # Set when the process stops: ends a wait between tries.
        self.stopping = threading.Event()

    def run(self, shutdown: Shutdown) -> None:
        log.info("processor started", extra={"event": "processor_started"})
        shutdown.link(self.stopping)
        while not shutdown.is_set():
            self.heartbeat.beat()
            started = time.monotonic()
            try:
                self.process_batch(self.wait_seconds)
                self.backoff.succeeded()
            except Transient as exc:
                shutdown.wait(self.backoff.failed(exc, time.monotonic() - started))
            except Exception:
                # Whatever it is (a full disk, a refused permission), the loop goes on: the
                # messages of the batch come back after their visibility timeout.
                log.exception("processing failed", extra={"event": "processor_error"})
                shutdown.wait(1.0)
        log.info("processor stopped", extra={"event": "processor_stopped"})

    def process_batch(self, wait_seconds: float = 0.0) -> int:
        """Apply up to one batch of mutations; returns how many messages were handled."""
        messages = self.mutations.receive(self.batch_size, wait_seconds, VISIBILITY_TIMEOUT_SECONDS)
        visible_again = time.monotonic() + VISIBILITY_TIMEOUT_SECONDS - VISIBILITY_MARGIN_SECONDS
        done: list[str] = []
        applied_before = self.stats.applied
        started = time.perf_counter()
        read: list[tuple[ReceivedMessage, DefinitionMutation]] = []
        for message in messages:
            try:
                read.append((message, decode_mutation(message.body, self.secrets)))
            except Exception as exc:
                done.append(self._poisoned(message, exc))
        # The calendars the definitions name, read together (shared.calendar_reads).
        calendars = self.backoff.call(
            lambda: business_calendars(
                self.store,
                (((item.tenant, item.schedule_id), item.definition.calendar) for _, item in read),
            ),
            self.stopping,
            visible_again,
        )
        decoded: list[tuple[str, DefinitionMutation, datetime | None]] = []
        for message, mutation in read:
            try:
                # Within the CPU budget.
                next_time = first_occurrence(
                    mutation.definition.timing,
                    mutation.accepted_at,
                    mutation.schedule_id,
                    calendars.get((mutation.tenant, mutation.schedule_id)),
                )
            except TooMuchWork as exc:
                # The API computed this very time within the same budget before it accepted
                # the definition: out of budget here is this moment's doing, not the rule's.
                # The message comes back after its visibility timeout (and goes to the
                # dead letters once received too often).
                self._left_for_later(mutation, exc)
                continue
            except Exception as exc:
                done.append(self._poisoned(message, exc))
                continue
            decoded.append((message.receipt_handle, mutation, next_time))
        # The batch's definitions in one write (one command on MongoDB for new schedules), tried
        # again while the messages stay invisible. Written twice, a definition is ignored the
        # second time: its revision is not newer than the stored one. Their changes first, in
        # one write too: a definition stored always has its change recorded (kept once however
        # often written, by schedule and revision). A change whose definition a newer one
        # overtook is recorded all the same: it was accepted, at its revision.
        changes = [
            Change.of(
                mutation.tenant,
                mutation.schedule_id,
                mutation.revision,
                mutation.accepted_at,
                mutation.change,
            )
            for _, mutation, _ in decoded
            if mutation.change is not None
        ]
        # Recorded, each definition's span is the parent its occurrences continue.
        spans = [self._span(mutation) for _, mutation, _ in decoded] if self.spans.recording else []
        definitions = [
            (
                mutation.tenant,
                mutation.schedule_id,
                mutation.revision,
                replace(mutation.definition, trace=spans[index].context)
                if spans
                else mutation.definition,
                next_time,
                mutation.accepted_at,
            )
            for index, (_, mutation, next_time) in enumerate(decoded)
        ]

        def write() -> list[bool]:
            self.store.record_changes(changes)
            return self.store.apply_definitions(definitions)

        try:
            results = self.backoff.call(write, self.stopping, visible_again)
        except BaseException as exc:
            for span in spans:
                span.end(f"not stored: {type(exc).__name__}")
            raise
        for span, applied in zip(spans, results, strict=False):
            span.set({"scheduler.applied": applied})
            span.end()
        for (receipt, mutation, next_time), applied in zip(decoded, results, strict=True):
            self.stats.add("applied" if applied else "ignored")
            log.info(
                "definition %s",
                "applied" if applied else "ignored (a newer one is stored)",
                extra={
                    "event": "definition_applied" if applied else "definition_ignored",
                    **_about(mutation),
                    "next_schedule_time": iso_z(next_time) if next_time else None,
                },
            )
            done.append(receipt)
        self.mutations.delete(done)
        if messages:
            PROCESSING.labels("processor", "batch").observe(time.perf_counter() - started)
        if self.stats.applied > applied_before and self.on_applied is not None:
            self.on_applied()
        return len(messages)

    def _poisoned(self, message: ReceivedMessage, exc: Exception) -> str:
        """Dead-letter a message that cannot be decoded, or whose time cannot be computed
        (whatever the library raised): it never holds back the mutations beside it. Returns its
        receipt, to delete."""
        log.error("poison message on queue 1: %s", exc, extra={"event": "poison_message"})
        self.dead_letters.send([OutgoingMessage(message.body)])
        self.stats.add("poisoned")
        return message.receipt_handle

    def _left_for_later(self, mutation: DefinitionMutation, exc: TooMuchWork) -> None:
        self.stats.add("deferred")
        log.warning(
            "definition left for a later try: %s",
            exc,
            extra={"event": "definition_deferred", **_about(mutation)},
        )

    def _span(self, mutation: DefinitionMutation) -> OpenSpan:
        return self.spans.begin(
            SpanStart(
                "schedule process",
                SpanKind.CONSUMER,
                mutation.definition.trace,
                {
                    "scheduler.tenant": mutation.tenant,
                    "scheduler.schedule.id": mutation.schedule_id,
                    "scheduler.revision": mutation.revision,
                },
            )
        )


def _about(mutation: DefinitionMutation) -> dict[str, object]:
    """What a log line about ``mutation`` says of it."""
    return {
        "tenant": mutation.tenant,
        "schedule_id": mutation.schedule_id,
        "revision": mutation.revision,
    }
