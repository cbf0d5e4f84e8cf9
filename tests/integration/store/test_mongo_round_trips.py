"""The MongoDB store's hot paths cost a constant number of commands per batch, whatever its size.

Counted on the wire (pymongo command monitoring) against nx-27017, and against the MongoDB of
``SCHEDULER_TEST_MONGO_URL`` when it is set: what a real cluster would be asked.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from pymongo import monitoring

from processor_worker.worker import Processor
from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite_queue import SqliteQueue
from shared.changes import Actor, ActorKind, ChangeAction, ChangeNote
from shared.messages import DefinitionMutation, encode_mutation
from shared.model import Answer, AttemptOutcome, ExecutionStatus, ScheduleStatus
from shared.ports import (
    Advance,
    ClaimRequest,
    OutgoingMessage,
    OverlapClaim,
    OverlapSeen,
    OverlapTurn,
    QueueSpec,
    StateChange,
)
from shared.signing import SigningSecrets
from shared.tenant_signers import TenantSigners
from tests.integration.store.test_store_contract import (
    I0,
    MINUTE,
    SECOND,
    T0,
    TENANT,
    create,
    definition,
    idempotency,
    occurrence,
    reserve,
)
from tests.support.clocks import FixedClock
from tests.support.harness import TEST_SECRETS
from tests.support.peers import MONGO_URL, mongo_url_for


class Commands(monitoring.CommandListener):
    def __init__(self) -> None:
        self.names: Counter[str] = Counter()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        self.names[event.command_name] += 1

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def take(self) -> int:
        count = sum(self.names.values())
        self.names.clear()
        return count


@pytest.fixture(params=["nx-27017", *(["mongo-url"] if MONGO_URL else [])])
def counted(request: pytest.FixtureRequest) -> Iterator[tuple[MongoStore, Commands]]:
    commands = Commands()
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(
        mongo_url_for(request, request.param), tz_aware=True, event_listeners=[commands]
    )
    database = f"scheduler_test_{uuid.uuid4().hex[:12]}"
    store = MongoStore(client, database, secrets=TEST_SECRETS)
    store.ensure_indexes()
    try:
        yield store, commands
    finally:
        client.drop_database(database)
        client.close()


def created(store: MongoStore, commands: Commands, prefix: str, size: int) -> None:
    """``size`` one-time schedules, ``<prefix>000`` on, due at T0; their commands not counted."""
    for number in range(size):
        create(store, f"{prefix}{number:03d}")
    commands.take()


def fire_batch(store: MongoStore, commands: Commands, size: int, prefix: str) -> dict[str, int]:
    """Commands of each step of ``size`` one-time schedules, claim to recorded success."""
    created(store, commands, prefix, size)
    # A poller of its own: one whose last claim came back full claims from a window of slices.
    poller = f"poller-{prefix}"
    claimed = store.claim_due_schedules(ClaimRequest(T0, T0, size, poller, T0 + MINUTE))
    steps = {"claim": commands.take()}
    assert len(claimed) == size
    assert (
        store.advance_schedules([Advance(s, None, 1) for s in claimed], poller, T0) == [True] * size
    )
    steps["advance"] = commands.take()
    due = [occurrence(s.schedule_id) for s in claimed]
    assert len(store.get_schedules([(o.tenant, o.schedule_id) for o in due])) == size
    steps["version check"] = commands.take()
    began = store.begin_attempts(due, "executor-1", T0, T0 + MINUTE)
    steps["begin"] = commands.take()
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, T0 + SECOND, Answer(200), 1.0)
    settled = [(execution, outcome) for execution in began if execution is not None]
    assert store.settle_attempts(settled, "executor-1") == [True] * size
    steps["settle"] = commands.take()
    counted = store.get_schedules([(TENANT, s.schedule_id) for s in claimed])
    assert all(schedule.run_count == 1 for schedule in counted.values())
    return steps


def test_a_batch_costs_the_same_commands_whatever_its_size(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    small = fire_batch(store, commands, 3, "small-")
    large = fire_batch(store, commands, 60, "large-")
    assert small == large
    # Three to claim, two to settle (the outcomes, then the run counts), one for each other step.
    assert large == {"claim": 3, "advance": 1, "version check": 1, "begin": 1, "settle": 2}


def test_a_poller_behind_claims_from_a_window_of_slices_then_the_rest_from_all(
    counted: tuple[MongoStore, Commands],
) -> None:
    # What bench.store_rounds counts (BENCHMARKS.md section 6): one poller claiming batch
    # after batch until none is left, rather than the one claim of a poller that is not behind
    # above.
    store, commands = counted
    created(store, commands, "behind-", 200)

    def claim() -> tuple[int, dict[str, int]]:
        claimed = store.claim_due_schedules(ClaimRequest(T0, T0, 100, "poller-b", T0 + MINUTE))
        sent = dict(commands.names)
        commands.take()
        return len(claimed), sent

    # Not behind: one round (the candidates' ids, the guarded update, the read by token).
    assert claim() == (100, {"find": 2, "update": 1})
    # Behind (its last claim came back full): a window of an eighth of the slices first, which
    # holds some of the 100 left (none: a chance of (7/8)^100) but fewer than 100; the rest
    # from all slices, a second round.
    assert claim() == (100, {"find": 4, "update": 2})
    # Nothing left: the window, then all slices, read empty.
    assert claim() == (0, {"find": 2})


def test_a_batch_with_redeliveries_costs_a_few_commands_more_not_one_per_item(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    due = [occurrence(f"s{number:03d}") for number in range(40)]
    first = store.begin_attempts(due[:20], "executor-1", T0, T0 + SECOND)
    assert all(first)
    commands.take()
    # Half the batch comes round again after executor-1's lease ran out.
    later = T0 + MINUTE
    again = store.begin_attempts(due, "executor-2", later, later + MINUTE)
    assert [execution.attempts if execution else None for execution in again] == [2] * 20 + [1] * 20
    assert commands.take() <= 4  # insert, two guarded updates, one read


def test_skips_cost_two_commands_at_most_whatever_their_number(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    due = [occurrence(f"s{number:03d}") for number in range(30)]
    assert all(store.begin_attempts(due[:10], "executor-1", T0, T0 + SECOND))
    commands.take()
    later = T0 + MINUTE
    assert store.record_skips([(item, "missed") for item in due], later) == 30
    assert commands.take() == 2  # the upserts, then the runs whose lease ran out


def test_a_definition_lands_in_one_command_unless_the_schedule_is_paused(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    commands.take()
    assert create(store, "s1", revision=1)
    assert commands.take() == 1  # the upsert inserts it
    assert create(store, "s1", revision=2)
    assert commands.take() == 1  # the upsert replaces it
    assert store.apply_state(StateChange(TENANT, "s1", 3, ScheduleStatus.PAUSED, None, T0))
    commands.take()
    assert create(store, "s1", revision=3)
    assert commands.take() == 2  # the upsert refuses a paused one; its own guard takes it
    assert not create(store, "s1", revision=2)
    assert commands.take() == 3  # both guards refuse, one read tells a stale one from a race


def test_a_batch_of_definitions_costs_one_command_whatever_its_size(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    commands.take()
    for size in (3, 60):
        batch = [(TENANT, f"b{size}-{n}", 1, definition(), T0 + MINUTE, T0) for n in range(size)]
        assert store.apply_definitions(batch) == [True] * size
        assert commands.take() == 1


def test_failures_that_pause_their_schedules_cost_no_command_more(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    limited = dataclasses.replace(definition(), pause_after_failures=1)
    for number in range(40):
        store.apply_definition((TENANT, f"f{number:03d}", 1, limited, T0, T0 - MINUTE))
    due = [occurrence(f"f{number:03d}") for number in range(40)]
    began = store.begin_attempts(due, "executor-1", T0, T0 + MINUTE)
    commands.take()
    outcome = AttemptOutcome(ExecutionStatus.FAILED, T0 + SECOND, Answer(500), 1.0, "HTTP 500")
    settled = [(execution, outcome) for execution in began if execution is not None]
    assert store.settle_attempts(settled, "executor-1") == [True] * 40
    # The outcomes, then the run counts and the guarded pauses in the same bulk_write.
    assert commands.take() == 2
    paused = store.get_schedules([(TENANT, item.schedule_id) for item in due])
    assert {schedule.status for schedule in paused.values()} == {ScheduleStatus.PAUSED}


def test_an_idempotency_key_is_saved_in_one_command_and_a_repeat_answered_in_two(
    counted: tuple[MongoStore, Commands],
) -> None:
    store, commands = counted
    commands.take()
    assert store.save_idempotency_record(idempotency(expires_at=I0 + MINUTE), I0)[1]
    assert commands.take() == 1  # the upsert inserts it
    assert not store.save_idempotency_record(idempotency(fingerprint="fp-2"), I0)[1]
    assert commands.take() == 2  # the live record refuses the upsert; one read answers
    assert store.save_idempotency_record(idempotency(fingerprint="fp-3"), I0 + MINUTE)[1]
    assert commands.take() == 1  # the upsert replaces the expired one


def test_a_quota_reservation_is_one_command_however_many_creates_await_the_processor(
    counted: tuple[MongoStore, Commands],
) -> None:
    """A create holds a slot of its tenant's quota before it is queued; the slots are counted
    anew once every 64 reservations, not at every create once 64 await the processor (then
    concurrent creates' counts undid one another's, and a create answered 503)."""
    store, commands = counted
    commands.take()
    costs = [
        commands.take() for number in range(300) if reserve(store, f"s{number:03d}", 1000) is None
    ]
    assert len(costs) == 300
    # Each count: a failed update, the reservations, the stored schedules, the count, the write.
    assert sum(costs) <= 300 + 5 * (300 // 64 + 1), Counter(costs)


def test_the_processor_applies_a_batch_of_creates_in_one_command(
    counted: tuple[MongoStore, Commands], tmp_path: Path
) -> None:
    store, commands = counted
    database = SqliteDatabase(tmp_path / "queues.db")
    mutations, dead = (
        SqliteQueue(database, QueueSpec("mutations")),
        SqliteQueue(database, QueueSpec("dead")),
    )
    mutations.create()
    dead.create()
    note = ChangeNote(ChangeAction.CREATE, Actor(ActorKind.API_KEY, "k1", "bot"), ())
    bodies = [
        encode_mutation(
            DefinitionMutation(TENANT, f"p{n}", 1, T0, definition(), note), TEST_SECRETS
        )
        for n in range(10)
    ]
    mutations.send([OutgoingMessage(body) for body in bodies])
    processor = Processor(store, mutations, dead, TEST_SECRETS, batch_size=10)
    commands.take()
    assert processor.process_batch(1.0) == 10
    # One insert for the ten changes of the history, one for the ten new schedules.
    assert commands.take() == 2
    stored = store.get_schedules([(TENANT, f"p{n}") for n in range(10)])
    assert {schedule.revision for schedule in stored.values()} == {1}
    assert len(stored) == 10
    for n in range(10):
        [created] = store.list_changes(TENANT, f"p{n}", 10, None).items
        assert (created.action, created.revision, created.at) == (ChangeAction.CREATE, 1, T0)
    database.close()


def test_the_signing_secrets_of_a_batchs_tenants_are_one_command(
    counted: tuple[MongoStore, Commands],
) -> None:
    """What an executor's refresh of a batch's tenants sends (``shared.tenant_signers``),
    however many tenants, with secrets stored or not."""
    store, commands = counted
    clock = FixedClock(T0)
    for tenant in ("t0", "t1", "t2"):
        SigningSecrets(store, TEST_SECRETS, clock, deployment_signs=True, overlap=MINUTE).rotate(
            tenant
        )
    commands.take()
    signers = TenantSigners(store, TEST_SECRETS, "", clock, 60.0)
    signers.refresh([f"t{number}" for number in range(50)])
    assert commands.take() == 1
    signers.refresh([f"t{number}" for number in range(50)])
    assert commands.take() == 0
    assert signers.signer("t1") is not None and signers.signer("t9") is None


def test_the_overlap_marker_costs_a_command_or_two_per_claim_on_its_likely_path(
    counted: tuple[MongoStore, Commands],
) -> None:
    # Only occurrences of schedules whose overlap is not allow claim it (one claim each); what
    # the version check read (``seen``) picks the rule to try first.
    store, commands = counted
    create(store, "s1")
    first, second = occurrence(at=T0).occurrence_id, occurrence(at=T0 + SECOND).occurrence_id
    commands.take()

    def claim(occurrence_id: str, seen: OverlapSeen | None, now: Any = T0) -> tuple[Any, int]:
        turn = store.take_overlaps(
            [OverlapClaim(TENANT, "s1", occurrence_id, now + MINUTE, True, seen)], now
        )
        return turn, commands.take()

    assert claim(first, None) == ([OverlapTurn.HELD], 1)  # a free schedule: its hold
    assert claim(first, OverlapSeen.MINE) == ([OverlapTurn.HELD], 1)  # a retry's renewal
    assert claim(second, OverlapSeen.OTHER) == ([OverlapTurn.WAITING], 2)  # a wait begins
    assert claim(second, OverlapSeen.OTHER) == ([OverlapTurn.WAITING], 1)  # checked again
    store.release_overlaps([(TENANT, "s1", first)])
    assert commands.take() == 1
    # The waiter takes it: the third case of the hold's guard (free, and its own wait).
    assert claim(second, None, T0 + SECOND) == ([OverlapTurn.HELD], 3)


def test_a_page_of_state_changes_costs_one_command_whatever_its_size(
    counted: tuple[MongoStore, Commands],
) -> None:
    # A bulk operation's page (``POST /schedules/bulk``): one bulk write; one read more only
    # where some guard refused.
    store, commands = counted
    created(store, commands, "b", 60)
    pauses = [
        StateChange(TENANT, f"b{number:03d}", 10, ScheduleStatus.PAUSED, None, T0)
        for number in range(60)
    ]
    assert store.apply_states(pauses[:3]) == [True] * 3
    assert commands.take() == 1
    assert store.apply_states(pauses[3:]) == [True] * 57
    assert commands.take() == 1
    assert store.apply_states(pauses[:5]) == [False] * 5
    assert commands.take() == 2
