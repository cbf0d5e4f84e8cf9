"""Definitions opened once per revision (``shared.definition_cache``), without a store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.definition_cache import DefinitionCache
from shared.model import Every, Payload, ScheduleDefinition, Timing, Unit

RECURRING = ScheduleDefinition(
    timing=Timing(timezone="UTC", interval=Every(1, Unit.MINUTE)),
    payload=Payload("POST", "https://hooks.example.com/x"),
)
ONCE = ScheduleDefinition(
    timing=Timing(timezone="UTC", at=datetime(2030, 1, 1, tzinfo=UTC)),
    payload=Payload("POST", "https://hooks.example.com/x"),
)


class Opener:
    """Opens ``definition``, counting how often it was asked to."""

    def __init__(self, definition: ScheduleDefinition) -> None:
        self.definition = definition
        self.count = 0

    def __call__(self) -> ScheduleDefinition:
        self.count += 1
        return self.definition


def test_a_recurring_definition_is_opened_once_per_revision() -> None:
    cache = DefinitionCache()
    opener = Opener(RECURRING)
    for _ in range(3):
        assert cache.opened(("t", "s", 1), opener) is RECURRING
    assert opener.count == 1
    cache.opened(("t", "s", 2), opener)
    assert opener.count == 2


ONE_OCCURRENCE = ScheduleDefinition(
    timing=Timing(timezone="UTC", interval=Every(1, Unit.MINUTE), max_occurrences=1),
    payload=Payload("POST", "https://hooks.example.com/x"),
)


@pytest.mark.parametrize("once", [ONCE, ONE_OCCURRENCE])
def test_a_definition_that_fires_once_is_not_kept(once: ScheduleDefinition) -> None:
    cache = DefinitionCache()
    opener = Opener(once)
    cache.opened(("t", "s", 1), opener)
    cache.opened(("t", "s", 1), opener)
    assert opener.count == 2 and len(cache) == 0


def test_the_least_recently_used_goes_first_past_the_bound() -> None:
    cache = DefinitionCache(size=2)
    opener = Opener(RECURRING)
    cache.opened(("t", "a", 1), opener)
    cache.opened(("t", "b", 1), opener)
    cache.opened(("t", "a", 1), opener)  # a used again: b is now the oldest
    cache.opened(("t", "c", 1), opener)
    assert len(cache) == 2 and opener.count == 3
    cache.opened(("t", "a", 1), opener)
    assert opener.count == 3
    cache.opened(("t", "b", 1), opener)
    assert opener.count == 4
