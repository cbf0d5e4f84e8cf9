"""The execution records' port: one lasting record per occurrence."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from shared.model import AttemptOutcome, Execution, ExecutionStatus, Occurrence
from shared.ports.pages import Page


@dataclass(frozen=True, slots=True)
class HistoryRequest:
    """A page of a schedule's history (``ExecutionStore.list_executions``): at most ``limit``
    records, after ``cursor`` (a page's ``next_cursor``); with ``status``, those in it, else
    its runs."""

    tenant: str
    schedule_id: str
    limit: int
    cursor: str | None = None
    status: ExecutionStatus | None = None


@dataclass(frozen=True, slots=True)
class DeadLetterRequest:
    """A page of a tenant's dead letters (``ExecutionStore.list_dead_letters``): at most
    ``limit``, after ``cursor`` (a page's ``next_cursor``); only those of ``schedule_ids`` when
    given (none if empty)."""

    tenant: str
    limit: int
    cursor: str | None = None
    schedule_ids: Collection[str] | None = None


class ExecutionStore(ABC):
    """The lasting record of every occurrence, one record per ``(tenant, occurrence_id)``."""

    def begin_attempt(
        self, occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
    ) -> Execution | None:
        """``begin_attempts`` of one."""
        return self.begin_attempts([occurrence], owner, now, lease_until)[0]

    @abstractmethod
    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        """Atomically take the right to make the next attempt of each occurrence, in order.

        Creates the record (``RUNNING``, attempt 1) or moves a ``RETRYING``/``SKIPPED`` one, or a
        ``RUNNING`` one whose lease expired (its executor died), to ``RUNNING`` with one more
        attempt. ``None`` at a position when the occurrence is final (``SUCCEEDED``/``FAILED``,
        or ``SKIPPED`` for good: not superseded, and this is not a manual run of it, such as a
        backfill), another executor holds a live lease, or an earlier position of the batch
        took it: the caller must not fire it. One write for the batch where the backend allows
        it.
        """

    @abstractmethod
    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        """Record how the attempt ended, if ``owner`` still holds it, and add it to the end of
        the record's ``attempt_log`` (which keeps the last ``KEPT_ATTEMPTS``), in the same
        write. Returns whether recorded."""

    @abstractmethod
    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        """Record occurrences as ``SKIPPED``, each with its reason.

        A record that exists is changed only while it is ``RETRYING``, or ``RUNNING`` with a
        lease that ended before ``now`` (its executor died); a live run, a succeeded, failed or
        skipped occurrence keeps its record. Returns how many records were written.

        ``superseded``: the occurrences were sent ahead of their time and a change, pause or
        delete of their schedule came after. The records this creates are marked
        ``superseded`` (not runs: ``list_executions`` shows them only when asked for
        ``SKIPPED``), and each schedule's ``superseded_count`` grows by as many, in the same
        call. A record that existed (a run that retried) is skipped but stays a run.
        """

    @abstractmethod
    def get_execution(self, tenant: str, occurrence_id: str) -> Execution | None:
        """One occurrence's record, with its ``attempt_log``; a record written before attempts
        were kept gives its last attempt from its own fields."""

    @abstractmethod
    def recorded_occurrences(
        self, tenant: str, schedule_id: str, occurrence_ids: Collection[str]
    ) -> set[str]:
        """Those of ``occurrence_ids`` of the schedule that have an execution record: an
        attempt begun, or skipped (``shared.lateness``: not late)."""

    @abstractmethod
    def list_executions(self, history: HistoryRequest) -> Page[Execution]:
        """A schedule's records, newest scheduled time first: with ``status``, those in it
        (superseded ones too, for ``SKIPPED``); without, its runs: every record but the
        superseded. Each page costs what it lists (an index per selection), plus, without
        ``status``, the superseded records it passes over."""

    # -- dead letters: the occurrences that failed for good ------------------------------

    @abstractmethod
    def list_dead_letters(self, request: DeadLetterRequest) -> Page[Execution]:
        """The tenant's dead letters: records ``FAILED`` and not discarded, the latest failure
        (``finished_at``) first (``request``: ``DeadLetterRequest``)."""

    @abstractmethod
    def reopen_dead_letter(
        self, tenant: str, occurrence_id: str, now: datetime
    ) -> Execution | None:
        """Give a dead letter one more attempt: ``FAILED`` (not discarded) becomes
        ``RETRYING``, due ``now``, so ``begin_attempt`` takes it (one attempt more); the last
        outcome stays until that attempt ends. Atomic: of concurrent reopens one wins. Returns
        the record as reopened; ``None`` if it is not a dead letter."""

    @abstractmethod
    def restore_dead_letter(self, reopened: Execution) -> bool:
        """Undo ``reopen_dead_letter`` (its message could not be sent): ``FAILED`` again, only
        while the record is ``RETRYING`` with no attempt begun since. Returns whether undone."""

    @abstractmethod
    def discard_dead_letter(self, tenant: str, occurrence_id: str, now: datetime) -> bool:
        """Take a dead letter off the list for good (it stays ``FAILED`` in the history, and
        can no longer be reopened). Returns whether it was a dead letter."""
