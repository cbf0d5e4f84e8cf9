"""Filling a store with schedules fast, exactly as the processor would have stored them.

The processor stores a schedule with one ``apply_definition`` (one transaction each). To store a
million in reasonable time the benchmarks write the same rows or documents in bulk instead: one
SQLite transaction, or MongoDB ``insert_many``. The rows carry what ``apply_definition`` writes
for a new schedule (same columns, same JSON definition text); ``tests`` of the benchmarks check
that a seeded schedule reads back equal to one stored through ``apply_definition``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.model import Payload, ScheduleDefinition, Timing
from shared.ports import Store
from shared.timeutil import to_epoch_ms, utc_ms

TENANT = "default"
_PLACEHOLDER = datetime(2001, 1, 1, tzinfo=UTC)

Row = tuple[str, str, datetime]  # (schedule id, definition JSON, next schedule time)


def one_time_definition(url: str, at: datetime, name: str = "bench") -> ScheduleDefinition:
    """A one-time webhook as a client would create it: a small JSON body, signed, POSTed."""
    return ScheduleDefinition(
        timing=Timing(timezone="UTC", at=at),
        payload=Payload(
            method="POST",
            url=url,
            headers={"X-Bench": "1"},
            body={"task": "bench", "attempt_budget": 3},
            timeout_seconds=10.0,
        ),
        name=name,
        request={"schedule": {"at": at.isoformat(), "timezone": "UTC"}},
    )


def one_time_rows(url: str, times: Iterable[datetime], prefix: str) -> Iterator[Row]:
    """One one-time schedule per time, ids ``<prefix>-<n>``; the JSON is built once and patched."""
    template = json.dumps(
        one_time_definition(url, _PLACEHOLDER).to_document(), separators=(",", ":")
    )
    placeholder = _PLACEHOLDER.isoformat()
    for index, moment in enumerate(times):
        moment = utc_ms(moment)
        yield f"{prefix}-{index:08d}", template.replace(placeholder, moment.isoformat()), moment


def spaced(start: datetime, count: int, per_second: float) -> Iterator[datetime]:
    """``count`` instants from ``start``, ``per_second`` apart on average (to the millisecond)."""
    for index in range(count):
        yield start + timedelta(milliseconds=int(index * 1000 / per_second))


def seed(store: Store, rows: Iterable[Row], accepted_at: datetime, chunk: int = 20_000) -> None:
    """Store ``rows`` as new, active schedules of the default tenant, ``chunk`` at a time."""
    from shared.adapters.mongo_store import MongoStore
    from shared.adapters.sqlite_store import SqliteStore

    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, chunk)):
        if isinstance(store, SqliteStore):
            _seed_sqlite(store, batch, accepted_at)
        elif isinstance(store, MongoStore):
            _seed_mongo(store, batch, accepted_at)
        else:
            for schedule_id, text, moment in batch:
                definition = ScheduleDefinition.from_document(json.loads(text))
                store.apply_definition(TENANT, schedule_id, 1, definition, moment, accepted_at)


def _seed_sqlite(store: Any, rows: list[Row], accepted_at: datetime) -> None:
    accepted = to_epoch_ms(accepted_at)
    with store.db.write() as connection:
        connection.executemany(
            "INSERT INTO schedules (tenant, schedule_id, revision, state_revision, status,"
            " definition, name, tags, next_ms, accepted_ms, created_ms, updated_ms)"
            " VALUES (?, ?, 1, 0, 'active', ?, 'bench', '[]', ?, ?, ?, ?)",
            [
                (TENANT, schedule_id, text, to_epoch_ms(moment), accepted, accepted, accepted)
                for schedule_id, text, moment in rows
            ],
        )


def _seed_mongo(store: Any, rows: list[Row], accepted_at: datetime) -> None:
    from shared.adapters.mongo_store import _key

    accepted = utc_ms(accepted_at)
    store.schedules.insert_many(
        [
            {
                "_id": _key(TENANT, schedule_id),
                "tenant": TENANT,
                "schedule_id": schedule_id,
                "state_revision": 0,
                "created_at": accepted,
                "run_count": 0,
                "failure_count": 0,
                "consecutive_failures": 0,
                "last_run_at": None,
                "last_status": None,
                "revision": 1,
                "definition": text,
                "name": "bench",
                "tags": [],
                "next_schedule_time": moment,
                "accepted_at": accepted,
                "updated_at": accepted,
                "occurrence_count": 0,
                "lease_owner": None,
                "lease_until": None,
                "status": "active",
            }
            for schedule_id, text, moment in rows
        ],
        ordered=False,
    )
