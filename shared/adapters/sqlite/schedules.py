"""The SQLite store's schedules: definitions, claims and advances, run counts, retention. Each
guarded write is a rule of ``shared.store_rules`` (``shared.adapters.sqlite.sql``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from shared.adapters.guarded import Outcome
from shared.adapters.records import SCHEDULE_STATE, schedule_of
from shared.adapters.sqlite.base import SqliteBacked, statements, write_in
from shared.adapters.sqlite.codec import column, fields_of
from shared.adapters.sqlite.migrations import migrate
from shared.adapters.sqlite.sql import Folded, Params, chunks, ordered, rows_in, where
from shared.claim_rules import (
    ADVANCE,
    BY_PRIORITY,
    CLAIM,
    CLAIMABLE,
    OLDEST_FIRST,
    advance_params,
    claim_params,
)
from shared.definition_cache import DefinitionCache
from shared.errors import Transient
from shared.execution_rules import EXPIRED_EXECUTION
from shared.guards import Write, folded
from shared.model import Schedule, ScheduleDefinition
from shared.ports import Advance, ClaimRequest, DefinitionToApply, ScheduleStore
from shared.store_rules import (
    COUNT_FAILURE,
    COUNT_SUCCESS,
    EXPIRED_SCHEDULE,
    LAND_DEFINITION,
    PAUSE_ON_FAILURES,
    SHOWN,
    Run,
    run_counts,
)
from shared.timeutil import utc_ms

# Rows written by one statement: each statement lets other threads take the GIL, and a busy
# event loop may keep it for milliseconds before this thread gets it back.
ROWS_PER_STATEMENT = 400
# A definition lands in one statement: an upsert, where its guard holds.
_LAND, _LAND_ORDER = statements(LAND_DEFINITION).upsert(1, ("1",))
# The due read in time order from the schedules_due index, then sorted (what is due, not what
# is stored): an index by priority would be read through the schedules not yet due.
_CLAIMABLE = {
    oldest_first: f"SELECT * FROM schedules INDEXED BY schedules_due"
    f" WHERE {where('schedules', CLAIMABLE)} ORDER BY {ordered(order)} LIMIT :limit"
    for oldest_first, order in ((False, BY_PRIORITY), (True, OLDEST_FIRST))
}
_CLAIMABLE_PARAMS = Params(CLAIMABLE, "schedules")
_COUNTS = Folded((COUNT_SUCCESS, COUNT_FAILURE))
_EXPIRED = {
    table: f"DELETE FROM {table} WHERE ({', '.join(key)}) IN (SELECT {', '.join(key)} FROM"
    f" {table} WHERE {where(table, condition)} ORDER BY {order} LIMIT :limit)"
    for table, key, condition, order in (
        ("executions", ("tenant", "occurrence_id"), EXPIRED_EXECUTION, "finished_ms"),
        ("schedules", ("tenant", "schedule_id"), EXPIRED_SCHEDULE, "updated_ms"),
    )
}
_EXPIRED_PARAMS = Params(EXPIRED_SCHEDULE, "schedules")
# What the version check reads (``get_schedule_states``): no column of the definition.
_STATE_COLUMNS = ", ".join(column(name) for name in SCHEDULE_STATE)


class SqliteSchedules(SqliteBacked, ScheduleStore):
    def ensure_indexes(self) -> None:
        migrate(self.db, self.definitions.target)

    def close(self) -> None:
        self.db.close()

    def ping(self) -> None:
        try:
            self.db.connection().execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise Transient(f"sqlite unavailable: {exc}") from exc

    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        return {
            (row["tenant"], row["schedule_id"]): self.schedule_from(row, cache)
            for row in self._rows(keys, "*")
        }

    def get_schedule_states(
        self,
        keys: Sequence[tuple[str, str]],
        known: Mapping[tuple[str, str, int], ScheduleDefinition],
    ) -> dict[tuple[str, str], Schedule]:
        return {
            (row["tenant"], row["schedule_id"]): schedule_of(
                fields_of(row, SCHEDULE_STATE), self.definitions, known=known
            )
            for row in self._rows(keys, _STATE_COLUMNS)
        }

    def _rows(self, keys: Sequence[tuple[str, str]], columns: str) -> list[sqlite3.Row]:
        """The rows of ``keys`` (their ``columns``): one tenant and a list of its ids a read,
        which the primary key serves."""
        by_tenant: dict[str, list[str]] = {}
        for tenant, schedule_id in dict.fromkeys(keys):
            by_tenant.setdefault(tenant, []).append(schedule_id)
        connection = self.db.connection()
        select = f"SELECT {columns} FROM schedules WHERE tenant = ? AND schedule_id"
        return [
            row
            for tenant, ids in by_tenant.items()
            for row in rows_in(connection, select, ids, tenant)
        ]

    def apply_definitions(self, definitions: Sequence[DefinitionToApply]) -> list[bool]:
        # Sealed before the write lock is taken, which is then held for the statements only.
        landings = self.landings(definitions)
        rows = [statements(LAND_DEFINITION).params.row(_LAND_ORDER, one) for one in landings]
        with self.db.write() as connection:
            return [bool(connection.execute(_LAND, row).fetchall()) for row in rows]

    def claim_due_schedules(self, claim: ClaimRequest) -> list[Schedule]:
        params = claim_params(claim)
        with self.db.write() as connection:
            # Under the write lock: the rows read are the rows leased, CLAIM's guard holds.
            rows = connection.execute(
                _CLAIMABLE[claim.oldest_first],
                {**_CLAIMABLE_PARAMS.named(params), "limit": claim.limit},
            ).fetchall()
            connection.executemany(
                statements(CLAIM).update,
                [
                    statements(CLAIM).params.named(
                        {**params, "tenant": row["tenant"], "schedule_id": row["schedule_id"]}
                    )
                    for row in rows
                ],
            )
        leased_until = utc_ms(claim.lease_until)
        return [
            self.schedule_from(row).evolve(lease_owner=claim.owner, lease_until=leased_until)
            for row in rows
        ]

    def advance_schedules(
        self, advances: Sequence[Advance], owner: str, now: datetime
    ) -> list[bool]:
        with self.db.write() as connection:
            return [
                write_in(connection, ADVANCE, advance_params(advance, owner, now))
                is Outcome.CHANGED
                for advance in advances
            ]

    def record_run(self, tenant: str, schedule_id: str, succeeded: bool, at: datetime) -> None:
        with self.db.write() as connection:
            count_runs(connection, [Run(tenant, schedule_id, succeeded, at)])

    def count_schedules(self) -> Mapping[str, int]:
        rows = (
            self.db.connection()
            .execute(
                f"SELECT status, count(*) AS n FROM schedules WHERE {where('schedules', SHOWN)}"
                " GROUP BY status"
            )
            .fetchall()
        )
        return {row["status"]: row["n"] for row in rows}

    def purge_expired(
        self, executions_before: datetime, schedules_before: datetime, limit: int
    ) -> tuple[int, int]:
        deleted = []
        with self.db.write() as connection:
            for table, before in (
                ("executions", executions_before),
                ("schedules", schedules_before),
            ):
                bound = {**_EXPIRED_PARAMS.named({"before": before}), "limit": limit}
                deleted.append(connection.execute(_EXPIRED[table], bound).rowcount)
        return deleted[0], deleted[1]


def count_runs(connection: sqlite3.Connection, runs: Sequence[Run]) -> None:
    """``record_run`` of each run, in order, in two statements per ``ROWS_PER_STATEMENT``
    schedules: the counts of each schedule's runs, folded; then ``run_counts``'s pauses."""
    counts, pauses = run_counts(runs)
    by_schedule: dict[tuple[str, str], list[tuple[Write, dict[str, Any]]]] = {}
    for run, rule, params in counts:
        by_schedule.setdefault((run.tenant, run.schedule_id), []).append((rule, params))
    rows = [_COUNTS.row(key, folded(applied)) for key, applied in by_schedule.items()]
    for chunk in chunks(rows, ROWS_PER_STATEMENT):
        connection.execute(_COUNTS.statement(len(chunk)), [value for row in chunk for value in row])
    pausing = statements(PAUSE_ON_FAILURES)
    for chunk in chunks(pauses, ROWS_PER_STATEMENT):
        statement, order = pausing.update_many(len(chunk))
        connection.execute(
            statement, [v for params in chunk for v in pausing.params.row(order, params)]
        )
