"""The store rules every adapter keeps (``shared.store_rules``), without a store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.model import Execution, ExecutionStatus, ScheduleStatus
from shared.store_rules import (
    attempt_lateness_ms,
    is_key_id,
    state_change_source,
    status_after_definition,
    status_by_next_time,
    takes_definition,
)
from shared.timeutil import from_epoch_ms, maybe, to_epoch_ms

NOON = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def test_a_live_schedule_is_active_while_it_has_a_next_time() -> None:
    assert status_by_next_time(NOON) is ScheduleStatus.ACTIVE
    assert status_by_next_time(None) is ScheduleStatus.COMPLETED


@pytest.mark.parametrize(
    ("stored", "status", "state_revision", "revision", "taken"),
    [
        (1, ScheduleStatus.ACTIVE, 0, 2, True),
        (2, ScheduleStatus.ACTIVE, 0, 2, False),
        (3, ScheduleStatus.PAUSED, 9, 2, False),
        (1, ScheduleStatus.PAUSED, 9, 2, True),
        (0, ScheduleStatus.DELETED, 5, 4, False),
        (0, ScheduleStatus.DELETED, 5, 5, False),
        (0, ScheduleStatus.DELETED, 5, 6, True),
    ],
)
def test_only_a_newer_definition_lands_and_a_tombstone_yields_only_to_one_newer_than_it(
    stored: int, status: ScheduleStatus, state_revision: int, revision: int, taken: bool
) -> None:
    assert takes_definition(stored, status, state_revision, revision) is taken


def test_a_replace_keeps_a_pause_and_otherwise_follows_the_next_time() -> None:
    assert status_after_definition(ScheduleStatus.PAUSED, None) is ScheduleStatus.PAUSED
    assert status_after_definition(ScheduleStatus.COMPLETED, NOON) is ScheduleStatus.ACTIVE
    assert status_after_definition(ScheduleStatus.ACTIVE, None) is ScheduleStatus.COMPLETED
    assert status_after_definition(ScheduleStatus.DELETED, NOON) is ScheduleStatus.ACTIVE


def test_pause_applies_to_active_schedules_and_resume_to_paused_ones() -> None:
    assert state_change_source(ScheduleStatus.PAUSED) is ScheduleStatus.ACTIVE
    assert state_change_source(ScheduleStatus.ACTIVE) is ScheduleStatus.PAUSED
    with pytest.raises(ValueError, match="completed"):
        state_change_source(ScheduleStatus.COMPLETED)


def test_lateness_counts_from_the_scheduled_time_to_the_start_of_the_attempt() -> None:
    execution = Execution("t", "s:x", "s", NOON, ExecutionStatus.RUNNING, 1, 1)
    assert attempt_lateness_ms(execution) is None
    started = Execution(
        "t",
        "s:x",
        "s",
        NOON,
        ExecutionStatus.RUNNING,
        1,
        1,
        started_at=NOON + timedelta(milliseconds=1250),
    )
    assert attempt_lateness_ms(started) == 1250.0


@pytest.mark.parametrize(
    ("text", "valid"),
    [("0123abcd", True), ("a" * 64, True), ("0123abc", False), ("0123ABCD", False), ("", False)],
)
def test_a_key_id_is_eight_to_sixty_four_lowercase_hex_digits(text: str, valid: bool) -> None:
    assert is_key_id(text) is valid


def test_maybe_passes_none_through_and_converts_the_rest() -> None:
    assert maybe(to_epoch_ms, None) is None
    assert maybe(from_epoch_ms, to_epoch_ms(NOON)) == NOON
