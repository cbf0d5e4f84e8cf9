"""The contract of ``CalendarStore`` (``shared.ports``) over every store adapter (SQLite,
mongomock, nx-27017 over the wire, and ``SCHEDULER_TEST_MONGO_URL`` if set): a tenant's own
calendars by name, created once, replaced by compare-and-set, never another tenant's; the
schedules naming one found, and their next times brought back, the tenant's only."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import date, datetime, timedelta

import mongomock_ng
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.calendars import CalendarRule
from shared.model import ScheduleStatus
from shared.ports import Calendar, ClaimRequest, StateChange, Store
from shared.recurrence.business import Shift
from shared.timeutil import UTC
from tests.integration.store import test_store_contract as contract

store = contract.store
T0 = datetime(2026, 3, 8, 7, 30, 0, 123_000, tzinfo=UTC)
CHRISTMAS = (date(2026, 12, 24), date(2026, 12, 25), date(2026, 12, 26))


def a_calendar(tenant: str, name: str, revision: int = 1, *dates: date) -> Calendar:
    return Calendar(tenant, name, dates or CHRISTMAS, revision, T0, f"{name} of {tenant}")


def test_a_calendar_is_read_back_whole_by_its_tenant_only(store: Store) -> None:
    assert store.get_calendars("acme", ["holidays"]) == {}
    assert store.list_calendars("acme") == []
    holidays = a_calendar("acme", "holidays")
    assert store.create_calendar(holidays)
    assert store.create_calendar(a_calendar("acme", "closures", 1, date(2027, 1, 4)))
    assert store.create_calendar(a_calendar("globex", "holidays", 1, date(2026, 5, 1)))
    assert store.get_calendars("acme", ["holidays", "holidays", "nowhere"]) == {
        "holidays": holidays
    }
    assert [item.name for item in store.list_calendars("acme")] == ["closures", "holidays"]
    assert store.get_calendars("globex", ["holidays", "closures"])["holidays"].dates == (
        date(2026, 5, 1),
    )
    assert "closures" not in store.get_calendars("globex", ["closures"])
    assert store.get_calendars("acme", []) == {}


def test_a_name_is_created_once(store: Store) -> None:
    assert store.create_calendar(a_calendar("acme", "holidays"))
    assert not store.create_calendar(a_calendar("acme", "holidays", 1, date(2030, 1, 1)))
    assert store.get_calendars("acme", ["holidays"])["holidays"].dates == CHRISTMAS


def test_a_replace_wins_only_over_the_revision_before_it(store: Store) -> None:
    assert not store.replace_calendar(a_calendar("acme", "holidays", 2))
    assert store.create_calendar(a_calendar("acme", "holidays"))
    new_year = a_calendar("acme", "holidays", 2, date(2027, 1, 1))
    assert store.replace_calendar(new_year)
    assert not store.replace_calendar(a_calendar("acme", "holidays", 2, date(2030, 1, 1)))
    assert not store.replace_calendar(a_calendar("acme", "holidays", 4, date(2030, 1, 1)))
    assert store.get_calendars("acme", ["holidays"]) == {"holidays": new_year}
    # Another tenant's replace of the same name reaches nothing.
    assert not store.replace_calendar(a_calendar("globex", "holidays", 3))
    assert store.get_calendars("acme", ["holidays"]) == {"holidays": new_year}


def test_of_concurrent_replaces_of_one_revision_exactly_one_wins(store: Store) -> None:
    if isinstance(store, MongoStore) and isinstance(store.client, mongomock_ng.MongoClient):
        pytest.skip("mongomock is not thread-safe; the wire-server run covers this")
    assert store.create_calendar(a_calendar("acme", "holidays"))
    with ThreadPoolExecutor(8) as pool:
        won = list(
            pool.map(
                lambda n: store.replace_calendar(
                    a_calendar("acme", "holidays", 2, date(2027, 1, n + 1))
                ),
                range(8),
            )
        )
    assert won.count(True) == 1
    stored = store.get_calendars("acme", ["holidays"])["holidays"]
    assert stored.revision == 2 and stored.dates == (date(2027, 1, won.index(True) + 1),)


def test_a_delete_removes_the_tenants_calendar_only(store: Store) -> None:
    assert store.create_calendar(a_calendar("acme", "holidays"))
    assert store.create_calendar(a_calendar("globex", "holidays"))
    assert not store.delete_calendar("acme", "nowhere")
    assert store.delete_calendar("acme", "holidays")
    assert not store.delete_calendar("acme", "holidays")
    assert store.get_calendars("acme", ["holidays"]) == {}
    assert store.get_calendars("globex", ["holidays"])["holidays"].tenant == "globex"
    # The name is free again.
    assert store.create_calendar(a_calendar("acme", "holidays"))


def naming(store: Store, tenant: str, schedule_id: str, *names: str, at: datetime = T0) -> None:
    definition = replace(contract.definition(), calendar=CalendarRule(names, Shift.SKIP))
    assert store.apply_definition((tenant, schedule_id, 1, definition, at, T0 - timedelta(days=1)))


def test_the_schedules_naming_a_calendar_are_the_tenants_live_ones(store: Store) -> None:
    later = T0 + timedelta(days=3)
    naming(store, "acme", "payroll", "holidays", "closures", at=later)
    naming(store, "acme", "digest", "holidays")
    naming(store, "acme", "other", "closures", at=later)
    naming(store, "globex", "theirs", "holidays", at=later)
    assert contract.create(store, "plain")  # names none
    assert store.schedules_naming("acme", "holidays", 10) == ["digest", "payroll"]
    assert store.schedules_naming("acme", "holidays", 1) == ["digest"]
    assert store.schedules_naming("acme", "nowhere", 10) == []
    # Paused it still names it; deleted, no longer.
    store.apply_state(StateChange("acme", "digest", 5, ScheduleStatus.PAUSED, None, T0))
    store.apply_state(StateChange("acme", "payroll", 5, ScheduleStatus.DELETED, None, T0))
    assert store.schedules_naming("acme", "holidays", 10) == ["digest"]
    assert store.schedules_naming("globex", "holidays", 10) == ["theirs"]


def test_a_recheck_brings_back_the_later_next_times_of_the_active_schedules_naming_it(
    store: Store,
) -> None:
    later = T0 + timedelta(days=3)
    naming(store, "acme", "payroll", "holidays", "closures", at=later)
    naming(store, "acme", "sooner", "holidays", at=T0 - timedelta(minutes=1))
    naming(store, "acme", "paused", "holidays", at=later)
    store.apply_state(StateChange("acme", "paused", 5, ScheduleStatus.PAUSED, None, T0))
    naming(store, "acme", "other", "closures", at=later)
    naming(store, "globex", "theirs", "holidays", at=later)
    assert store.recheck_schedules("acme", "holidays", T0) == 1
    next_times = {
        key[1]: schedule.next_schedule_time
        for key, schedule in store.get_schedules(
            [("acme", "payroll"), ("acme", "sooner"), ("acme", "other"), ("globex", "theirs")]
        ).items()
    }
    assert next_times == {
        "payroll": T0,  # brought back, to be computed again
        "sooner": T0 - timedelta(minutes=1),  # sooner already: kept
        "other": later,  # names another calendar
        "theirs": later,  # another tenant's
    }
    # The poller claims it at once.
    claimed = store.claim_due_schedules(
        ClaimRequest(
            horizon=T0, now=T0, limit=10, owner="p", lease_until=T0 + timedelta(seconds=30)
        )
    )
    assert {item.schedule_id for item in claimed} == {"payroll", "sooner"}
