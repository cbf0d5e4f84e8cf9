"""The executor's decisions, as pure functions (skip, grace, what follows an attempt), and its
in-memory parts: calls per host and the held occurrences."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from execution_worker.sending import HostLimits
from execution_worker.timer import PRIORITY_STEP, DueOccurrences, Held, HeldOccurrences
from shared.adapters.http_target import destination
from shared.decisions import (
    DELETED,
    SKIPPED_ON_REQUEST,
    Superseded,
    grace_refusal,
    overlap_blocked,
    overlap_refusal,
    superseded,
)
from shared.guards import holds
from shared.model import (
    ExecutionStatus,
    Misfire,
    Occurrence,
    OverlapPolicy,
    Payload,
    RetryPolicy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
)
from shared.overlap_rules import (
    HOLD_OVERLAP,
    RENEW_OVERLAP,
    WAIT_OVERLAP,
    overlap_params,
)
from shared.ports import ReceivedMessage
from shared.retry import Verdict, next_step
from tests.support.factories import make_schedule

NOON = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
MESSAGE = ReceivedMessage("m", "{}", "receipt", 1)


def definition(grace: float | None = None) -> ScheduleDefinition:
    return ScheduleDefinition(
        timing=Timing(timezone="UTC", at=NOON),
        payload=Payload(method="POST", url="https://hooks.example.com/x"),
        misfire=Misfire(grace_seconds=grace),
    )


def schedule(status: ScheduleStatus = ScheduleStatus.ACTIVE, revision: int = 1) -> Schedule:
    return make_schedule(definition(), NOON, None, status, revision)


def occurrence(manual: bool = False, revision: int = 1) -> Occurrence:
    return Occurrence("t", "s", revision, NOON, manual=manual)


def test_an_occurrence_runs_while_its_schedule_is_as_it_was_dispatched() -> None:
    assert superseded(occurrence(), schedule()) is None


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, Superseded("deleted", DELETED, (1, 0))),
        (schedule(ScheduleStatus.DELETED), Superseded("deleted", DELETED, (1, 0))),
        (schedule(ScheduleStatus.PAUSED), Superseded("paused", "schedule paused", (1, 0))),
        (
            schedule(revision=2),
            Superseded("changed", "schedule changed (revision 1 → 2)", (1, 2)),
        ),
    ],
)
def test_a_deleted_paused_or_changed_schedule_supersedes_its_occurrence(
    stored: Schedule | None, expected: Superseded
) -> None:
    assert superseded(occurrence(), stored) == expected


def test_each_change_is_told_apart_from_the_next() -> None:
    first = superseded(occurrence(), schedule(ScheduleStatus.PAUSED))
    paused_again = superseded(
        occurrence(), replace(schedule(ScheduleStatus.PAUSED), state_revision=7)
    )
    assert first is not None and paused_again is not None
    assert first.change != paused_again.change


def test_an_occurrence_at_or_after_the_pause_until_runs_before_a_poller_resumes_it() -> None:
    paused = schedule(ScheduleStatus.PAUSED)
    for until, runs in ((NOON, True), (NOON - timedelta(seconds=1), True), (NOON + SECOND, False)):
        stored = replace(paused, paused_until=until)
        assert (superseded(occurrence(), stored) is None) is runs, until


def test_an_occurrence_asked_to_be_skipped_is_by_its_nominal_time_not_a_manual_run() -> None:
    asked = replace(schedule(), skips=(NOON - SECOND, NOON))
    found = superseded(occurrence(), asked)
    assert found is not None and (found.cause, found.reason) == ("skipped", SKIPPED_ON_REQUEST)
    # Jitter moves the time it fires, not its id: still skipped.
    jittered = replace(occurrence(), scheduled_time=NOON + 3 * SECOND)
    assert superseded(jittered, asked) is not None
    assert superseded(occurrence(), replace(schedule(), skips=(NOON + SECOND,))) is None
    assert superseded(occurrence(manual=True), asked) is None


def test_a_manual_run_ignores_pause_and_revision_but_not_a_delete() -> None:
    assert superseded(occurrence(manual=True), schedule(ScheduleStatus.PAUSED, 3)) is None
    deleted = superseded(occurrence(manual=True), None)
    assert deleted is not None and deleted.reason == DELETED


def test_grace_refuses_only_a_late_first_attempt() -> None:
    late = NOON + timedelta(seconds=2.5)
    assert grace_refusal(occurrence(), definition(2.0), late, is_retry=False) == (
        "late by 2.500s, beyond grace of 2s"
    )
    assert grace_refusal(occurrence(), definition(2.0), NOON + timedelta(seconds=2), False) is None
    assert grace_refusal(occurrence(), definition(2.0), late, is_retry=True) is None
    assert grace_refusal(occurrence(manual=True), definition(2.0), late, False) is None
    assert grace_refusal(occurrence(), definition(None), late + timedelta(days=1), False) is None


POLICY = RetryPolicy(max_attempts=3, backoff_seconds=1.0, max_backoff_seconds=60.0)
FAILED_503 = Verdict(False, True, "HTTP 503")


def highest(low: float, high: float) -> float:
    return high


MINUTE = timedelta(minutes=1)
MARKS = [None, NOON - MINUTE, NOON, NOON + MINUTE]


@pytest.mark.parametrize("buffer", [False, True])
def test_an_occurrence_is_skipped_as_read_exactly_where_the_store_would_refuse_it(
    buffer: bool,
) -> None:
    # Every marker a schedule may be read with: the executor's decision without a write is
    # the store's refusal of each rule (take_overlaps: HOLD, RENEW, then for buffer WAIT).
    params = overlap_params("t", "s", "o1", NOON, NOON + MINUTE)
    for holder, until, waiting, waiting_until in itertools.product(
        [None, "o1", "o2"], MARKS, [None, "o1", "o2"], MARKS
    ):
        fields = {
            "overlap_holder": holder,
            "overlap_until": until,
            "overlap_waiting": waiting,
            "overlap_waiting_until": waiting_until,
        }
        read = replace(schedule(), **fields)
        rules = [HOLD_OVERLAP, RENEW_OVERLAP, *([WAIT_OVERLAP] if buffer else [])]
        refused = not any(holds(rule.guard, fields, params) for rule in rules)
        assert overlap_blocked(read, "o1", NOON, buffer) is refused, fields


def test_an_overlap_skip_says_what_is_in_progress() -> None:
    assert overlap_refusal(OverlapPolicy.SKIP, "s:1") == (
        "overlap: s:1 is still running or waiting to retry"
    )
    assert overlap_refusal(OverlapPolicy.BUFFER_ONE, None) == (
        "overlap: an earlier occurrence is still in progress and another already waits"
    )


def test_success_ends_the_occurrence() -> None:
    assert next_step(Verdict(True, False), POLICY, 1, True).status is ExecutionStatus.SUCCEEDED


def test_a_retryable_failure_retries_after_the_backoff_while_attempts_remain() -> None:
    step = next_step(FAILED_503, POLICY, 2, True, rand=highest)
    assert step.status is ExecutionStatus.RETRYING
    assert step.delay == timedelta(seconds=2.0)


def test_retry_after_is_a_floor_of_the_delay() -> None:
    verdict = Verdict(False, True, "HTTP 429", retry_after_seconds=90.0)
    assert next_step(verdict, POLICY, 1, True, rand=highest).delay == timedelta(seconds=90)


@pytest.mark.parametrize(
    ("verdict", "attempts", "deliveries_left"),
    [
        (FAILED_503, 3, True),  # the policy's last attempt
        (FAILED_503, 1, False),  # the queue's last delivery
        (Verdict(False, False, "HTTP 404"), 1, True),  # not worth retrying
    ],
)
def test_otherwise_a_failure_is_final(
    verdict: Verdict, attempts: int, deliveries_left: bool
) -> None:
    step = next_step(verdict, POLICY, attempts, deliveries_left)
    assert step.status is ExecutionStatus.FAILED and step.delay is None


def test_calls_are_counted_per_host_and_port() -> None:
    assert destination("https://Hooks.Example.com/a?b=1") == "hooks.example.com"
    assert destination("http://127.0.0.1:8080/x") == "127.0.0.1:8080"


def test_over_its_limit_a_host_parks_calls_first_come_first_served() -> None:
    limits: HostLimits[str] = HostLimits()
    assert limits.take("slow", 2, "a") and limits.take("slow", 2, "b")
    assert not limits.take("slow", 2, "c")
    assert not limits.take("slow", 2, "d")
    assert limits.take("fast", 2, "x")  # another host is not held up
    assert limits.parked() == 2
    assert limits.release("slow") == "c"
    assert limits.take("slow", 2, "c")  # handed back: goes ahead of "d"
    assert not limits.take("slow", 2, "e")  # a newcomer waits behind "d"
    assert limits.release("slow") == "d"
    assert not limits.take("slow", 2, "f")  # and behind what was handed back
    assert limits.take("slow", 2, "d")
    assert limits.take_all_parked() == ["e", "f"]
    assert limits.release("fast") is None


def test_held_occurrences_come_due_in_time_then_priority_order() -> None:
    held = HeldOccurrences()
    later = NOON + timedelta(seconds=1)
    low, high = Occurrence("t", "a", 1, NOON, 2), Occurrence("t", "b", 1, NOON, 9)
    retry = Occurrence("t", "c", 1, NOON - timedelta(hours=1), not_before=later)
    for item in (low, retry, high, Occurrence("t", "d", 1, later)):
        held.hold(item, MESSAGE, NOON)
    assert held.next_due() == NOON
    assert [h.occurrence.schedule_id for h in held.pop_due(NOON)] == ["b", "a"]
    # A retry waiting out a long delay is due at its not_before, not its scheduled time.
    assert [h.occurrence.schedule_id for h in held.pop_due(later)] == ["c", "d"]
    assert held.next_due() is None and len(held) == 0


def due_items(*occurrences: Occurrence) -> list[Held]:
    held = HeldOccurrences()
    for item in occurrences:
        held.hold(item, MESSAGE, NOON)
    return held.take_all()


def test_due_occurrences_go_highest_priority_first_each_level_worth_a_step_of_lateness() -> None:
    """When more is due than an executor has room to call (issue 27 item 4)."""
    due = DueOccurrences()
    step = PRIORITY_STEP
    due.add(
        due_items(
            Occurrence("t", "p0-old", 1, NOON - 10 * step, 0),
            Occurrence("t", "p5", 1, NOON, 5),
            Occurrence("t", "p9", 1, NOON + step, 9),
            Occurrence("t", "p9-early", 1, NOON, 9),
            Occurrence("t", "p0", 1, NOON, 0),
            Occurrence("t", "p5-later", 1, NOON + step, 5),
        )
    )
    # Urgency is the due time less a step per level: the priority-0 occurrence ten steps
    # overdue goes before a priority 9 due now (no starvation), the rest by priority.
    assert [item.occurrence.schedule_id for item in due.take(3)] == ["p0-old", "p9-early", "p9"]
    assert [item.occurrence.schedule_id for item in due.take(10)] == ["p5", "p5-later", "p0"]
    assert len(due) == 0 and due.take(1) == []


def test_due_occurrences_put_back_go_first_in_their_order() -> None:
    due = DueOccurrences()
    due.add(due_items(Occurrence("t", "p9", 1, NOON, 9)))
    again = due_items(Occurrence("t", "a", 1, NOON, 0), Occurrence("t", "b", 1, NOON, 0))
    due.put_back(sorted(again, key=lambda item: item.occurrence.schedule_id))
    due.put_back(due_items(Occurrence("t", "waiter", 1, NOON, 1)))
    assert len(due) == 4
    assert [item.occurrence.schedule_id for item in due.take(4)] == ["waiter", "a", "b", "p9"]
