"""Filling a store with schedules fast, exactly as the processor stores them.

The processor stores a schedule with one ``apply_definition``; the benchmarks store a chunk at a
time through ``apply_definitions``: the same rows and documents, the definitions sealed as the
processor seals them, in one SQLite transaction or one MongoDB ``insert_many`` per chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta

from shared.model import Payload, ScheduleDefinition, Timing
from shared.ports import Store
from shared.timeutil import utc_ms
from shared.tracing import TraceContext

TENANT = "default"

Row = tuple[str, ScheduleDefinition, datetime]  # (schedule id, definition, next schedule time)


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
        # As the API stores it: with the trace its calls continue.
        trace=TraceContext.new(),
    )


def one_time_rows(url: str, times: Iterable[datetime], prefix: str) -> Iterator[Row]:
    """One one-time schedule per time, ids ``<prefix>-<n>``."""
    for index, moment in enumerate(times):
        moment = utc_ms(moment)
        yield f"{prefix}-{index:08d}", one_time_definition(url, moment), moment


def spaced(start: datetime, count: int, per_second: float) -> Iterator[datetime]:
    """``count`` instants from ``start``, ``per_second`` apart on average (to the millisecond)."""
    for index in range(count):
        yield start + timedelta(milliseconds=int(index * 1000 / per_second))


def seed(store: Store, rows: Iterable[Row], accepted_at: datetime, chunk: int = 20_000) -> None:
    """Store ``rows`` as new, active schedules of the default tenant, ``chunk`` at a time."""
    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, chunk)):
        store.apply_definitions(
            [
                (TENANT, schedule_id, 1, definition, at, accepted_at)
                for schedule_id, definition, at in batch
            ]
        )
