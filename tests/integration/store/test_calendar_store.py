"""The contract of ``CalendarStore`` (``shared.ports``) over every store adapter (SQLite,
mongomock, nx-27017 over the wire, and ``SCHEDULER_TEST_MONGO_URL`` if set): a tenant's own
calendars by name, created once, replaced by compare-and-set, never another tenant's."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime

import mongomock_ng
import pytest

from shared.adapters.mongo.store import MongoStore
from shared.ports import Calendar, Store
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
