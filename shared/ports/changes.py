"""The change history's port: each schedule's changes (``shared.changes``), kept as long as its
runs are, and read newest first."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from shared.changes import Change
from shared.ports.pages import Page


class ChangeStore(ABC):
    """A schedule's changes. A change is keyed by its tenant, schedule and ``seq``: written again
    (a retried batch, a redelivered message), it is kept once, as first written."""

    @abstractmethod
    def record_changes(self, changes: Sequence[Change]) -> None:
        """Keep ``changes``, in one write (one command on MongoDB) whatever their number; those
        already kept are left as they are."""

    @abstractmethod
    def list_changes(
        self, tenant: str, schedule_id: str, limit: int, cursor: str | None
    ) -> Page[Change]:
        """The schedule's changes, newest (highest ``seq``) first, ``limit`` at most; ``cursor``
        is a page's ``next_cursor`` (``shared.formats.change_cursor``). Never another tenant's;
        a deleted schedule's changes too, until retention removes them."""

    @abstractmethod
    def purge_changes(self, before: datetime, limit: int) -> int:
        """Delete at most ``limit`` changes made before ``before``; returns how many. A backend
        that expires them by itself (MongoDB: a TTL index that follows the execution retention
        setting) returns ``0``."""
