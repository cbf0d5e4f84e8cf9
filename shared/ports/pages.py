"""A page of a listing, and the cursor of a page of execution records."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from shared.formats import execution_cursor
from shared.model import Execution

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None


def execution_page(
    found: Sequence[Execution], limit: int, moment: Callable[[Execution], datetime | None]
) -> Page[Execution]:
    """The first ``limit`` records of ``found`` (read one past the limit, to learn whether
    more exist), with a cursor naming the last one's ``moment`` and occurrence id: what every
    store's records are ordered by, newest first (``parse_execution_cursor`` reads it back)."""
    items = list(found[:limit])
    at = moment(items[-1]) if items else None
    if len(found) <= limit or at is None:
        return Page(items)
    return Page(items, execution_cursor(at, items[-1].occurrence_id))
