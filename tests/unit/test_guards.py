"""Each rule of ``shared.store_rules`` (``claim_rules``, ``overlap_rules``) and
``shared.execution_rules`` means the same in its three forms: in Python
(``shared.guards.holds``), as SQL (``shared.adapters.sqlite.sql``) and as MongoDB filters
(``shared.adapters.mongo.filters``, each case of a write and their union), over every record
made of the values that matter to it (missing ones included)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock_ng
import pytest

from shared import claim_rules, execution_rules, overlap_rules, store_rules
from shared.adapters.mongo.documents import document_of
from shared.adapters.mongo.filters import Filters, write_cases
from shared.adapters.records import TABLES
from shared.adapters.sqlite.codec import columns_of
from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.migrations import migrate
from shared.adapters.sqlite.sql import Params, Statements, where
from shared.guards import (
    All,
    AnyOf,
    Comparison,
    Condition,
    Field,
    Given,
    Not,
    OneOf,
    Remove,
    Write,
    cases,
    holds,
)

T = datetime(2026, 3, 8, 7, 30, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
TIMES = [None, T - MINUTE, T, T + MINUTE]
# The values of each field that tell the rules' cases apart; None where a record may lack it.
DOMAINS: Mapping[str, list[Any]] = {
    "status": [
        "active",
        "paused",
        "completed",
        "deleted",
        "running",
        "retrying",
        "failed",
        "skipped",
    ],
    "revision": [0, 4, 5, 6],
    "state_revision": [0, 4, 5, 6],
    "attempts": [0, 1, 2],
    "consecutive_failures": [0, 1, 5],
    "pause_after_failures": [None, 0, 1, 5],
    "lease_owner": [None, "a", "b"],
    "superseded": [None, False, True],
    "definition": ["d1", "d2"],
    "fingerprint": ["f1", "f2"],
    "next_schedule_time": TIMES,
    "lease_until": TIMES,
    "updated_at": TIMES[1:],
    "finished_at": TIMES,
    "discarded_at": TIMES,
    "expires_at": TIMES[1:],
    "overlap_holder": [None, "o1", "o2"],
    "overlap_until": TIMES,
    "overlap_waiting": [None, "o1", "o2"],
    "overlap_waiting_until": TIMES,
    "late_check_at": TIMES,
    "paused_until": TIMES,
    "skips_version": [None, 1, 2],
    "answer": [None, "a"],
}
PARAMS = {
    "revision": 5,
    "state_revision": 5,
    "attempts": 1,
    "owner": "a",
    "read": "d1",
    "fingerprint": "f1",
    "horizon": T,
    "now": T,
    "before": T,
    "occurrence": "o1",
    "until": T + MINUTE,
    "checked": T,
    "read_state_revision": 5,
    "read_skips": 1,
    "manual": False,
}
# A rule whose guard depends on what the caller gives (``Given``), under either value.
GIVEN = [PARAMS, {**PARAMS, "manual": True}]
# What every stored row needs (SQLite's NOT NULL columns), below the values a case gives.
BASE: Mapping[str, Mapping[str, Any]] = {
    "schedules": {
        "tenant": "acme",
        "revision": 0,
        "state_revision": 0,
        "status": "active",
        "accepted_at": T,
        "created_at": T,
        "updated_at": T,
    },
    "executions": {
        "tenant": "acme",
        "schedule_id": "s",
        "scheduled_time": T,
        "status": "running",
        "attempts": 1,
        "revision": 1,
    },
    "idempotency_keys": {
        "tenant": "acme",
        "fingerprint": "f1",
        "schedule_id": "s",
        "revision": 1,
        "timezone": "UTC",
        "created_at": T,
        "expires_at": T,
    },
}
NAME = {"schedules": "schedule_id", "executions": "occurrence_id", "idempotency_keys": "key"}


RULES = {
    name: value
    for module in (store_rules, claim_rules, overlap_rules, execution_rules)
    for name, value in vars(module).items()
}


def rules() -> Iterator[tuple[str, str, Condition]]:
    """Every rule of ``shared.store_rules``, ``shared.claim_rules``, ``shared.overlap_rules``
    and ``shared.execution_rules``: its name, table and condition."""
    for name, value in RULES.items():
        if isinstance(value, Write | Remove):
            yield name, value.table, value.guard
        elif isinstance(value, Condition) and name.isupper():
            # A condition alone: on the first table that has its fields.
            tables = ("executions", "idempotency_keys", "schedules")
            yield name, next(t for t in tables if fields_of(value) <= set(TABLES[t])), value


def fields_of(condition: Condition) -> set[str]:
    if isinstance(condition, Comparison | OneOf):
        extra = (
            {condition.operand.name}
            if isinstance(getattr(condition, "operand", None), Field)
            else set()
        )
        return {condition.field} | extra
    if isinstance(condition, All | AnyOf):
        return set().union(*map(fields_of, condition.parts)) if condition.parts else set()
    if isinstance(condition, Given):
        return set()
    assert isinstance(condition, Not)
    return fields_of(condition.part)


def records(table: str, condition: Condition) -> list[dict[str, Any]]:
    names = sorted(fields_of(condition))
    made = []
    for number, values in enumerate(itertools.product(*(DOMAINS[name] for name in names))):
        record = {
            **BASE[table],
            NAME[table]: f"r{number:05d}",
            **dict(zip(names, values, strict=True)),
        }
        made.append(record)
    return made


def sqlite_kept(record: Mapping[str, Any], table: str) -> bool:
    """Whether SQLite can hold this record (its NOT NULL columns: superseded is 0 or 1)."""
    return not (table == "executions" and record.get("superseded") is None)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteDatabase]:
    opened = SqliteDatabase(Path(tmp_path_factory.mktemp("guards")) / "rules.db")
    migrate(opened, str)
    yield opened
    opened.close()


@pytest.mark.parametrize("params", GIVEN, ids=["scheduled", "manual"])
@pytest.mark.parametrize(("name", "table", "condition"), list(rules()), ids=lambda x: str(x)[:24])
def test_a_rule_means_the_same_in_python_sql_and_mongodb(
    name: str,
    table: str,
    condition: Condition,
    params: Mapping[str, Any],
    database: SqliteDatabase,
) -> None:
    made = records(table, condition)
    expected = {record[NAME[table]] for record in made if holds(condition, record, params)}
    kinds = TABLES[table]

    with database.write() as connection:
        connection.execute(f"DELETE FROM {table}")
        kept = [record for record in made if sqlite_kept(record, table)]
        for record in kept:
            row = columns_of(record, kinds)
            marks = ", ".join("?" * len(row))
            connection.execute(
                f"INSERT INTO {table} ({', '.join(row)}) VALUES ({marks})", list(row.values())
            )
        bound = Params(condition, table).named(params)
        found = connection.execute(
            f"SELECT {NAME[table]} FROM {table} WHERE {where(table, condition)}", bound
        )
        in_sql = {row[0] for row in found}
    assert in_sql == {key for key in expected if any(r[NAME[table]] == key for r in kept)}, name

    collection = mongomock_ng.MongoClient(tz_aware=True)["rules"][table]
    collection.insert_many(
        [
            {
                k: v
                for k, v in document_of(record, kinds).items()
                if v is not None or k != "superseded"
            }
            | {"_id": record[NAME[table]]}
            for record in made
        ]
    )
    filters = Filters(table, params)
    assert {doc["_id"] for doc in collection.find(filters.filter(condition))} == expected, name
    # Each case alone (as an update's filter, without $or), and together, the whole rule.
    by_case = [
        {doc["_id"] for doc in collection.find(filters.filter(case))} for case in cases(condition)
    ]
    assert set().union(*by_case) == expected, name


@pytest.mark.parametrize("params", GIVEN, ids=["scheduled", "manual"])
@pytest.mark.parametrize("name", [n for n, v in RULES.items() if isinstance(v, Write)], ids=str)
def test_a_write_splits_into_cases_that_cover_its_guard_once_each(
    name: str, params: Mapping[str, Any]
) -> None:
    write = RULES[name]
    made = records(write.table, write.guard)
    for record in made:
        matched = [case for case in write_cases(write) if holds(case.guard, record, params)]
        assert len(matched) == (1 if holds(write.guard, record, params) else 0), (name, record)
    # Its statements are valid SQL.
    Statements(write)
