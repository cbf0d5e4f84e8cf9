"""The store rules every adapter keeps (``shared.store_rules``), without a store."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from shared.execution_rules import run_lateness_ms
from shared.guards import Set, Unless, holds
from shared.model import Answer, AttemptOutcome, Execution, ExecutionStatus, ScheduleStatus
from shared.store_rules import (
    LAND_DEFINITION,
    PAUSE,
    RESUME,
    is_key_id,
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
    [status] = [
        c.value for c in LAND_DEFINITION.changes if isinstance(c, Set) and c.field == "status"
    ]
    assert isinstance(status, Unless)
    assert holds(status.condition, {"status": "paused"}, {})
    for other in ("active", "completed", "deleted"):
        assert not holds(status.condition, {"status": other}, {})


@pytest.mark.parametrize(
    ("stored", "state_revision", "paused", "resumed"),
    [
        ("active", 1, True, False),
        ("paused", 1, False, True),
        ("active", 2, False, False),
        ("completed", 1, False, False),
        ("deleted", 1, False, False),
    ],
)
def test_pause_applies_to_active_schedules_and_resume_to_paused_ones_if_newer(
    stored: str, state_revision: int, paused: bool, resumed: bool
) -> None:
    record = {"status": stored, "state_revision": state_revision}
    assert holds(PAUSE.guard, record, {"state_revision": 2}) is paused
    assert holds(RESUME.guard, record, {"state_revision": 2}) is resumed


def test_lateness_counts_from_the_scheduled_time_to_when_the_first_request_was_sent() -> None:
    # Begun 20 ms ahead (its lease), sent 3 ms after its time.
    begun = NOON - timedelta(milliseconds=20)
    first = Execution("t", "s:x", "s", NOON, ExecutionStatus.RUNNING, 1, 1, started_at=begun)
    sent = AttemptOutcome(
        ExecutionStatus.RETRYING,
        NOON + timedelta(milliseconds=9),
        started_at=NOON + timedelta(milliseconds=3),
    )
    assert run_lateness_ms(first, sent) == 3.0
    # An outcome that does not say when it was sent: the begin stands in.
    assert run_lateness_ms(first, AttemptOutcome(ExecutionStatus.SUCCEEDED, NOON)) == -20.0
    assert run_lateness_ms(dataclasses.replace(first, started_at=None), sent) == 3.0


def test_a_retry_keeps_the_first_attempts_lateness_and_its_delay_is_apart() -> None:
    second = Execution(
        "t",
        "s:x",
        "s",
        NOON,
        ExecutionStatus.SUCCEEDED,
        2,
        1,
        started_at=NOON + timedelta(milliseconds=7003),
        lateness_ms=3.0,
    )
    later = AttemptOutcome(
        ExecutionStatus.SUCCEEDED, NOON + timedelta(seconds=8), started_at=second.started_at
    )
    assert run_lateness_ms(second, later) == 3.0
    assert second.retry_delay_ms == 7000.0
    assert dataclasses.replace(second, attempts=1).retry_delay_ms is None


def test_jitter_is_the_fire_time_past_the_time_the_id_names() -> None:
    jittered = Execution(
        "t",
        "s:2026-03-08T12:00:00.000Z",
        "s",
        NOON + timedelta(milliseconds=1234),
        ExecutionStatus.SUCCEEDED,
        1,
        1,
    )
    assert jittered.jitter_ms == 1234.0
    assert dataclasses.replace(jittered, occurrence_id="other").jitter_ms is None


def test_millisecond_figures_are_kept_to_a_tenth() -> None:
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, NOON, Answer(200), 1.9248019999622556)
    assert outcome.duration_ms == 1.9


@pytest.mark.parametrize(
    ("text", "valid"),
    [("0123abcd", True), ("a" * 64, True), ("0123abc", False), ("0123ABCD", False), ("", False)],
)
def test_a_key_id_is_eight_to_sixty_four_lowercase_hex_digits(text: str, valid: bool) -> None:
    assert is_key_id(text) is valid


def test_maybe_passes_none_through_and_converts_the_rest() -> None:
    assert maybe(to_epoch_ms, None) is None
    assert maybe(from_epoch_ms, to_epoch_ms(NOON)) == NOON
