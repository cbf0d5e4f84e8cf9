"""Schedule definitions opened once per revision.

Opening a stored definition (parsing it, and unsealing its secret parts) was a fifth of the
executor's version check. A revision names one definition for good (a change is a new
revision; a pause, resume or delete changes the state, not the definition), so a definition
opened for a revision can serve every later check of it, however the schedule's state moves.

The cache keeps recurring definitions only: a one-time schedule fires once per revision (its
retries aside), so keeping it would only churn the cache and the collector's heap.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from shared.model import ScheduleDefinition
from shared.notations import notation_of
from shared.timing import Timing

if TYPE_CHECKING:
    # Only named: the codec (through shared.schedule_listing) imports the ports, which name
    # this module.
    from shared.definition_codec import DefinitionCodec

# Definitions kept, the most recently used: the recurring schedules an executor fires often.
DEFAULT_SIZE = 2048

# (tenant, schedule id, revision)
Key = tuple[str, str, int]


class DefinitionCache:
    """A bounded map from a revision to its opened definition, least recently used out first.
    For one thread at a time (the executor's begin thread)."""

    def __init__(self, size: int = DEFAULT_SIZE) -> None:
        self.size = size
        self._opened: OrderedDict[Key, ScheduleDefinition] = OrderedDict()

    def __len__(self) -> int:
        return len(self._opened)

    def opened(
        self, key: Key, open_: Callable[[], ScheduleDefinition | None]
    ) -> ScheduleDefinition | None:
        """The definition of revision ``key``: kept from before, or ``open_()`` now (``None``:
        it could not be opened, and nothing is kept)."""
        found = self._opened.get(key)
        if found is not None:
            self._opened.move_to_end(key)
            return found
        definition = open_()
        if definition is not None and not _fires_once(definition.timing):
            self._opened[key] = definition
            if len(self._opened) > self.size:
                self._opened.popitem(last=False)
        return definition


def _fires_once(timing: Timing) -> bool:
    notation = notation_of(timing)
    return timing.max_occurrences == 1 or notation.is_one_time({notation.form: timing.value})


def open_definition(
    definitions: DefinitionCodec, stored: str | None, key: Key, cache: DefinitionCache | None
) -> ScheduleDefinition | None:
    """A stored definition (its text; ``None`` for a tombstone), opened, or taken from
    ``cache`` when it holds revision ``key``."""
    if stored is None:
        return None
    if cache is None:
        return definitions.decode(stored)
    return cache.opened(key, lambda: definitions.decode(stored))
