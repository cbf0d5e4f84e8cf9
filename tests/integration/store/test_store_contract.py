"""One contract for every store adapter: the docstrings of the store ports in ``shared.ports``."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import datetime, timedelta
from multiprocessing import get_context
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import mongomock_ng
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.store import SqliteStore
from shared.definition_cache import DefinitionCache
from shared.errors import InvalidInput, Transient
from shared.model import (
    KEPT_ATTEMPTS,
    Answer,
    AttemptOutcome,
    Every,
    Execution,
    ExecutionStatus,
    Occurrence,
    PauseIntent,
    Payload,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
    Unit,
)
from shared.ports import (
    ApiKey,
    ClaimRequest,
    DeadLetterRequest,
    DefinitionToApply,
    HistoryRequest,
    IdempotencyRecord,
    OverlapClaim,
    OverlapSeen,
    OverlapTurn,
    Role,
    ScheduleFilter,
    ScheduleOrder,
    SkipsChange,
    SlotReservation,
    StateChange,
    Store,
)
from shared.schedule_listing import sort_key
from shared.timeutil import UTC
from tests.support.harness import TEST_SECRETS
from tests.support.peers import MONGO_URL, mongo_url_for

T0 = datetime(2026, 3, 8, 7, 30, 0, 123_000, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
SECOND = timedelta(seconds=1)
TENANT = "acme"


# MongoDB over the wire: nx-27017 (a wire-protocol server on SQLite, started for the session)
# and, when SCHEDULER_TEST_MONGO_URL is set, that server too (then it fails rather than skips if
# it does not answer). nx-27017 is not mongod: it ignores ``partialFilterExpression`` and its
# unique indexes accept several documents lacking the key. The adapter relies on neither
# (``test_indexes_need_no_partial_or_sparse_behaviour``), so the same assertions hold on both.
STORES = ["sqlite", "mongomock", "nx-27017", *(["mongo-url"] if MONGO_URL else [])]
WIRE_STORES = {"nx-27017", "mongo-url"}


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    adapter: Store
    if request.param in WIRE_STORES:
        database_name = f"scheduler_test_{uuid.uuid4().hex[:12]}"
        wire = MongoStore.from_url(
            mongo_url_for(request, request.param), database_name, secrets=TEST_SECRETS
        )
        wire.ensure_indexes()
        try:
            yield wire
        finally:
            wire.client.drop_database(database_name)
            wire.close()
    elif request.param == "sqlite":
        database = SqliteDatabase(tmp_path / "store.db")
        adapter = SqliteStore(database, secrets=TEST_SECRETS)
        adapter.ensure_indexes()
        try:
            yield adapter
        finally:
            adapter.close()
            database.close()
    else:
        client: Any = mongomock_ng.MongoClient(tz_aware=True)
        adapter = MongoStore(client, "scheduler_test", secrets=TEST_SECRETS)
        adapter.ensure_indexes()
        try:
            yield adapter
        finally:
            adapter.close()
            client.close()


def definition(
    name: str = "nightly report",
    tags: tuple[str, ...] = (),
    url: str = "https://hooks.example.com/run",
    priority: int = 5,
) -> ScheduleDefinition:
    return ScheduleDefinition(
        timing=Timing(timezone="Asia/Kolkata", interval=Every(5, Unit.MINUTE)),
        payload=Payload(
            "POST",
            url,
            headers={"X-Trace.Id": "1"},
            query={"filter.name": "x"},
            body={"$op": "run"},
        ),
        name=name,
        tags=tags,
        metadata={"team.name": "billing", "$weird": True},
        priority=priority,
    )


def create(
    store: Store,
    schedule_id: str,
    *,
    tenant: str = TENANT,
    revision: int = 1,
    next_time: datetime | None = T0,
    name: str = "nightly report",
    tags: tuple[str, ...] = (),
    url: str = "https://hooks.example.com/run",
    accepted_at: datetime = T0 - MINUTE,
    priority: int = 5,
) -> bool:
    return store.apply_definition(
        (
            tenant,
            schedule_id,
            revision,
            definition(name, tags, url, priority),
            next_time,
            accepted_at,
        )
    )


def claim(store: Store, owner: str = "poller-1", limit: int = 10, now: datetime = T0) -> list[str]:
    claimed = store.claim_due_schedules(
        ClaimRequest(
            horizon=now + 5 * MINUTE, now=now, limit=limit, owner=owner, lease_until=now + MINUTE
        )
    )
    return [schedule.schedule_id for schedule in claimed]


def occurrence(schedule_id: str = "s1", at: datetime = T0, revision: int = 1) -> Occurrence:
    return Occurrence(tenant=TENANT, schedule_id=schedule_id, revision=revision, scheduled_time=at)


# -- definitions and state ---------------------------------------------------------------


def test_create_then_get_round_trips_the_definition(store: Store) -> None:
    assert create(store, "s1", tags=("daily", "billing"))
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.ACTIVE
    assert schedule.revision == 1
    assert schedule.state_revision == 0
    assert schedule.definition == definition(tags=("daily", "billing"))
    assert schedule.next_schedule_time == T0
    assert schedule.accepted_at == schedule.created_at == T0 - MINUTE
    assert (schedule.run_count, schedule.failure_count, schedule.occurrence_count) == (0, 0, 0)
    assert schedule.lease_owner is None
    assert store.get_schedule(TENANT, "unknown") is None


def test_create_without_next_time_is_completed(store: Store) -> None:
    assert create(store, "s1", next_time=None)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.COMPLETED
    assert schedule.next_schedule_time is None


def test_definitions_out_of_order_keep_the_newest(store: Store) -> None:
    assert create(store, "s1", revision=3, name="third", next_time=T0 + 3 * MINUTE)
    assert not create(store, "s1", revision=2, name="second", next_time=T0 + 2 * MINUTE)
    assert not create(store, "s1", revision=3, name="third again")
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.revision == 3
    assert schedule.live_definition.name == "third"
    assert schedule.next_schedule_time == T0 + 3 * MINUTE
    assert create(store, "s1", revision=4, name="fourth")
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.live_definition.name == "fourth"


def test_concurrent_definitions_of_one_schedule_leave_the_newest(store: Store) -> None:
    if isinstance(store, MongoStore) and not store.owns_client:
        pytest.skip("mongomock is not thread-safe; the wire-server run covers this")
    revisions = list(range(1, 13))
    with ThreadPoolExecutor(6) as threads:
        applied = dict(
            zip(
                revisions,
                threads.map(lambda r: create(store, "s1", revision=r, name=f"r{r}"), revisions),
                strict=True,
            )
        )
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.revision == 12
    assert schedule.live_definition.name == "r12"
    assert applied[12]


def test_a_batch_of_definitions_keeps_the_guards_of_each(store: Store) -> None:
    create(store, "active", revision=1)
    create(store, "paused", revision=1)
    store.apply_state(StateChange(TENANT, "paused", 2, ScheduleStatus.PAUSED, None, T0))
    create(store, "newer", revision=5)
    store.apply_state(StateChange(TENANT, "deleted", 4, ScheduleStatus.DELETED, None, T0))
    later = T0 + 3 * MINUTE

    def item(schedule_id: str, revision: int) -> DefinitionToApply:
        return (TENANT, schedule_id, revision, definition(f"{schedule_id} r{revision}"), later, T0)

    batch = [item("new", 1), item("active", 2), item("paused", 3), item("newer", 4)]
    batch += [item("deleted", 3), item("completed", 1)]
    batch[-1] = (*batch[-1][:4], None, T0)
    assert store.apply_definitions(batch) == [True, True, True, False, False, True]
    stored = store.get_schedules([(TENANT, name) for name in ("new", "active", "paused")])
    assert {key[1]: s.live_definition.name for key, s in stored.items()} == {
        "new": "new r1",
        "active": "active r2",
        "paused": "paused r3",
    }
    assert stored[(TENANT, "paused")].status is ScheduleStatus.PAUSED
    assert store.get_schedule(TENANT, "newer").revision == 5  # type: ignore[union-attr]
    assert store.get_schedule(TENANT, "deleted").status is ScheduleStatus.DELETED  # type: ignore[union-attr]
    assert store.get_schedule(TENANT, "completed").status is ScheduleStatus.COMPLETED  # type: ignore[union-attr]
    # One schedule twice in a batch: each in turn.
    assert store.apply_definitions([item("twice", 2), item("twice", 1), item("twice", 3)]) == [
        True,
        False,
        True,
    ]
    assert store.get_schedule(TENANT, "twice").revision == 3  # type: ignore[union-attr]
    assert store.apply_definitions([]) == []


def test_delete_leaves_a_tombstone_that_blocks_an_older_create(store: Store) -> None:
    # The delete (state revision 5) overtook its create (revision 2) on queue 1.
    assert not store.apply_state(StateChange(TENANT, "s1", 5, ScheduleStatus.DELETED, None, T0))
    tombstone = store.get_schedule(TENANT, "s1")
    assert tombstone is not None
    assert tombstone.status is ScheduleStatus.DELETED
    assert tombstone.definition is None
    assert not create(store, "s1", revision=2)
    still = store.get_schedule(TENANT, "s1")
    assert still is not None
    assert still.status is ScheduleStatus.DELETED
    # A create accepted after the delete recreates it.
    assert create(store, "s1", revision=6)
    recreated = store.get_schedule(TENANT, "s1")
    assert recreated is not None
    assert recreated.status is ScheduleStatus.ACTIVE
    assert recreated.revision == 6
    assert recreated.definition is not None


def test_a_second_delete_blocks_a_create_accepted_between_the_two(store: Store) -> None:
    # DELETE (2), PUT (3), DELETE (4), all answered before the processor saw the PUT.
    assert not store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.DELETED, None, T0))
    assert not store.apply_state(StateChange(TENANT, "s1", 4, ScheduleStatus.DELETED, None, T0))
    assert not create(store, "s1", revision=3)
    gone = store.get_schedule(TENANT, "s1")
    assert gone is not None
    assert gone.status is ScheduleStatus.DELETED
    assert gone.state_revision == 4
    # An older delete arriving late changes nothing.
    assert not store.apply_state(StateChange(TENANT, "s1", 1, ScheduleStatus.DELETED, None, T0))
    assert store.get_schedule(TENANT, "s1").state_revision == 4  # type: ignore[union-attr]


def test_delete_of_a_live_schedule(store: Store) -> None:
    create(store, "s1", revision=1)
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.DELETED, None, T0))
    deleted = store.get_schedule(TENANT, "s1")
    assert deleted is not None
    assert deleted.status is ScheduleStatus.DELETED
    assert deleted.state_revision == 2
    assert not store.apply_state(StateChange(TENANT, "s1", 3, ScheduleStatus.DELETED, None, T0))
    assert not store.apply_state(StateChange(TENANT, "s1", 4, ScheduleStatus.ACTIVE, T0, T0))
    assert not store.apply_state(StateChange(TENANT, "s1", 4, ScheduleStatus.PAUSED, None, T0))
    assert not create(store, "s1", revision=2)  # no newer than the delete
    assert claim(store) == []


def test_pause_resume_and_their_revisions(store: Store) -> None:
    create(store, "s1")
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    paused = store.get_schedule(TENANT, "s1")
    assert paused is not None
    assert paused.status is ScheduleStatus.PAUSED
    assert paused.state_revision == 2
    assert paused.next_schedule_time == T0  # a pause keeps the next time
    assert claim(store) == []
    assert not store.apply_state(
        StateChange(TENANT, "s1", 1, ScheduleStatus.ACTIVE, T0, T0)
    )  # older
    assert not store.apply_state(
        StateChange(TENANT, "s1", 3, ScheduleStatus.PAUSED, None, T0)
    )  # already
    assert store.apply_state(
        StateChange(TENANT, "s1", 4, ScheduleStatus.ACTIVE, T0 + 2 * MINUTE, T0)
    )
    resumed = store.get_schedule(TENANT, "s1")
    assert resumed is not None
    assert resumed.status is ScheduleStatus.ACTIVE
    assert resumed.state_revision == 4
    assert resumed.next_schedule_time == T0 + 2 * MINUTE
    assert not store.apply_state(
        StateChange(TENANT, "s1", 3, ScheduleStatus.PAUSED, None, T0)
    )  # older


def test_resume_without_next_time_completes(store: Store) -> None:
    create(store, "s1")
    store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert store.apply_state(StateChange(TENANT, "s1", 3, ScheduleStatus.ACTIVE, None, T0))
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.COMPLETED


def test_the_version_check_opens_a_recurring_definition_once_per_revision(store: Store) -> None:
    create(store, "s1")
    key = (TENANT, "s1")
    cache = DefinitionCache()
    first = store.get_schedules([key], cache)[key]
    assert first.definition == definition()
    # Read again, paused: the state is read anew, the definition is the one opened before.
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    again = store.get_schedules([key], cache)[key]
    assert again.status is ScheduleStatus.PAUSED
    assert again.definition is first.definition
    # A new revision is opened anew.
    assert create(store, "s1", revision=3, url="https://hooks.example.com/other")
    changed = store.get_schedules([key], cache)[key]
    assert changed.revision == 3 and changed.definition is not None
    assert changed.definition.payload.url == "https://hooks.example.com/other"
    assert len(cache) == 2
    # Deleted: the state is read anew, whatever the cache holds.
    assert store.apply_state(StateChange(TENANT, "s1", 4, ScheduleStatus.DELETED, None, T0))
    assert store.get_schedules([key], cache)[key].status is ScheduleStatus.DELETED


def test_the_version_check_reads_states_and_revisions_without_definitions(store: Store) -> None:
    create(store, "s1")
    create(store, "s2")
    s1, s2, unknown = (TENANT, "s1"), (TENANT, "s2"), (TENANT, "nope")
    carried = definition(url="https://hooks.example.com/carried")
    states = store.get_schedule_states([s1, s2, unknown], {(TENANT, "s1", 1): carried})
    # The definition of a revision is the one known for it: none is read from the store.
    assert set(states) == {s1, s2}
    assert states[s1].definition is carried and states[s2].definition is None
    assert states[s1].revision == 1 and states[s1].status is ScheduleStatus.ACTIVE
    # A change, a pause and a delete are read anew.
    assert create(store, "s1", revision=3, url="https://hooks.example.com/other")
    assert store.apply_state(StateChange(TENANT, "s2", 2, ScheduleStatus.PAUSED, None, T0))
    states = store.get_schedule_states([s1, s2], {(TENANT, "s1", 1): carried})
    assert states[s1].revision == 3 and states[s1].definition is None
    assert states[s2].status is ScheduleStatus.PAUSED
    assert store.apply_state(StateChange(TENANT, "s1", 4, ScheduleStatus.DELETED, None, T0))
    assert store.get_schedule_states([s1], {})[s1].status is ScheduleStatus.DELETED


def test_pause_or_resume_of_an_unknown_schedule_changes_nothing(store: Store) -> None:
    assert not store.apply_state(StateChange(TENANT, "nope", 1, ScheduleStatus.PAUSED, None, T0))
    assert not store.apply_state(StateChange(TENANT, "nope", 2, ScheduleStatus.ACTIVE, T0, T0))
    assert store.get_schedule(TENANT, "nope") is None


def test_a_replace_keeps_the_pause_and_the_run_counters(store: Store) -> None:
    create(store, "s1")
    store.record_run(TENANT, "s1", succeeded=False, at=T0)
    store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert create(store, "s1", revision=3, name="replaced", next_time=T0 + 7 * MINUTE)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.PAUSED
    assert schedule.state_revision == 2
    assert schedule.live_definition.name == "replaced"
    assert schedule.next_schedule_time == T0 + 7 * MINUTE
    assert (schedule.run_count, schedule.failure_count) == (1, 1)
    assert claim(store) == []


def test_a_replace_drops_the_lease(store: Store) -> None:
    create(store, "s1")
    assert claim(store, owner="poller-1") == ["s1"]
    assert create(store, "s1", revision=2, next_time=T0 + MINUTE)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.lease_owner is None
    assert claim(store, owner="poller-2") == ["s1"]


# -- claims ------------------------------------------------------------------------------


def test_claim_returns_due_schedules_earliest_first_including_overdue(store: Store) -> None:
    create(store, "later", next_time=T0 + 4 * MINUTE)
    create(store, "overdue", next_time=T0 - 60 * MINUTE)
    create(store, "now", next_time=T0)
    create(store, "beyond-horizon", next_time=T0 + 6 * MINUTE)
    claimed = store.claim_due_schedules(
        ClaimRequest(
            horizon=T0 + 5 * MINUTE, now=T0, limit=10, owner="poller-1", lease_until=T0 + MINUTE
        )
    )
    assert [s.schedule_id for s in claimed] == ["overdue", "now", "later"]
    assert all(s.lease_owner == "poller-1" and s.lease_until == T0 + MINUTE for s in claimed)
    stored = store.get_schedule(TENANT, "now")
    assert stored is not None
    assert stored.lease_owner == "poller-1"


def test_claim_respects_the_limit_earliest_first(store: Store) -> None:
    for minute in range(5):
        create(store, f"s{minute}", next_time=T0 - minute * MINUTE)
    assert claim(store, limit=2) == ["s4", "s3"]
    assert claim(store, owner="poller-2", limit=10) == ["s2", "s1", "s0"]


def test_claim_takes_the_highest_priority_first_then_the_earliest(store: Store) -> None:
    """Issue 27 item 4: of more due than a claim takes, the highest priority goes first (the
    look-ahead's included), each priority earliest first; ``oldest_first`` (a poller behind
    ages its backlog) takes the earliest whatever its priority."""
    create(store, "p0-oldest", next_time=T0 - 60 * MINUTE, priority=0)
    create(store, "p5-old", next_time=T0 - 30 * MINUTE)
    create(store, "p9-soon", next_time=T0 + 4 * MINUTE, priority=9)
    create(store, "p9-now", next_time=T0, priority=9)
    create(store, "p7", next_time=T0 - MINUTE, priority=7)
    create(store, "p9-beyond-horizon", next_time=T0 + 6 * MINUTE, priority=9)
    assert claim(store, limit=3) == ["p9-now", "p9-soon", "p7"]
    oldest = store.claim_due_schedules(
        ClaimRequest(T0 + 5 * MINUTE, T0, 1, "poller-2", T0 + MINUTE, oldest_first=True)
    )
    assert [schedule.schedule_id for schedule in oldest] == ["p0-oldest"]
    assert claim(store, owner="poller-3") == ["p5-old"]


def test_a_replace_moves_a_schedule_to_its_new_priority(store: Store) -> None:
    create(store, "a", next_time=T0 - 2 * MINUTE, priority=1)
    create(store, "b", next_time=T0 - MINUTE, priority=2)
    create(store, "c", next_time=T0, priority=1)
    assert create(store, "a", revision=2, next_time=T0 - 2 * MINUTE, priority=3)
    assert claim(store, limit=1) == ["a"]
    assert create(store, "b", revision=2, next_time=T0 - MINUTE, priority=0)
    assert claim(store, owner="poller-2") == ["c", "b"]


def test_claim_excludes_paused_completed_deleted_and_leased(store: Store) -> None:
    create(store, "paused")
    store.apply_state(StateChange(TENANT, "paused", 2, ScheduleStatus.PAUSED, None, T0))
    create(store, "completed", next_time=None)
    create(store, "deleted")
    store.apply_state(StateChange(TENANT, "deleted", 2, ScheduleStatus.DELETED, None, T0))
    create(store, "due")
    assert claim(store, owner="poller-1") == ["due"]
    assert claim(store, owner="poller-2") == []  # leased by poller-1


def test_an_expired_lease_is_claimable_again(store: Store) -> None:
    create(store, "s1")
    assert claim(store, owner="dead-poller", now=T0) == ["s1"]  # lease until T0 + 1 min
    assert claim(store, owner="poller-2", now=T0 + 30 * timedelta(seconds=1)) == []
    assert claim(store, owner="poller-2", now=T0 + 2 * MINUTE) == ["s1"]
    # The dead poller's lease is gone: it can no longer advance the schedule.
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert not store.advance_schedule(schedule, "dead-poller", T0 + 5 * MINUTE, 1, T0)
    assert store.advance_schedule(schedule, "poller-2", T0 + 5 * MINUTE, 1, T0)


def test_advance_moves_on_and_releases(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert store.advance_schedule(claimed, "poller-1", T0 + 5 * MINUTE, 1, T0)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.next_schedule_time == T0 + 5 * MINUTE
    assert schedule.occurrence_count == 1
    assert schedule.lease_owner is None
    assert schedule.lease_until is None
    assert schedule.status is ScheduleStatus.ACTIVE
    # Released: claimable again once due, even before the old lease would have run out.
    assert claim(store, now=T0 + 5 * MINUTE) == ["s1"]


def test_advance_keeps_the_times_sent_ahead_until_a_replace(store: Store) -> None:
    """``sent_ahead`` is what a read shows as the next fire: kept to the millisecond by the
    advance, through a pause and a resume, and emptied by a new definition."""
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    ahead = (T0 + SECOND, T0 + 2 * SECOND, T0 + 3 * MINUTE)
    assert store.advance_schedule(claimed, "poller-1", T0 + 5 * MINUTE, 3, T0, ahead)
    assert (stored := store.get_schedule(TENANT, "s1")) is not None
    assert stored.sent_ahead == ahead
    assert store.get_schedules([(TENANT, "s1")])[(TENANT, "s1")].sent_ahead == ahead
    [listed] = store.list_schedules(TENANT, ScheduleFilter(), 10, None).items
    assert listed.sent_ahead == ahead
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert store.apply_state(
        StateChange(TENANT, "s1", 3, ScheduleStatus.ACTIVE, T0 + 5 * MINUTE, T0)
    )
    assert (resumed := store.get_schedule(TENANT, "s1")) is not None
    assert resumed.sent_ahead == ahead
    # The next claim replaces them, with none still to come here.
    [claimed] = store.claim_due_schedules(
        ClaimRequest(T0 + 5 * MINUTE, T0, 10, "poller-1", T0 + MINUTE)
    )
    assert store.advance_schedule(claimed, "poller-1", T0 + 10 * MINUTE, 4, T0)
    assert (advanced := store.get_schedule(TENANT, "s1")) is not None
    assert advanced.sent_ahead == ()
    [claimed] = store.claim_due_schedules(
        ClaimRequest(T0 + 10 * MINUTE, T0, 10, "poller-1", T0 + MINUTE)
    )
    assert store.advance_schedule(claimed, "poller-1", T0 + 15 * MINUTE, 5, T0, ahead)
    # What was sent for revision 1 does not fire once revision 2 is stored.
    assert create(store, "s1", revision=2, next_time=T0 + 30 * MINUTE)
    assert (replaced := store.get_schedule(TENANT, "s1")) is not None
    assert replaced.sent_ahead == ()


def test_advance_to_none_completes(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert store.advance_schedule(claimed, "poller-1", None, 1, T0)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.COMPLETED
    assert schedule.next_schedule_time is None
    assert claim(store, now=T0 + 60 * MINUTE) == []


def test_advance_is_guarded_by_the_owner(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert not store.advance_schedule(claimed, "poller-2", T0 + 5 * MINUTE, 1, T0)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.next_schedule_time == T0
    assert schedule.lease_owner == "poller-1"


def test_a_replace_that_landed_during_the_claim_wins(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert create(store, "s1", revision=2, next_time=T0 + 30 * MINUTE)
    assert not store.advance_schedule(claimed, "poller-1", T0 + 5 * MINUTE, 1, T0)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.next_schedule_time == T0 + 30 * MINUTE
    assert schedule.revision == 2


def test_a_pause_that_landed_during_the_claim_wins(store: Store) -> None:
    create(store, "s1")
    [claimed] = store.claim_due_schedules(ClaimRequest(T0, T0, 10, "poller-1", T0 + MINUTE))
    assert store.apply_state(StateChange(TENANT, "s1", 2, ScheduleStatus.PAUSED, None, T0))
    assert not store.advance_schedule(claimed, "poller-1", T0 + 5 * MINUTE, 1, T0)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.status is ScheduleStatus.PAUSED
    assert schedule.next_schedule_time == T0


# -- run counters, listing, counting ------------------------------------------------------


def test_record_run_counts_runs_failures_and_consecutive_failures(store: Store) -> None:
    create(store, "s1")
    store.record_run(TENANT, "s1", succeeded=False, at=T0)
    store.record_run(TENANT, "s1", succeeded=False, at=T0 + MINUTE)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert (schedule.run_count, schedule.failure_count, schedule.consecutive_failures) == (2, 2, 2)
    assert schedule.last_status == "failed"
    store.record_run(TENANT, "s1", succeeded=True, at=T0 + 2 * MINUTE)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert (schedule.run_count, schedule.failure_count, schedule.consecutive_failures) == (3, 2, 0)
    assert schedule.last_status == "succeeded"
    assert schedule.last_run_at == T0 + 2 * MINUTE
    store.record_run(TENANT, "unknown", succeeded=True, at=T0)  # nothing to count, no error


def test_list_filters_by_status_name_tag_and_next_time(store: Store) -> None:
    create(store, "a", name="report daily", tags=("billing",), next_time=T0)
    create(store, "b", name="report weekly", tags=("billing", "weekly"), next_time=T0 + MINUTE)
    create(store, "c", name="cleanup", tags=("ops",), next_time=T0 + 2 * MINUTE)
    create(store, "d", name="report.*", next_time=None)  # completed; a name with regex chars
    create(store, "e", name="paused one")
    store.apply_state(StateChange(TENANT, "e", 2, ScheduleStatus.PAUSED, None, T0))
    create(store, "f")
    store.apply_state(StateChange(TENANT, "f", 2, ScheduleStatus.DELETED, None, T0))

    def ids(query: ScheduleFilter) -> list[str]:
        return [s.schedule_id for s in store.list_schedules(TENANT, query, 100, None).items]

    assert ids(ScheduleFilter()) == ["a", "b", "c", "d", "e"]  # never the tombstone
    assert ids(ScheduleFilter(status=ScheduleStatus.ACTIVE)) == ["a", "b", "c"]
    assert ids(ScheduleFilter(status=ScheduleStatus.PAUSED)) == ["e"]
    assert ids(ScheduleFilter(status=ScheduleStatus.COMPLETED)) == ["d"]
    assert ids(ScheduleFilter(status=ScheduleStatus.DELETED)) == []
    assert ids(ScheduleFilter(name_prefix="report")) == ["a", "b", "d"]
    assert ids(ScheduleFilter(name_prefix="report.")) == ["d"]
    assert ids(ScheduleFilter(tag="billing")) == ["a", "b"]
    assert ids(ScheduleFilter(tag="weekly", name_prefix="report")) == ["b"]
    assert ids(ScheduleFilter(next_after=T0 + MINUTE)) == ["b", "c"]
    assert ids(ScheduleFilter(next_before=T0 + MINUTE)) == ["a", "b", "e"]
    assert ids(ScheduleFilter(next_after=T0 + MINUTE, next_before=T0 + MINUTE)) == ["b"]


def test_list_pages_with_a_cursor(store: Store) -> None:
    for number in range(7):
        create(store, f"s{number:02d}")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = store.list_schedules(TENANT, ScheduleFilter(), 3, cursor)
        pages += 1
        assert len(page.items) <= 3
        seen += [s.schedule_id for s in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"s{number:02d}" for number in range(7)]
    assert pages == 3
    exact = store.list_schedules(TENANT, ScheduleFilter(), 7, None)
    assert len(exact.items) == 7
    assert exact.next_cursor is None


def listed_ids(store: Store, query: ScheduleFilter, tenant: str = TENANT) -> list[str]:
    return [s.schedule_id for s in store.list_schedules(tenant, query, 100, None).items]


def test_search_finds_a_name_part_a_tag_or_the_target_host_never_the_sealed_rest(
    store: Store,
) -> None:
    create(store, "a", name="Nightly Report", url="https://billing.example.com/secret-path?k=v1")
    create(store, "b", name="cleanup", tags=("Reports", "ops"), url="http://10.0.0.7:8080/x")
    create(store, "c", name="report.*", url="https://HOOKS.example.org/run")
    create(store, "d", name="other tenant's report", tenant="globex")
    create(store, "e", name="gone report")
    store.apply_state(StateChange(TENANT, "e", 2, ScheduleStatus.DELETED, None, T0))

    def found(text: str) -> list[str]:
        return listed_ids(store, ScheduleFilter(search=text))

    assert found("report") == ["a", "c"]  # a part of the name, capitals or not
    assert found("NIGHTLY R") == ["a"]
    assert found("REPORT.*") == ["c"]  # no pattern: the text itself
    assert found("Reports") == ["b"] and found("reports") == []  # a tag, whole
    assert found("billing.example") == ["a"]
    assert found("hooks.example.org") == ["c"]  # hosts are kept in lower case
    assert found("https://billing.example.com/other/path?q=1") == ["a"]  # a URL: its host
    assert found(":8080") == ["b"]
    assert found("secret-path") == [] and found("k=v1") == []  # sealed at rest
    assert found("  ") == ["a", "b", "c"]
    assert found("report") == found("report ")
    assert listed_ids(store, ScheduleFilter(search="report", status=ScheduleStatus.PAUSED)) == []
    replaced = store.apply_definition(
        (TENANT, "a", 5, definition("a", url="https://ledger.example.com/"), T0, T0)
    )
    assert replaced and found("billing") == [] and found("ledger") == ["a"]


ORDERINGS = [(order, descending) for order in ScheduleOrder for descending in (False, True)]


@pytest.mark.parametrize(("order", "descending"), ORDERINGS)
def test_list_orders_by_a_key_either_way_and_pages_through_it(
    store: Store, order: ScheduleOrder, descending: bool
) -> None:
    # Names and next times repeat (ties go by id), some schedules have no next time.
    for number in range(9):
        create(
            store,
            f"s{(number * 4) % 9}",
            name=["b", "a", "b|x", ""][number % 4],
            next_time=None if number % 3 == 0 else T0 + (number % 2) * MINUTE,
            accepted_at=T0 + number * SECOND,
        )
    everything = store.list_schedules(TENANT, ScheduleFilter(), 100, None).items
    keyed = [s for s in everything if sort_key(s, order) is not None]
    expected = [
        s.schedule_id
        for s in sorted(
            keyed, key=lambda s: (sort_key(s, order), s.schedule_id), reverse=descending
        )
    ]
    keyless = sorted(s.schedule_id for s in everything if sort_key(s, order) is None)
    expected += list(reversed(keyless)) if descending else keyless
    query = ScheduleFilter(order=order, descending=descending)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(10):
        page = store.list_schedules(TENANT, query, 2, cursor)
        seen += [s.schedule_id for s in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == expected
    # A cursor is read only in the order that gave it.
    first = store.list_schedules(TENANT, query, 2, None).next_cursor
    assert first is not None
    other = ScheduleFilter(order=order, descending=not descending)
    with pytest.raises(InvalidInput) as refused:
        store.list_schedules(TENANT, other, 2, first)
    assert "cursor" in refused.value.fields


def test_a_listing_filtered_and_ordered_pages_through_the_filter(store: Store) -> None:
    for number in range(6):
        create(store, f"s{number}", name=f"job {5 - number}", tags=("even",) * (number % 2 == 0))
    query = ScheduleFilter(tag="even", order=ScheduleOrder.NAME, search="job")
    first = store.list_schedules(TENANT, query, 2, None)
    assert [s.schedule_id for s in first.items] == ["s4", "s2"]
    rest = store.list_schedules(TENANT, query, 2, first.next_cursor)
    assert [s.schedule_id for s in rest.items] == ["s0"] and rest.next_cursor is None


def forget_search_fields(store: Store) -> None:
    """Make the store as one written before search and order had their own fields."""
    if isinstance(store, SqliteStore):
        with store.db.write() as connection:
            connection.execute("DROP TABLE store_migrations")
            connection.execute("DROP INDEX schedules_by_name_key")
            connection.execute("ALTER TABLE schedules DROP COLUMN target")
            connection.execute("ALTER TABLE schedules DROP COLUMN name_key")
    else:
        assert isinstance(store, MongoStore)
        store.schedules.update_many({}, {"$unset": {"target": "", "name_key": ""}})
        store.migrations.delete_many({})


def test_the_search_fields_of_schedules_stored_before_are_filled_in(store: Store) -> None:
    create(store, "old", name="Legacy Job", url="https://legacy.example.com/hook?token=abc")
    create(store, "new", name="a job")
    store.apply_state(StateChange(TENANT, "gone", 1, ScheduleStatus.DELETED, None, T0))
    forget_search_fields(store)
    store.ensure_indexes()
    assert listed_ids(store, ScheduleFilter(search="legacy.example")) == ["old"]
    store.ensure_indexes()  # once is enough; again changes nothing
    assert listed_ids(store, ScheduleFilter(search="legacy job")) == ["old"]
    assert listed_ids(store, ScheduleFilter(order=ScheduleOrder.NAME)) == ["new", "old"]


def test_tenants_never_see_each_other(store: Store) -> None:
    create(store, "shared-id", tenant="acme", name="acme's")
    create(store, "shared-id", tenant="globex", name="globex's", revision=1)
    create(store, "only-globex", tenant="globex")
    acme = store.get_schedule("acme", "shared-id")
    globex = store.get_schedule("globex", "shared-id")
    assert acme is not None and globex is not None
    assert acme.live_definition.name == "acme's"
    assert globex.live_definition.name == "globex's"
    assert store.get_schedule("acme", "only-globex") is None
    listed = store.list_schedules("acme", ScheduleFilter(), 10, None).items
    assert [(s.tenant, s.schedule_id) for s in listed] == [("acme", "shared-id")]
    # A mutation of one tenant's schedule leaves the other's alone.
    store.apply_state(StateChange("acme", "shared-id", 2, ScheduleStatus.DELETED, None, T0))
    still = store.get_schedule("globex", "shared-id")
    assert still is not None
    assert still.status is ScheduleStatus.ACTIVE


def test_tenant_names_with_separators_do_not_collide(store: Store) -> None:
    create(store, "b/c", tenant="a", name="tenant a")
    create(store, "c", tenant="a/b", name="tenant a/b")
    first = store.get_schedule("a", "b/c")
    second = store.get_schedule("a/b", "c")
    assert first is not None and second is not None
    assert first.live_definition.name == "tenant a"
    assert second.live_definition.name == "tenant a/b"


def test_count_schedules_by_status_without_tombstones(store: Store) -> None:
    create(store, "a", tenant="acme")
    create(store, "b", tenant="globex")
    create(store, "c", next_time=None)
    create(store, "d")
    store.apply_state(StateChange(TENANT, "d", 2, ScheduleStatus.PAUSED, None, T0))
    store.apply_state(StateChange(TENANT, "gone", 2, ScheduleStatus.DELETED, None, T0))
    assert dict(store.count_schedules()) == {"active": 2, "completed": 1, "paused": 1}


def test_datetimes_come_back_aware_utc_to_the_millisecond(store: Store) -> None:
    written = datetime(2026, 10, 25, 1, 30, 15, 987_654, tzinfo=UTC)
    create(store, "s1", next_time=written)
    schedule = store.get_schedule(TENANT, "s1")
    assert schedule is not None
    assert schedule.next_schedule_time == written.replace(microsecond=987_000)
    for moment in (
        schedule.next_schedule_time,
        schedule.accepted_at,
        schedule.created_at,
        schedule.updated_at,
    ):
        assert moment is not None
        assert moment.utcoffset() == timedelta(0)
        assert moment.microsecond % 1000 == 0
    [claimed] = store.claim_due_schedules(ClaimRequest(written, written, 1, "p", written + MINUTE))
    assert claimed.lease_until == (written + MINUTE).replace(microsecond=987_000)
    execution = store.begin_attempt(occurrence(at=written), "x", written, written + MINUTE)
    assert execution is not None
    assert execution.started_at == written.replace(microsecond=987_000)
    assert execution.lease_until == (written + MINUTE).replace(microsecond=987_000)
    stored = store.get_execution(TENANT, execution.occurrence_id)
    assert stored is not None
    assert stored.scheduled_time == written.replace(microsecond=987_000)
    assert stored.scheduled_time.utcoffset() == timedelta(0)
    assert stored.started_at is not None
    assert stored.started_at.utcoffset() == timedelta(0)


@pytest.mark.parametrize("store", [name for name in STORES if name != "sqlite"], indirect=True)
def test_indexes_need_no_partial_or_sparse_behaviour(store: Store) -> None:
    # nx-27017 ignores ``partialFilterExpression`` (the index becomes a full one) and its unique
    # indexes accept several documents lacking the key, where mongod's reject all but one. An
    # index relying on either would pass here and behave otherwise on MongoDB: there is none.
    assert isinstance(store, MongoStore)
    collections = (store.schedules, store.executions, store.api_keys, store.idempotency_keys)
    for collection in collections:
        for name, index in collection.index_information().items():
            assert "partialFilterExpression" not in index, (collection.name, name)
            assert not index.get("sparse"), (collection.name, name)
    # The one unique index is over keys every schedule document carries, tombstones included.
    assert not store.apply_state(
        StateChange(TENANT, "never-created", 2, ScheduleStatus.DELETED, None, T0)
    )
    create(store, "s1")
    for document in store.schedules.find({}):
        assert document.get("tenant") and document.get("schedule_id"), document


def test_an_unreachable_mongodb_is_transient() -> None:
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    store = MongoStore.from_url(
        "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200", "x", secrets=TEST_SECRETS
    )
    try:
        with pytest.raises(Transient):
            store.ping()
        with pytest.raises(Transient):
            store.get_schedule(TENANT, "s1")
    finally:
        store.close()


# -- executions --------------------------------------------------------------------------


def test_begin_and_finish_an_attempt(store: Store) -> None:
    first = store.begin_attempt(occurrence(), "executor-1", T0, T0 + MINUTE)
    assert first is not None
    assert first.status is ExecutionStatus.RUNNING
    assert first.attempts == 1
    assert first.occurrence_id == occurrence().occurrence_id
    assert first.lease_owner == "executor-1"
    assert first.started_at == T0
    stored = store.get_execution(TENANT, first.occurrence_id)
    assert stored is not None
    assert (stored.status, stored.attempts, stored.schedule_id) == (
        ExecutionStatus.RUNNING,
        1,
        "s1",
    )
    outcome = AttemptOutcome(
        ExecutionStatus.SUCCEEDED, T0 + timedelta(seconds=2), answer=Answer(204), duration_ms=12.5
    )
    assert store.finish_attempt(first, "executor-1", outcome)
    done = store.get_execution(TENANT, first.occurrence_id)
    assert done is not None
    assert done.status is ExecutionStatus.SUCCEEDED
    assert done.http_status == 204
    assert done.duration_ms == 12.5
    assert done.finished_at == T0 + timedelta(seconds=2)
    assert done.lease_owner is None
    assert done.lateness_ms == 0.0
    # Final: nobody fires it again, however late and whoever asks.
    assert store.begin_attempt(occurrence(), "executor-2", T0 + MINUTE, T0 + 2 * MINUTE) is None
    assert (
        store.begin_attempt(occurrence(), "executor-1", T0 + 9 * MINUTE, T0 + 10 * MINUTE) is None
    )
    assert not store.finish_attempt(first, "executor-1", outcome)  # already finished


def test_a_failed_record_is_final_too(store: Store) -> None:
    execution = store.begin_attempt(occurrence(), "executor-1", T0, T0 + MINUTE)
    assert execution is not None
    failed = AttemptOutcome(ExecutionStatus.FAILED, T0, answer=Answer(404), error="not found")
    assert store.finish_attempt(execution, "executor-1", failed)
    assert store.begin_attempt(occurrence(), "executor-1", T0 + MINUTE, T0 + 2 * MINUTE) is None


def test_a_live_lease_blocks_and_an_expired_one_is_taken_over(store: Store) -> None:
    first = store.begin_attempt(occurrence(), "executor-1", T0, T0 + MINUTE)
    assert first is not None
    assert store.begin_attempt(occurrence(), "executor-2", T0 + MINUTE / 2, T0 + MINUTE) is None
    # executor-1 died; its lease ran out.
    later = T0 + 2 * MINUTE
    second = store.begin_attempt(occurrence(), "executor-2", later, later + MINUTE)
    assert second is not None
    assert second.attempts == 2
    assert second.lease_owner == "executor-2"
    assert second.started_at == later
    outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, later, answer=Answer(200))
    assert not store.finish_attempt(first, "executor-1", outcome)  # lost its lease
    assert store.finish_attempt(second, "executor-2", outcome)


def test_a_retrying_record_takes_the_next_attempt(store: Store) -> None:
    first = store.begin_attempt(occurrence(), "executor-1", T0, T0 + MINUTE)
    assert first is not None
    retry_at = T0 + timedelta(seconds=30)
    retrying = AttemptOutcome(
        ExecutionStatus.RETRYING, T0, answer=Answer(503), error="busy", next_attempt_at=retry_at
    )
    assert store.finish_attempt(first, "executor-1", retrying)
    stored = store.get_execution(TENANT, first.occurrence_id)
    assert stored is not None
    assert stored.status is ExecutionStatus.RETRYING
    assert stored.next_attempt_at == retry_at
    second = store.begin_attempt(occurrence(revision=2), "executor-3", retry_at, retry_at + MINUTE)
    assert second is not None
    assert second.attempts == 2
    assert second.revision == 2
    again = store.get_execution(TENANT, first.occurrence_id)
    assert again is not None
    assert again.status is ExecutionStatus.RUNNING
    assert again.next_attempt_at is None


# -- the overlap marker -----------------------------------------------------------------------


def overlap_claim(at: datetime, until: datetime, buffer: bool = False) -> OverlapClaim:
    return OverlapClaim(TENANT, "s1", occurrence(at=at).occurrence_id, until, buffer)


def test_one_occurrence_holds_the_overlap_marker_until_it_is_released(store: Store) -> None:
    create(store, "s1")
    first, second = overlap_claim(T0, T0 + MINUTE), overlap_claim(T0 + SECOND, T0 + MINUTE)
    assert store.take_overlaps([first, second], T0) == [OverlapTurn.HELD, OverlapTurn.REFUSED]
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None
    assert (stored.overlap_holder, stored.overlap_until) == (first.occurrence_id, T0 + MINUTE)
    # The holder again (its next attempt, a duplicate delivery): held, for longer.
    renewed = first._replace(until=T0 + 2 * MINUTE)
    assert store.take_overlaps([renewed], T0 + SECOND) == [OverlapTurn.HELD]
    assert store.take_overlaps([second], T0 + 90 * SECOND) == [OverlapTurn.REFUSED]
    # Another occurrence's release frees nothing; the holder's does.
    store.release_overlaps([(TENANT, "s1", second.occurrence_id)])
    assert store.take_overlaps([second], T0 + 90 * SECOND) == [OverlapTurn.REFUSED]
    store.release_overlaps([(TENANT, "s1", first.occurrence_id)])
    assert store.take_overlaps([second], T0 + 90 * SECOND) == [OverlapTurn.HELD]


def test_a_hold_whose_time_passed_is_free_its_executor_died(store: Store) -> None:
    create(store, "s1")
    first, second = overlap_claim(T0, T0 + MINUTE), overlap_claim(T0 + SECOND, T0 + 3 * MINUTE)
    assert store.take_overlaps([first], T0) == [OverlapTurn.HELD]
    assert store.take_overlaps([second], T0 + MINUTE - SECOND) == [OverlapTurn.REFUSED]
    assert store.take_overlaps([second], T0 + MINUTE + SECOND) == [OverlapTurn.HELD]
    # The dead holder's late release does not free its successor's hold.
    store.release_overlaps([(TENANT, "s1", first.occurrence_id)])
    third = overlap_claim(T0 + 2 * SECOND, T0 + 3 * MINUTE)
    assert store.take_overlaps([third], T0 + 2 * MINUTE) == [OverlapTurn.REFUSED]


def test_one_occurrence_waits_for_the_marker_and_takes_it_first(store: Store) -> None:
    create(store, "s1")
    now = T0
    holder = overlap_claim(T0, T0 + MINUTE, buffer=True)
    waiter = overlap_claim(T0 + SECOND, now + 10 * SECOND, buffer=True)
    later = overlap_claim(T0 + 2 * SECOND, now + 10 * SECOND, buffer=True)
    assert store.take_overlaps([holder, waiter, later], now) == [
        OverlapTurn.HELD,
        OverlapTurn.WAITING,
        OverlapTurn.REFUSED,
    ]
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None
    assert (stored.overlap_waiting, stored.overlap_waiting_until) == (
        waiter.occurrence_id,
        now + 10 * SECOND,
    )
    # Checked again while the holder runs: it keeps waiting, for longer.
    assert store.take_overlaps([waiter._replace(until=now + 15 * SECOND)], now + 5 * SECOND) == [
        OverlapTurn.WAITING
    ]
    store.release_overlaps([(TENANT, "s1", holder.occurrence_id)])
    # Free, but one waits: a later occurrence neither holds nor waits; the waiter holds.
    assert store.take_overlaps([later], now + 6 * SECOND) == [OverlapTurn.REFUSED]
    assert store.take_overlaps([waiter._replace(until=T0 + MINUTE)], now + 6 * SECOND) == [
        OverlapTurn.HELD
    ]
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None
    assert (stored.overlap_holder, stored.overlap_waiting) == (waiter.occurrence_id, None)
    # A wait whose time passed (its executor died) makes room for another.
    assert store.take_overlaps([later], now + 7 * SECOND) == [OverlapTurn.WAITING]
    assert store.take_overlaps([later], now + 20 * SECOND) == [OverlapTurn.WAITING]
    last = overlap_claim(T0 + 3 * SECOND, now + MINUTE, buffer=True)
    assert store.take_overlaps([last], now + 31 * SECOND) == [OverlapTurn.WAITING]


def test_what_a_claim_saw_orders_the_tries_and_a_stale_view_only_delays(store: Store) -> None:
    create(store, "s1")
    first = overlap_claim(T0, T0 + MINUTE, buffer=True)
    # Seen as its own (wrongly: free): held all the same.
    assert store.take_overlaps([first._replace(seen=OverlapSeen.MINE)], T0) == [OverlapTurn.HELD]
    second = overlap_claim(T0 + SECOND, T0 + MINUTE, buffer=True)._replace(seen=OverlapSeen.OTHER)
    assert store.take_overlaps([second], T0) == [OverlapTurn.WAITING]
    store.release_overlaps([(TENANT, "s1", first.occurrence_id)])
    # Seen held by another though freed since: it waits, and holds at its next claim.
    assert store.take_overlaps([second], T0 + SECOND) == [OverlapTurn.WAITING]
    assert store.take_overlaps([second._replace(seen=None)], T0 + SECOND) == [OverlapTurn.HELD]
    third = overlap_claim(T0 + 2 * SECOND, T0 + MINUTE, buffer=True)._replace(seen=OverlapSeen.MINE)
    assert store.take_overlaps([third], T0 + 2 * SECOND) == [OverlapTurn.WAITING]


@pytest.mark.parametrize("buffer", [False, True])
def test_a_run_taken_over_waits_first_in_line_under_either_policy(
    store: Store, buffer: bool
) -> None:
    create(store, "s1")
    # The dead run's hold ended; a later occurrence took the marker, another waits (buffer).
    dead = overlap_claim(T0, T0 + MINUTE, buffer)
    later = overlap_claim(T0 + SECOND, T0 + 3 * MINUTE, buffer)
    waiter = overlap_claim(T0 + 2 * SECOND, T0 + 3 * MINUTE, buffer)
    assert store.take_overlaps([dead], T0) == [OverlapTurn.HELD]
    at = T0 + MINUTE + SECOND
    waits = OverlapTurn.WAITING if buffer else OverlapTurn.REFUSED
    assert store.take_overlaps([later, waiter], at) == [OverlapTurn.HELD, waits]
    # The dead run, taken over: not refused, it waits, displacing the buffered one.
    taken_over = dead._replace(until=at + MINUTE, taken_over=True)
    assert store.take_overlaps([taken_over], at) == [OverlapTurn.WAITING]
    assert store.take_overlaps([waiter], at + SECOND) == [OverlapTurn.REFUSED]
    store.release_overlaps([(TENANT, "s1", later.occurrence_id)])
    # Free: it holds next, before any other.
    assert store.take_overlaps([waiter], at + 2 * SECOND) == [OverlapTurn.REFUSED]
    assert store.take_overlaps([taken_over], at + 2 * SECOND) == [OverlapTurn.HELD]
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None
    assert (stored.overlap_holder, stored.overlap_waiting) == (dead.occurrence_id, None)


def test_an_ended_pause_is_resumed_once_with_its_next_time_kept(store: Store) -> None:
    create(store, "s1")
    create(store, "s2")
    before = store.get_schedule(TENANT, "s1")
    assert before is not None
    intent = PauseIntent(T0 + MINUTE, "maintenance", "ci (0123abcd4567)")
    assert store.apply_state(StateChange(TENANT, "s1", 10, ScheduleStatus.PAUSED, None, T0, intent))
    assert store.apply_state(StateChange(TENANT, "s2", 10, ScheduleStatus.PAUSED, None, T0))
    paused = store.get_schedule(TENANT, "s1")
    assert paused is not None
    assert (paused.paused_until, paused.pause_note, paused.pause_set_by) == intent
    assert store.resume_ended_pauses(T0 + MINUTE - SECOND, 10) == []
    # Two pollers: the first resumes it, the second finds nothing (s2 has no end).
    assert [one.schedule_id for one in store.resume_ended_pauses(T0 + MINUTE, 10)] == ["s1"]
    assert store.resume_ended_pauses(T0 + MINUTE, 10) == []
    resumed = store.get_schedule(TENANT, "s1")
    assert resumed is not None
    assert resumed.status is ScheduleStatus.ACTIVE
    assert resumed.next_schedule_time == before.next_schedule_time
    assert resumed.state_revision > 10
    assert (resumed.paused_until, resumed.pause_note, resumed.pause_set_by) == (None, None, None)
    still = store.get_schedule(TENANT, "s2")
    assert still is not None and still.status is ScheduleStatus.PAUSED


def test_a_pause_resumed_by_its_owner_first_is_not_resumed_again(store: Store) -> None:
    create(store, "s1")
    intent = PauseIntent(T0 + MINUTE, None, "console")
    assert store.apply_state(StateChange(TENANT, "s1", 10, ScheduleStatus.PAUSED, None, T0, intent))
    assert store.apply_state(
        StateChange(TENANT, "s1", 11, ScheduleStatus.ACTIVE, T0 + 2 * MINUTE, T0)
    )
    assert store.apply_state(StateChange(TENANT, "s1", 12, ScheduleStatus.PAUSED, None, T0))
    assert store.resume_ended_pauses(T0 + MINUTE, 10) == []
    again = store.get_schedule(TENANT, "s1")
    assert again is not None and again.status is ScheduleStatus.PAUSED


def test_skips_are_replaced_only_as_read(store: Store) -> None:
    create(store, "s1")
    first, second = (T0 + MINUTE,), (T0 + MINUTE, T0 + 2 * MINUTE)
    assert store.set_skips(SkipsChange(TENANT, "s1", 0, first))
    assert not store.set_skips(SkipsChange(TENANT, "s1", 0, second))  # another wrote first
    assert store.set_skips(SkipsChange(TENANT, "s1", 1, second))
    assert not store.set_skips(SkipsChange(TENANT, "s1", 1, ()))
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None and (stored.skips, stored.skips_version) == (second, 2)
    assert store.set_skips(SkipsChange(TENANT, "s1", 2, ()))
    emptied = store.get_schedule(TENANT, "s1")
    assert emptied is not None and emptied.skips == ()
    assert not store.set_skips(SkipsChange(TENANT, "unknown", 0, first))


def test_a_replace_or_a_pause_keeps_the_overlap_marker(store: Store) -> None:
    create(store, "s1")
    first = overlap_claim(T0, T0 + MINUTE)
    assert store.take_overlaps([first], T0) == [OverlapTurn.HELD]
    create(store, "s1", revision=2)
    assert store.apply_state(StateChange(TENANT, "s1", 3, ScheduleStatus.PAUSED, None, T0))
    stored = store.get_schedule(TENANT, "s1")
    assert stored is not None
    assert stored.overlap_holder == first.occurrence_id
    assert store.take_overlaps([overlap_claim(T0 + SECOND, T0 + MINUTE)], T0) == [
        OverlapTurn.REFUSED
    ]


def test_record_skips_writes_new_and_retrying_records_only(store: Store) -> None:
    running = occurrence("s1", T0)
    succeeded = occurrence("s1", T0 + MINUTE)
    retrying = occurrence("s1", T0 + 2 * MINUTE)
    fresh = occurrence("s1", T0 + 3 * MINUTE)
    assert store.begin_attempt(running, "e", T0, T0 + 10 * MINUTE) is not None
    done = store.begin_attempt(succeeded, "e", T0, T0 + 10 * MINUTE)
    assert done is not None
    store.finish_attempt(
        done, "e", AttemptOutcome(ExecutionStatus.SUCCEEDED, T0, answer=Answer(200))
    )
    again = store.begin_attempt(retrying, "e", T0, T0 + 10 * MINUTE)
    assert again is not None
    store.finish_attempt(
        again, "e", AttemptOutcome(ExecutionStatus.RETRYING, T0, answer=Answer(500))
    )

    written = store.record_skips(
        [(running, "missed"), (succeeded, "missed"), (retrying, "missed"), (fresh, "missed")],
        T0 + 5 * MINUTE,
    )
    assert written == 2

    def status(item: Occurrence) -> ExecutionStatus:
        record = store.get_execution(TENANT, item.occurrence_id)
        assert record is not None
        return record.status

    assert status(running) is ExecutionStatus.RUNNING
    assert status(succeeded) is ExecutionStatus.SUCCEEDED
    assert status(retrying) is ExecutionStatus.SKIPPED
    assert status(fresh) is ExecutionStatus.SKIPPED
    skipped = store.get_execution(TENANT, fresh.occurrence_id)
    assert skipped is not None
    assert skipped.attempts == 0
    assert skipped.error == "missed"
    assert skipped.finished_at == T0 + 5 * MINUTE
    assert store.record_skips([(fresh, "again")], T0) == 0  # skipped stays as it is
    # A skipped occurrence may still be fired by a manual run (a backfill): one more attempt.
    taken = store.begin_attempt(manual(fresh), "e", T0 + 6 * MINUTE, T0 + 7 * MINUTE)
    assert taken is not None
    assert taken.attempts == 1


def manual(item: Occurrence) -> Occurrence:
    """A backfill of the occurrence: the same occurrence id, a manual run."""
    return dataclasses.replace(item, manual=True)


@pytest.mark.parametrize("batch", [False, True], ids=["one", "batch"])
def test_a_skip_is_final_for_scheduled_deliveries_not_for_a_manual_run_or_a_superseded_one(
    store: Store, batch: bool
) -> None:
    create(store, "s1")
    skipped = occurrence("s1", T0)
    superseded = occurrence("s1", T0 + MINUTE)
    other = occurrence("s1", T0 + 2 * MINUTE)
    assert store.record_skips([(skipped, "overlap")], T0) == 1
    assert store.record_skips([(superseded, "changed")], T0, superseded=True) == 1
    later = T0 + 5 * MINUTE

    def begin(*items: Occurrence) -> list[Execution | None]:
        # A batch of several takes another path on MongoDB than a batch of one.
        if batch:
            return store.begin_attempts([*items, other], "e", later, later + MINUTE)[:-1]
        return [store.begin_attempt(item, "e", later, later + MINUTE) for item in items]

    # The same occurrence delivered again (sent twice, or come back): not begun, stays skipped.
    assert begin(skipped) == [None]
    record = store.get_execution(TENANT, skipped.occurrence_id)
    assert record is not None
    assert (record.status, record.attempts, record.error) == (ExecutionStatus.SKIPPED, 0, "overlap")
    # A superseded one comes again at its schedule's new revision; a backfill runs the skip.
    again, backfilled = begin(dataclasses.replace(superseded, revision=2), manual(skipped))
    assert again is not None and backfilled is not None
    assert (again.status, again.attempts, again.revision) == (ExecutionStatus.RUNNING, 1, 2)
    assert (backfilled.status, backfilled.attempts) == (ExecutionStatus.RUNNING, 1)


def test_list_executions_newest_first_with_a_cursor(store: Store) -> None:
    times = [T0 + number * MINUTE for number in range(5)]
    for moment in times:
        assert store.begin_attempt(occurrence("s1", moment), "e", T0, T0 + MINUTE) is not None
    store.begin_attempt(occurrence("other", T0), "e", T0, T0 + MINUTE)
    first = store.list_executions(HistoryRequest(TENANT, "s1", 2, None))
    assert [e.scheduled_time for e in first.items] == [times[4], times[3]]
    assert first.next_cursor is not None
    second = store.list_executions(HistoryRequest(TENANT, "s1", 2, first.next_cursor))
    assert [e.scheduled_time for e in second.items] == [times[2], times[1]]
    assert second.next_cursor is not None
    last = store.list_executions(HistoryRequest(TENANT, "s1", 2, second.next_cursor))
    assert [e.scheduled_time for e in last.items] == [times[0]]
    assert last.next_cursor is None
    assert store.list_executions(HistoryRequest("globex", "s1", 10, None)).items == []
    assert store.get_execution("globex", occurrence("s1", T0).occurrence_id) is None


# -- concurrency -------------------------------------------------------------------------


def _claim_all(store: Store, owner: str) -> list[str]:
    claimed: list[str] = []
    empty = 0
    # A claim may come back empty when concurrent claimers took every candidate it looked at
    # (it promises "at most limit"); a few empty answers in a row mean nothing is left.
    while empty < 3:
        batch = store.claim_due_schedules(ClaimRequest(T0, T0, 25, owner, T0 + 60 * MINUTE))
        empty = 0 if batch else empty + 1
        claimed += [schedule.schedule_id for schedule in batch]
    return claimed


_start: Barrier | None = None


def _join_start(barrier: Barrier) -> None:
    global _start
    _start = barrier


def _claim_all_in_process(location: str, database_name: str | None, owner: str) -> list[str]:
    """In a child process: open the same store afresh, wait for the others, claim."""
    store: Store
    database: SqliteDatabase | None = None
    if database_name is None:
        database = SqliteDatabase(Path(location))
        store = SqliteStore(database, secrets=TEST_SECRETS)
    else:
        store = MongoStore.from_url(location, database_name, secrets=TEST_SECRETS)
    try:
        assert _start is not None
        _start.wait(timeout=60)
        return _claim_all(store, owner)
    finally:
        store.close()
        if database is not None:
            database.close()


def test_concurrent_claimers_never_get_the_same_schedule(
    store: Store, request: pytest.FixtureRequest
) -> None:
    if isinstance(store, SqliteStore):
        due, location, database_name = 2_000, str(store.db.path), None
    else:
        assert isinstance(store, MongoStore)
        if not store.owns_client:
            pytest.skip(
                "mongomock is not thread-safe (two threads can win the same find_one_and_update);"
                " the nx-27017 and SCHEDULER_TEST_MONGO_URL runs cover this"
            )
        # Fewer on a wire server: nx-27017 claims ~150 schedules/s.
        variant = request.node.callspec.params["store"]
        due, location = 600, mongo_url_for(request, variant)
        database_name = store.schedules.database.name
    definitions = definition()
    for number in range(due):
        store.apply_definition((TENANT, f"s{number:04d}", 1, definitions, T0 - MINUTE, T0))
    # ``spawn``: forking a process that runs threads is unsafe (and warns on newer Pythons).
    context = get_context("spawn")
    # Two processes and four threads start claiming together, once the processes are up.
    start = context.Barrier(6)

    def in_thread(owner: str) -> list[str]:
        start.wait(timeout=60)
        return _claim_all(store, owner)

    with (
        ProcessPoolExecutor(
            2, mp_context=context, initializer=_join_start, initargs=(start,)
        ) as processes,
        ThreadPoolExecutor(4) as threads,
    ):
        in_processes = [
            processes.submit(_claim_all_in_process, location, database_name, f"process-{n}")
            for n in range(2)
        ]
        in_threads = [threads.submit(in_thread, f"thread-{n}") for n in range(4)]
        results = [future.result(timeout=300) for future in in_threads + in_processes]
    claimed = [schedule_id for result in results for schedule_id in result]
    assert len(claimed) == len(set(claimed)) == due
    assert sum(1 for result in results if result) >= 2, "the claimers should have overlapped"


# -- quota counts, idempotency records, API keys --------------------------------------------


def test_count_tenant_schedules_counts_active_and_paused_of_that_tenant(store: Store) -> None:
    create(store, "a")
    create(store, "b")
    store.apply_state(StateChange(TENANT, "b", 2, ScheduleStatus.PAUSED, None, T0))
    create(store, "c", next_time=None)  # completed: fires no more
    create(store, "d")
    store.apply_state(StateChange(TENANT, "d", 2, ScheduleStatus.DELETED, None, T0))
    create(store, "e", tenant="globex")
    assert store.count_tenant_schedules(TENANT) == 2
    assert store.count_tenant_schedules("globex") == 1
    assert store.count_tenant_schedules("nobody") == 0


def slot(schedule_id: str, revision: int = 5, tenant: str = TENANT) -> SlotReservation:
    return SlotReservation(tenant, schedule_id, revision, expires_at=T0 + 60 * MINUTE)


def reserve(store: Store, schedule_id: str, quota: int, revision: int = 5) -> int | None:
    return store.reserve_schedule_slot(slot(schedule_id, revision), quota, T0)


def test_slots_are_reserved_while_the_quota_has_room(store: Store) -> None:
    create(store, "live")
    store.apply_state(
        StateChange(TENANT, "live", 2, ScheduleStatus.PAUSED, None, T0)
    )  # paused: live still
    create(store, "done", next_time=None)  # completed: takes no slot
    create(store, "gone")
    store.apply_state(StateChange(TENANT, "gone", 2, ScheduleStatus.DELETED, None, T0))
    assert reserve(store, "a", quota=3) is None
    assert reserve(store, "b", quota=3) is None
    assert reserve(store, "c", quota=3) == 3
    # Each tenant alone.
    assert store.reserve_schedule_slot(slot("a", tenant="globex"), 1, T0) is None


def test_a_slot_counts_once_its_create_is_applied_or_can_no_longer_be(store: Store) -> None:
    assert reserve(store, "a", quota=2, revision=5) is None
    assert reserve(store, "b", quota=2, revision=5) is None
    create(store, "a", revision=5)  # applied: live now, counted once
    # Deleted before its create landed: the create never will, and frees its slot.
    store.apply_state(StateChange(TENANT, "b", 6, ScheduleStatus.DELETED, None, T0))
    assert reserve(store, "c", quota=2) is None
    assert reserve(store, "d", quota=2) == 2


def test_a_reservation_of_a_schedule_that_takes_a_slot_is_always_held(store: Store) -> None:
    create(store, "a")
    assert reserve(store, "a", quota=1, revision=7) is None  # a replace adds no schedule
    assert reserve(store, "b", quota=1) == 1
    # The replace is pending still: deleted meanwhile, then replaced, "a" is live again.
    store.apply_state(StateChange(TENANT, "a", 6, ScheduleStatus.DELETED, None, T0))
    assert reserve(store, "b", quota=1) == 1


def test_a_released_or_expired_slot_is_free_again(store: Store) -> None:
    assert reserve(store, "a", quota=1) is None
    store.release_schedule_slot(slot("a"))
    store.release_schedule_slot(slot("a"))  # twice: nothing more
    assert reserve(store, "b", quota=1) is None
    assert reserve(store, "c", quota=1) == 1
    later = T0 + 61 * MINUTE  # past b's expiry: its message was lost
    assert store.reserve_schedule_slot(slot("c"), 1, later) is None


def test_the_quota_holds_past_many_reservations(store: Store) -> None:
    for number in range(70):
        assert reserve(store, f"s{number:02d}", quota=70) is None
    assert reserve(store, "one-more", quota=70) == 70
    for number in range(0, 70, 2):
        create(store, f"s{number:02d}", revision=5)
    assert reserve(store, "one-more", quota=70) == 70
    for number in range(0, 10, 2):
        store.apply_state(
            StateChange(TENANT, f"s{number:02d}", 6, ScheduleStatus.DELETED, None, T0)
        )
    for number in range(5):
        assert reserve(store, f"new-{number}", quota=70) is None
    assert reserve(store, "one-more", quota=70) == 70


def _reserve_all(store: Store, prefix: str, quota: int) -> list[str]:
    return [
        name
        for name in (f"{prefix}-{number}" for number in range(25))
        if store.reserve_schedule_slot(slot(name), quota, T0) is None
    ]


def _reserve_all_in_process(location: str, database_name: str | None, prefix: str) -> list[str]:
    """In a child process: open the same store afresh, wait for the others, reserve."""
    store: Store
    database: SqliteDatabase | None = None
    if database_name is None:
        database = SqliteDatabase(Path(location))
        store = SqliteStore(database, secrets=TEST_SECRETS)
    else:
        store = MongoStore.from_url(location, database_name, secrets=TEST_SECRETS)
    try:
        assert _start is not None
        _start.wait(timeout=60)
        return _reserve_all(store, prefix, quota=5)
    finally:
        store.close()
        if database is not None:
            database.close()


def test_concurrent_reservations_never_pass_the_quota(
    store: Store, request: pytest.FixtureRequest
) -> None:
    if isinstance(store, SqliteStore):
        location, database_name = str(store.db.path), None
    else:
        assert isinstance(store, MongoStore)
        if not store.owns_client:
            pytest.skip("mongomock is not thread-safe; the wire runs cover this")
        location = mongo_url_for(request, request.node.callspec.params["store"])
        database_name = store.schedules.database.name
    create(store, "live")
    context = get_context("spawn")
    start = context.Barrier(6)

    def in_thread(prefix: str) -> list[str]:
        start.wait(timeout=60)
        return _reserve_all(store, prefix, quota=5)

    with (
        ProcessPoolExecutor(
            2, mp_context=context, initializer=_join_start, initargs=(start,)
        ) as processes,
        ThreadPoolExecutor(4) as threads,
    ):
        futures = [
            processes.submit(_reserve_all_in_process, location, database_name, f"p{n}")
            for n in range(2)
        ] + [threads.submit(in_thread, f"t{n}") for n in range(4)]
        held = [name for future in futures for name in future.result(timeout=300)]
    assert len(held) == 4, held  # 150 tried, one slot taken already by "live"


# Idempotency records expire in wall-clock time where the server has TTL indexes (MongoDB,
# mongomock): these tests' instants lie in the future.
I0 = datetime(2100, 1, 1, 0, 0, 0, 123_000, tzinfo=UTC)


def idempotency(
    key: str = "k1",
    fingerprint: str = "fp-1",
    schedule_id: str = "s1",
    tenant: str = TENANT,
    expires_at: datetime = I0 + 60 * MINUTE,
) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant=tenant,
        key=key,
        fingerprint=fingerprint,
        schedule_id=schedule_id,
        revision=7,
        next_schedule_time=I0 + timedelta(microseconds=456_789),
        timezone="Asia/Kolkata",
        created_at=I0,
        expires_at=expires_at,
    )


def test_an_idempotency_key_is_saved_once_and_answers_the_first_record(store: Store) -> None:
    first, won = store.save_idempotency_record(idempotency(), I0)
    assert won
    assert first.next_schedule_time == I0 + timedelta(microseconds=456_000)
    assert first.expires_at == I0 + 60 * MINUTE
    again, won_again = store.save_idempotency_record(
        idempotency(fingerprint="fp-2", schedule_id="s2"), I0 + MINUTE
    )
    assert not won_again
    assert again == first
    assert store.get_idempotency_record(TENANT, "k1", I0 + MINUTE) == first
    assert store.get_idempotency_record(TENANT, "k2", I0) is None
    # Keys are the tenant's own: the same key of another tenant is another record.
    other, won_other = store.save_idempotency_record(idempotency(tenant="globex"), I0)
    assert won_other
    assert other.tenant == "globex"
    assert store.get_idempotency_record("globex", "k1", I0) == other


def test_an_expired_idempotency_record_is_gone_and_replaced(store: Store) -> None:
    store.save_idempotency_record(idempotency(expires_at=I0 + MINUTE), I0)
    assert store.get_idempotency_record(TENANT, "k1", I0 + MINUTE) is None
    replacement, won = store.save_idempotency_record(
        idempotency(fingerprint="fp-2", expires_at=I0 + 9 * MINUTE), I0 + 2 * MINUTE
    )
    assert won
    assert replacement.fingerprint == "fp-2"
    stored = store.get_idempotency_record(TENANT, "k1", I0 + 2 * MINUTE)
    assert stored is not None
    assert stored.fingerprint == "fp-2"


def test_deleting_an_idempotency_record_is_guarded_by_its_fingerprint(store: Store) -> None:
    store.save_idempotency_record(idempotency(), I0)
    assert not store.delete_idempotency_record(TENANT, "k1", "fp-other")
    assert store.get_idempotency_record(TENANT, "k1", I0) is not None
    assert not store.delete_idempotency_record("globex", "k1", "fp-1")
    assert store.delete_idempotency_record(TENANT, "k1", "fp-1")
    assert store.get_idempotency_record(TENANT, "k1", I0) is None
    assert store.save_idempotency_record(idempotency(fingerprint="fp-3"), I0)[1]


def test_a_claimed_idempotency_key_takes_its_requests_answer_once(store: Store) -> None:
    claim, won = store.save_idempotency_record(
        dataclasses.replace(idempotency(), schedule_id="", expires_at=I0 + MINUTE), I0
    )
    assert won and claim.answer is None
    # Another request's answer, or another tenant's, does not land on the claim.
    assert not store.keep_idempotency_answer(TENANT, "k1", "fp-other", "no", I0 + 60 * MINUTE)
    assert not store.keep_idempotency_answer("globex", "k1", "fp-1", "no", I0 + 60 * MINUTE)
    assert store.keep_idempotency_answer(TENANT, "k1", "fp-1", '{"id":"a"}', I0 + 60 * MINUTE)
    kept = dataclasses.replace(claim, answer='{"id":"a"}', expires_at=I0 + 60 * MINUTE)
    # Kept past the claim's own expiry; once answered, it takes no other answer.
    assert store.get_idempotency_record(TENANT, "k1", I0 + 2 * MINUTE) == kept
    assert not store.keep_idempotency_answer(TENANT, "k1", "fp-1", '{"id":"b"}', I0 + MINUTE)
    assert store.get_idempotency_record(TENANT, "k1", I0) == kept


def test_concurrent_saves_of_one_idempotency_key_have_one_winner(store: Store) -> None:
    if isinstance(store, MongoStore) and not store.owns_client:
        pytest.skip("mongomock is not thread-safe; the wire-server run covers this")
    with ThreadPoolExecutor(8) as threads:
        results = list(
            threads.map(
                lambda n: store.save_idempotency_record(
                    idempotency(fingerprint=f"fp-{n}", schedule_id=f"s{n}"), I0
                ),
                range(16),
            )
        )
    winners = [record for record, won in results if won]
    assert len(winners) == 1
    assert {record for record, _ in results} == {winners[0]}


def api_key(
    key_hash: str, tenant: str = TENANT, minutes: int = 0, role: Role = Role.ADMIN
) -> ApiKey:
    return ApiKey(
        key_hash=key_hash,
        tenant=tenant,
        name=f"key {key_hash[:4]}",
        created_at=T0 + minutes * MINUTE,
        role=role,
    )


def test_api_keys_are_added_found_listed_and_revoked(store: Store) -> None:
    first = api_key("a1" * 32)
    second = api_key("b2" * 32, minutes=1)
    other = api_key("c3" * 32, tenant="globex", minutes=2)
    for key in (first, second, other):
        assert store.add_api_key(key)
    assert not store.add_api_key(api_key("a1" * 32, tenant="globex"))  # the hash is taken
    assert store.find_api_key("a1" * 32) == first
    assert store.find_api_key("ff" * 32) is None
    assert store.list_api_keys() == [first, second, other]
    assert store.list_api_keys(TENANT) == [first, second]
    assert store.list_api_keys("nobody") == []
    assert store.delete_api_key(first.key_id) == 1
    assert store.find_api_key("a1" * 32) is None
    assert store.delete_api_key(first.key_id) == 0
    assert store.delete_api_key("not hex!") == 0
    assert store.delete_api_key("") == 0  # never "every key"
    assert store.list_api_keys() == [second, other]


def test_each_api_key_keeps_its_role(store: Store) -> None:
    keys = [api_key(f"{n}d" * 32, minutes=n, role=role) for n, role in enumerate(Role)]
    for key in keys:
        assert store.add_api_key(key)
    for key in keys:
        found = store.find_api_key(key.key_hash)
        assert found is not None and found.role is key.role
    assert [key.role for key in store.list_api_keys(TENANT)] == [Role.READ, Role.WRITE, Role.ADMIN]


def test_a_mongo_key_stored_before_roles_is_an_admin_key() -> None:
    client: Any = mongomock_ng.MongoClient(tz_aware=True)
    adapter = MongoStore(client, "scheduler_test", secrets=TEST_SECRETS)
    try:
        adapter.api_keys.insert_one(
            {"_id": "ab" * 32, "tenant": TENANT, "name": "ci", "created_at": T0}
        )
        found = adapter.find_api_key("ab" * 32)
        assert found is not None and found.role is Role.ADMIN
    finally:
        adapter.close()
        client.close()


# -- retention -------------------------------------------------------------------------


def test_purge_expired_deletes_only_old_final_records_and_finished_schedules(store: Store) -> None:
    old, recent = T0, T0 + 10 * MINUTE
    for index, finished in enumerate((old, old, recent)):
        item = occurrence("s1", T0 + index * MINUTE)
        taken = store.begin_attempt(item, "e", finished, finished + MINUTE)
        assert taken is not None
        outcome = AttemptOutcome(ExecutionStatus.SUCCEEDED, finished, answer=Answer(200))
        assert store.finish_attempt(taken, "e", outcome)
    store.record_skips([(occurrence("s1", T0 + 5 * MINUTE), "missed")], old)
    in_flight = occurrence("s1", T0 + 6 * MINUTE)
    assert store.begin_attempt(in_flight, "e", old, old + MINUTE) is not None
    retrying = occurrence("s1", T0 + 7 * MINUTE)
    again = store.begin_attempt(retrying, "e", old, old + MINUTE)
    assert again is not None
    store.finish_attempt(
        again, "e", AttemptOutcome(ExecutionStatus.RETRYING, old, answer=Answer(503))
    )

    create(store, "live")
    create(store, "done", next_time=None)
    create(store, "gone")
    store.apply_state(StateChange(TENANT, "gone", 5, ScheduleStatus.DELETED, None, T0))
    create(store, "paused")
    store.apply_state(StateChange(TENANT, "paused", 5, ScheduleStatus.PAUSED, None, T0))

    cutoff = T0 + 5 * MINUTE
    remaining = store.list_executions(HistoryRequest(TENANT, "s1", 50, None)).items
    if isinstance(store, MongoStore):
        # MongoDB leaves execution records to its TTL index (test_mongo_retention.py).
        assert store.purge_expired(cutoff, cutoff, limit=2) == (0, 2)
        assert store.purge_expired(cutoff, cutoff, limit=2) == (0, 0)
        assert store.list_executions(HistoryRequest(TENANT, "s1", 50, None)).items == remaining
    else:
        assert store.purge_expired(cutoff, cutoff, limit=2) == (2, 2)
        assert store.purge_expired(cutoff, cutoff, limit=2) == (1, 0)
        assert store.purge_expired(cutoff, cutoff, limit=2) == (0, 0)
        remaining = store.list_executions(HistoryRequest(TENANT, "s1", 50, None)).items
        assert sorted(record.status.value for record in remaining) == [
            "retrying",
            "running",
            "succeeded",
        ]
        assert {
            record.finished_at for record in remaining if record.status.value == "succeeded"
        } == {recent}
    assert store.get_schedule(TENANT, "live") is not None
    assert store.get_schedule(TENANT, "paused") is not None
    assert store.get_schedule(TENANT, "done") is None
    assert store.get_schedule(TENANT, "gone") is None


def test_record_skips_takes_over_a_run_whose_lease_ran_out(store: Store) -> None:
    abandoned = occurrence("s1", T0)
    assert store.begin_attempt(abandoned, "executor:dead", T0, T0 + MINUTE) is not None
    assert store.record_skips([(abandoned, "schedule deleted")], T0 + 30 * SECOND) == 0
    assert store.record_skips([(abandoned, "schedule deleted")], T0 + 2 * MINUTE) == 1
    record = store.get_execution(TENANT, abandoned.occurrence_id)
    assert record is not None
    assert (record.status, record.error) == (ExecutionStatus.SKIPPED, "schedule deleted")
    assert record.lease_owner is None and record.lease_until is None


# -- dead letters -----------------------------------------------------------------------------


def fail(
    store: Store,
    minute: int,
    tenant: str = TENANT,
    finished: datetime = T0,
    schedule_id: str = "s1",
) -> Occurrence:
    """A failed (dead-lettered) occurrence of ``schedule_id``, ``minute`` minutes after T0."""
    occurrence = Occurrence(tenant, schedule_id, 1, T0 + minute * MINUTE)
    execution = store.begin_attempt(occurrence, "x", T0, T0 + MINUTE)
    assert execution is not None
    outcome = AttemptOutcome(ExecutionStatus.FAILED, finished, answer=Answer(500), error="HTTP 500")
    assert store.finish_attempt(execution, "x", outcome)
    return occurrence


def dead_letter_ids(store: Store, tenant: str = TENANT) -> list[str]:
    return [
        item.occurrence_id
        for item in store.list_dead_letters(DeadLetterRequest(tenant, 50, None)).items
    ]


def test_dead_letters_are_the_tenants_failed_records_latest_failure_first(store: Store) -> None:
    failed = [fail(store, n, finished=T0 + (10 - n) * SECOND) for n in range(3)]
    other = fail(store, 0, tenant="globex")
    succeeded = Occurrence(TENANT, "s1", 1, T0 + 9 * MINUTE)
    execution = store.begin_attempt(succeeded, "x", T0, T0 + MINUTE)
    assert execution is not None
    store.finish_attempt(execution, "x", AttemptOutcome(ExecutionStatus.SUCCEEDED, T0))
    first = store.list_dead_letters(DeadLetterRequest(TENANT, 2, None))
    assert [item.occurrence_id for item in first.items] == [
        failed[0].occurrence_id,
        failed[1].occurrence_id,
    ]
    rest = store.list_dead_letters(DeadLetterRequest(TENANT, 2, first.next_cursor))
    assert [item.occurrence_id for item in rest.items] == [failed[2].occurrence_id]
    assert rest.next_cursor is None
    letter = rest.items[0]
    assert (letter.status, letter.http_status, letter.error) == (
        ExecutionStatus.FAILED,
        500,
        "HTTP 500",
    )
    assert letter.finished_at == T0 + 8 * SECOND
    assert dead_letter_ids(store, "globex") == [other.occurrence_id]


def test_dead_letters_of_some_schedules_only(store: Store) -> None:
    letters = {
        schedule_id: [
            fail(store, n, finished=T0 + (10 - n) * SECOND, schedule_id=schedule_id).occurrence_id
            for n in range(3)
        ]
        for schedule_id in ("s1", "s2", "s3")
    }
    fail(store, 0, tenant="globex", schedule_id="s2")

    def of(schedule_ids: set[str], limit: int) -> list[str]:
        seen: list[str] = []
        cursor: str | None = None
        while True:
            page = store.list_dead_letters(DeadLetterRequest(TENANT, limit, cursor, schedule_ids))
            seen += [item.occurrence_id for item in page.items]
            if page.next_cursor is None:
                return seen
            cursor = page.next_cursor

    latest_first = [letter for n in range(3) for letter in (letters["s1"][n], letters["s3"][n])]
    assert sorted(of({"s1", "s3"}, 2)) == sorted(latest_first)
    assert of({"s2"}, 2) == letters["s2"]
    assert of({"s2", "elsewhere"}, 50) == letters["s2"]
    assert of(set(), 50) == []


def test_a_reopened_dead_letter_gets_one_more_attempt(store: Store) -> None:
    occurrence = fail(store, 0)
    reopened = store.reopen_dead_letter(TENANT, occurrence.occurrence_id, T0 + MINUTE)
    assert reopened is not None
    assert (reopened.status, reopened.attempts) == (ExecutionStatus.RETRYING, 1)
    assert store.reopen_dead_letter(TENANT, occurrence.occurrence_id, T0 + MINUTE) is None
    assert store.reopen_dead_letter("globex", occurrence.occurrence_id, T0 + MINUTE) is None
    assert dead_letter_ids(store) == []
    again = store.begin_attempt(occurrence, "y", T0 + MINUTE, T0 + 2 * MINUTE)
    assert again is not None and again.attempts == 2
    assert not store.restore_dead_letter(reopened)  # an attempt began since
    outcome = AttemptOutcome(ExecutionStatus.FAILED, T0 + 2 * MINUTE, error="HTTP 503")
    assert store.finish_attempt(again, "y", outcome)
    assert dead_letter_ids(store) == [occurrence.occurrence_id]


def test_a_reopen_whose_message_was_not_sent_is_undone(store: Store) -> None:
    occurrence = fail(store, 0)
    reopened = store.reopen_dead_letter(TENANT, occurrence.occurrence_id, T0 + MINUTE)
    assert reopened is not None
    assert store.restore_dead_letter(reopened)
    assert not store.restore_dead_letter(reopened)
    record = store.get_execution(TENANT, occurrence.occurrence_id)
    assert record is not None
    assert (record.status, record.attempts, record.error) == (ExecutionStatus.FAILED, 1, "HTTP 500")
    assert dead_letter_ids(store) == [occurrence.occurrence_id]


def test_a_discarded_dead_letter_leaves_the_list_and_stays_in_the_history(store: Store) -> None:
    occurrence = fail(store, 0)
    assert not store.discard_dead_letter("globex", occurrence.occurrence_id, T0)
    assert not store.discard_dead_letter(TENANT, "s1:unknown", T0)
    assert store.discard_dead_letter(TENANT, occurrence.occurrence_id, T0)
    assert not store.discard_dead_letter(TENANT, occurrence.occurrence_id, T0)
    assert dead_letter_ids(store) == []
    assert store.reopen_dead_letter(TENANT, occurrence.occurrence_id, T0) is None
    history = store.list_executions(HistoryRequest(TENANT, "s1", 10, None)).items
    assert [(item.occurrence_id, item.status) for item in history] == [
        (occurrence.occurrence_id, ExecutionStatus.FAILED)
    ]


# -- every attempt -------------------------------------------------------------------------


def test_each_attempt_is_kept_with_what_the_webhook_answered(store: Store) -> None:
    began = store.begin_attempt(occurrence(), "x", T0, T0 + MINUTE)
    assert began is not None
    busy = AttemptOutcome(
        ExecutionStatus.RETRYING,
        T0 + SECOND,
        answer=Answer(
            status=503, status_line="HTTP/1.1 503 Service Unavailable", excerpt='{"error": "busy"}'
        ),
        duration_ms=5.0,
        error="HTTP 503",
        next_attempt_at=T0 + 10 * SECOND,
    )
    assert store.settle_attempts([(began, busy)], "x") == [True]
    began = store.begin_attempt(occurrence(), "x", T0 + 10 * SECOND, T0 + MINUTE)
    assert began is not None
    refused = AttemptOutcome(
        ExecutionStatus.RETRYING,
        T0 + 11 * SECOND,
        duration_ms=1.5,
        error="cannot connect to hooks.example.com:443: Connection refused",
        next_attempt_at=T0 + 20 * SECOND,
    )
    assert store.finish_attempt(began, "x", refused)
    began = store.begin_attempt(occurrence(), "x", T0 + 20 * SECOND, T0 + MINUTE)
    assert began is not None
    done = AttemptOutcome(
        ExecutionStatus.SUCCEEDED,
        T0 + 21 * SECOND,
        answer=Answer(status=200, status_line="HTTP/1.1 200 OK", excerpt="x" * 16, truncated=True),
        duration_ms=7.3,
    )
    assert store.settle_attempts([(began, done)], "x") == [True]

    record = store.get_execution(TENANT, occurrence().occurrence_id)
    assert record is not None
    assert [
        (
            a.number,
            a.status,
            a.started_at,
            a.finished_at,
            a.duration_ms,
            a.answer.status,
            a.error,
            a.answer.status_line,
            a.answer.excerpt,
            a.answer.truncated,
        )
        for a in record.attempt_log
    ] == [
        (
            1,
            ExecutionStatus.RETRYING,
            T0,
            T0 + SECOND,
            5.0,
            503,
            "HTTP 503",
            "HTTP/1.1 503 Service Unavailable",
            '{"error": "busy"}',
            False,
        ),
        (
            2,
            ExecutionStatus.RETRYING,
            T0 + 10 * SECOND,
            T0 + 11 * SECOND,
            1.5,
            None,
            "cannot connect to hooks.example.com:443: Connection refused",
            None,
            None,
            False,
        ),
        (
            3,
            ExecutionStatus.SUCCEEDED,
            T0 + 20 * SECOND,
            T0 + 21 * SECOND,
            7.3,
            200,
            None,
            "HTTP/1.1 200 OK",
            "x" * 16,
            True,
        ),
    ]
    # The record's own fields are the last attempt's, as before.
    assert (record.attempts, record.http_status, record.status) == (
        3,
        200,
        ExecutionStatus.SUCCEEDED,
    )


def test_a_run_keeps_its_first_attempts_lateness_and_when_each_request_was_sent(
    store: Store,
) -> None:
    # Begun 20 ms ahead of its time (the executor prepares), its request sent 3 ms after it.
    began = store.begin_attempt(occurrence(), "x", T0 - 0.02 * SECOND, T0 + MINUTE)
    assert began is not None and began.lateness_ms is None
    sent = T0 + 0.003 * SECOND
    busy = AttemptOutcome(
        ExecutionStatus.RETRYING, T0 + SECOND, Answer(503), 5.0, "HTTP 503", started_at=sent
    )
    assert store.settle_attempts([(began, busy)], "x") == [True]
    record = store.get_execution(TENANT, occurrence().occurrence_id)
    assert record is not None
    assert (record.lateness_ms, record.started_at, record.retry_delay_ms) == (3.0, sent, None)
    # The retry, sent 10 s later: the run keeps its lateness, the delay is a figure apart.
    [began] = store.begin_attempts([occurrence()], "x", T0 + 10 * SECOND, T0 + 2 * MINUTE)
    assert began is not None and began.lateness_ms == 3.0
    again = T0 + 10.004 * SECOND
    done = AttemptOutcome(
        ExecutionStatus.SUCCEEDED, again + SECOND, Answer(200), 1.0, started_at=again
    )
    assert store.settle_attempts([(began, done)], "x") == [True]
    record = store.get_execution(TENANT, occurrence().occurrence_id)
    assert record is not None
    assert (record.lateness_ms, record.started_at, record.retry_delay_ms) == (3.0, again, 10001.0)
    assert [attempt.started_at for attempt in record.attempt_log] == [sent, again]
    [listed] = store.list_executions(HistoryRequest(TENANT, "s1", 10, None)).items
    assert (listed.lateness_ms, listed.retry_delay_ms) == (3.0, 10001.0)


def test_a_record_keeps_its_latest_attempts(store: Store) -> None:
    total = KEPT_ATTEMPTS + 2
    for number in range(1, total + 1):
        now = T0 + number * SECOND
        began = store.begin_attempt(occurrence(), "x", now, now + MINUTE)
        assert began is not None and began.attempts == number
        status = ExecutionStatus.SUCCEEDED if number == total else ExecutionStatus.RETRYING
        outcome = AttemptOutcome(status, now, answer=Answer(500), next_attempt_at=now)
        assert store.settle_attempts([(began, outcome)], "x") == [True]
    record = store.get_execution(TENANT, occurrence().occurrence_id)
    assert record is not None
    assert [a.number for a in record.attempt_log] == list(range(3, total + 1))


def test_a_skip_or_a_lost_lease_adds_no_attempt(store: Store) -> None:
    began = store.begin_attempt(occurrence(), "x", T0, T0 + SECOND)
    assert began is not None
    later = T0 + MINUTE
    taken = store.begin_attempt(occurrence(), "y", later, later + MINUTE)
    assert taken is not None
    late = AttemptOutcome(ExecutionStatus.SUCCEEDED, later, answer=Answer(200))
    assert store.settle_attempts([(began, late)], "x") == [False]
    record = store.get_execution(TENANT, occurrence().occurrence_id)
    assert record is not None and record.attempt_log == ()
    assert store.record_skips([(occurrence("s2"), "paused")], T0) == 1
    skipped = store.get_execution(TENANT, occurrence("s2").occurrence_id)
    assert skipped is not None and skipped.attempt_log == ()


def test_a_replayed_dead_letter_is_one_more_attempt_in_the_log(store: Store) -> None:
    failed = fail(store, 0)
    assert store.reopen_dead_letter(TENANT, failed.occurrence_id, T0 + MINUTE) is not None
    again = store.begin_attempt(failed, "y", T0 + MINUTE, T0 + 2 * MINUTE)
    assert again is not None
    done = AttemptOutcome(ExecutionStatus.SUCCEEDED, T0 + MINUTE, answer=Answer(200))
    assert store.finish_attempt(again, "y", done)
    record = store.get_execution(TENANT, failed.occurrence_id)
    assert record is not None
    assert [(a.number, a.status, a.answer.status) for a in record.attempt_log] == [
        (1, ExecutionStatus.FAILED, 500),
        (2, ExecutionStatus.SUCCEEDED, 200),
    ]


def forget_attempt_logs(store: Store) -> None:
    """Make the store's records look written before attempts were kept."""
    if isinstance(store, SqliteStore):
        with store.db.write() as connection:
            connection.execute("UPDATE executions SET attempt_log = NULL")
    else:
        assert isinstance(store, MongoStore)
        store.executions.update_many({}, {"$unset": {"attempt_log": ""}})


def test_a_record_from_before_attempts_were_kept_shows_its_last_attempt(store: Store) -> None:
    failed = fail(store, 0)
    began = store.begin_attempt(occurrence(at=T0 + MINUTE), "x", T0, T0 + MINUTE)
    assert began is not None
    forget_attempt_logs(store)
    record = store.get_execution(TENANT, failed.occurrence_id)
    assert record is not None
    assert [
        (a.number, a.status, a.answer.status, a.error, a.finished_at) for a in record.attempt_log
    ] == [(1, ExecutionStatus.FAILED, 500, "HTTP 500", T0)]
    running = store.get_execution(TENANT, began.occurrence_id)
    assert running is not None and running.attempt_log == ()
