"""Every store port over one backend."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from shared.model import AttemptOutcome, Execution
from shared.ports.calendars import CalendarStore
from shared.ports.changes import ChangeStore
from shared.ports.executions import ExecutionStore
from shared.ports.keys import ApiKeyStore, IdempotencyStore
from shared.ports.schedules import ScheduleStore
from shared.ports.signing_secrets import SigningSecretStore


class Store(
    ScheduleStore,
    ExecutionStore,
    IdempotencyStore,
    ApiKeyStore,
    SigningSecretStore,
    CalendarStore,
    ChangeStore,
):
    """Every store port over one backend: every store adapter implements this."""

    @abstractmethod
    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        """``finish_attempt`` for each, and ``record_run`` for each final outcome it recorded
        (a schedule whose failures reach its ``pause_after_failures`` pauses itself), in one
        write for the outcomes and one for the run counts where the backend allows it.

        Returns, in order, whether each outcome was recorded (``owner`` still held the attempt);
        an outcome that was not recorded is not counted on its schedule either. A settle that
        failed part-way and is tried again records and counts each outcome once (an adapter
        that writes them apart says ``True`` for those its failed try recorded).
        """
