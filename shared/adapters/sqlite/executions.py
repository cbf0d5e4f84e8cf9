"""The SQLite store's attempts: begun under a lease, finished and counted, skipped. Each is a
rule of ``shared.store_rules`` applied to many rows in one statement."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.adapters.sqlite.base import SqliteBacked, statements
from shared.adapters.sqlite.schedules import ROWS_PER_STATEMENT, count_runs
from shared.adapters.sqlite.sql import chunks
from shared.execution_rules import (
    BEGIN,
    FINISH,
    SKIP,
    begin_params,
    finish_params,
    settled_runs,
    skip_params,
)
from shared.guards import Write
from shared.model import AttemptOutcome, Execution, ExecutionStatus, Occurrence
from shared.ports import Store
from shared.store_rules import COUNT_SUPERSEDED
from shared.timeutil import utc_ms

# What a statement of many records returns of each it wrote (its key).
_RECORD = ("executions.tenant AS tenant", "executions.occurrence_id AS occurrence_id")


class SqliteExecutions(SqliteBacked, Store):
    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        # Each occurrence once (the first of its deliveries takes it), in one upsert per chunk.
        unique = {(o.tenant, o.occurrence_id): o for o in reversed(occurrences)}
        params = [begin_params(o, owner, now, lease_until) for o in unique.values()]
        with self.db.write() as connection:
            rows = _many(connection, BEGIN, params, (*_RECORD, "attempts", "lateness_ms"))
        begun = {(row["tenant"], row["occurrence_id"]): row for row in rows}
        return [
            _begun(o, begun.pop((o.tenant, o.occurrence_id), None), owner, now, lease_until)
            for o in occurrences
        ]

    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        with self.db.write() as connection:
            return bool(_many(connection, FINISH, [finish_params(execution, owner, outcome)]))

    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        keys = [(execution.tenant, execution.occurrence_id) for execution, _ in settled]
        if len(set(keys)) < len(keys):
            # Twice the same record: one by one, in order, each under the guard left by the last.
            with self.db.write() as connection:
                done = [self._settle(connection, [item], owner) for item in settled]
            return [key in recorded for key, recorded in zip(keys, done, strict=True)]
        with self.db.write() as connection:
            recorded = self._settle(connection, settled, owner)
        return [key in recorded for key in keys]

    @staticmethod
    def _settle(
        connection: sqlite3.Connection,
        settled: Sequence[tuple[Execution, AttemptOutcome]],
        owner: str,
    ) -> set[tuple[str, str]]:
        """The outcomes recorded (their records' keys), then the runs of the final ones counted:
        two statements, whatever the number."""
        params = [finish_params(execution, owner, outcome) for execution, outcome in settled]
        rows = _many(connection, FINISH, params, _RECORD)
        recorded = {(row["tenant"], row["occurrence_id"]) for row in rows}
        done = [(e.tenant, e.occurrence_id) in recorded for e, _ in settled]
        count_runs(connection, settled_runs(settled, done))
        return recorded

    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        unique = {(o.tenant, o.occurrence_id): (o, reason) for o, reason in reversed(skips)}
        params = [skip_params(o, reason, now, superseded) for o, reason in unique.values()]
        schedules = {key: o.schedule_id for key, (o, _) in unique.items()}
        with self.db.write() as connection:
            rows = _many(
                connection, SKIP, params, (*_RECORD, "executions.superseded AS superseded")
            )
            # Records made superseded, by schedule (a record that existed keeps its flag).
            made = Counter(
                (row["tenant"], schedules[(row["tenant"], row["occurrence_id"])])
                for row in rows
                if row["superseded"]
            )
            counting = [
                {"tenant": tenant, "schedule_id": schedule_id, "count": count}
                for (tenant, schedule_id), count in made.items()
            ]
            _many(connection, COUNT_SUPERSEDED, counting)
        return len(rows)


def _many(
    connection: sqlite3.Connection,
    rule: Write,
    params: Sequence[dict[str, Any]],
    returning: Sequence[str] = (),
) -> list[sqlite3.Row]:
    """``rule`` applied to each record of ``params``, in statements of ``ROWS_PER_STATEMENT``: an
    upsert where it makes records, an ``UPDATE … FROM`` otherwise; the rows ``returning``
    names, of the records written."""
    made = statements(rule)
    found: list[sqlite3.Row] = []
    for chunk in chunks(params, ROWS_PER_STATEMENT):
        if rule.makes_record:
            statement, order = made.upsert(len(chunk), returning)
        else:
            statement, order = made.update_many(len(chunk), returning or ("1",))
        values = [value for one in chunk for value in made.params.row(order, one)]
        found += connection.execute(statement, values).fetchall()
    return found


def _begun(
    occurrence: Occurrence,
    row: sqlite3.Row | None,
    owner: str,
    now: datetime,
    lease_until: datetime,
) -> Execution | None:
    """The record begun, with its number of attempts and the lateness it keeps (``row``, as
    ``BEGIN`` returns it); None if it was not begun (no row)."""
    if row is None:
        return None
    return Execution(
        tenant=occurrence.tenant,
        occurrence_id=occurrence.occurrence_id,
        schedule_id=occurrence.schedule_id,
        scheduled_time=occurrence.scheduled_time,
        status=ExecutionStatus.RUNNING,
        attempts=row["attempts"],
        revision=occurrence.revision,
        started_at=utc_ms(now),
        lateness_ms=row["lateness_ms"],
        lease_owner=owner,
        lease_until=utc_ms(lease_until),
        manual=occurrence.manual,
    )
