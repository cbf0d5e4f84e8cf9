"""The embedded schedule and execution store on SQLite (used by ``scheduler dev`` and tests)."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from operator import attrgetter
from typing import Any

from shared.adapters.sqlite.db import SqliteDatabase
from shared.adapters.sqlite.migrations import migrate
from shared.adapters.sqlite.signing_secrets import SqliteSigningSecrets
from shared.definition_cache import DefinitionCache, open_definition
from shared.errors import Transient
from shared.model import (
    KEPT_ATTEMPTS,
    Attempt,
    AttemptOutcome,
    Execution,
    ExecutionStatus,
    Occurrence,
    PausedBy,
    Schedule,
    ScheduleDefinition,
    ScheduleStatus,
    revision_at,
)
from shared.ports import (
    Advance,
    ApiKey,
    DefinitionToApply,
    IdempotencyRecord,
    Page,
    ScheduleFilter,
    ScheduleOrder,
    SlotReservation,
    Store,
    execution_page,
    parse_execution_cursor,
)
from shared.schedule_listing import (
    KEYLESS_LAST,
    Segment,
    name_key,
    ordered_page,
    searched_host,
    target_of,
)
from shared.secrets import SecretBox
from shared.store_rules import (
    StoredState,
    admit_to_quota,
    attempt_started,
    is_key_id,
    pending_slot,
    run_lateness_ms,
    state_change_source,
    status_after_definition,
    status_by_next_time,
    takes_definition,
)
from shared.timeutil import from_epoch_ms, maybe, to_epoch_ms, utc_ms

_KEYS_PER_READ = 500
_ORDER_COLUMNS = {
    ScheduleOrder.ID: "schedule_id",
    ScheduleOrder.NAME: "name_key",
    ScheduleOrder.NEXT_TIME: "next_ms",
    ScheduleOrder.CREATED: "created_ms",
}


class SqliteStore(SqliteSigningSecrets, Store):
    def __init__(self, database: SqliteDatabase, *, secrets: SecretBox) -> None:
        """``secrets`` seals each payload's secret parts in the ``definition`` column."""
        self.db = database
        self.secrets = secrets

    def ensure_indexes(self) -> None:
        migrate(self.db, self._target_of)

    def _target_of(self, definition: str) -> str:
        return target_of(self.secrets.open(json.loads(definition)).payload.location)

    def close(self) -> None:
        self.db.close()

    def ping(self) -> None:
        try:
            self.db.connection().execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise Transient(f"sqlite unavailable: {exc}") from exc

    # -- schedules -----------------------------------------------------------------------

    def get_schedule(self, tenant: str, schedule_id: str) -> Schedule | None:
        row = (
            self.db.connection()
            .execute(
                "SELECT * FROM schedules WHERE tenant = ? AND schedule_id = ?",
                (tenant, schedule_id),
            )
            .fetchone()
        )
        return None if row is None else _schedule(row, self.secrets)

    def get_schedules(
        self, keys: Sequence[tuple[str, str]], cache: DefinitionCache | None = None
    ) -> dict[tuple[str, str], Schedule]:
        by_tenant: dict[str, list[str]] = {}
        for tenant, schedule_id in dict.fromkeys(keys):
            by_tenant.setdefault(tenant, []).append(schedule_id)
        found: dict[tuple[str, str], Schedule] = {}
        connection = self.db.connection()
        for tenant, ids in by_tenant.items():
            for start in range(0, len(ids), _KEYS_PER_READ):
                chunk = ids[start : start + _KEYS_PER_READ]
                # One tenant and a list of ids: the primary key serves it.
                rows = connection.execute(
                    "SELECT * FROM schedules WHERE tenant = ? AND schedule_id IN ("
                    + ", ".join("?" * len(chunk))
                    + ")",
                    [tenant, *chunk],
                ).fetchall()
                for row in rows:
                    found[(tenant, row["schedule_id"])] = _schedule(row, self.secrets, cache)
        return found

    def apply_definition(
        self,
        tenant: str,
        schedule_id: str,
        revision: int,
        definition: ScheduleDefinition,
        next_schedule_time: datetime | None,
        accepted_at: datetime,
    ) -> bool:
        return self.apply_definitions(
            [(tenant, schedule_id, revision, definition, next_schedule_time, accepted_at)]
        )[0]

    def apply_definitions(self, definitions: Sequence[DefinitionToApply]) -> list[bool]:
        # Sealed before the write lock is taken, which is then held for the statements only.
        sealed = [
            json.dumps(self.secrets.seal(definition), separators=(",", ":"))
            for _, _, _, definition, _, _ in definitions
        ]
        with self.db.write() as connection:
            return [
                _apply_definition(connection, document, *arguments)
                for document, arguments in zip(sealed, definitions, strict=True)
            ]

    def apply_state(
        self,
        tenant: str,
        schedule_id: str,
        state_revision: int,
        status: ScheduleStatus,
        next_schedule_time: datetime | None,
        now: datetime,
    ) -> bool:
        now_ms = to_epoch_ms(now)
        with self.db.write() as connection:
            row = connection.execute(
                "SELECT state_revision, status, next_ms FROM schedules"
                " WHERE tenant = ? AND schedule_id = ?",
                (tenant, schedule_id),
            ).fetchone()
            if row is None:
                if status is ScheduleStatus.DELETED:
                    connection.execute(
                        "INSERT INTO schedules (tenant, schedule_id, revision, state_revision,"
                        " status, accepted_ms, created_ms, updated_ms)"
                        " VALUES (?, ?, 0, ?, 'deleted', ?, ?, ?)",
                        (tenant, schedule_id, state_revision, now_ms, now_ms, now_ms),
                    )
                return False
            current = ScheduleStatus(row["status"])
            if state_revision <= row["state_revision"]:
                return False
            if current is ScheduleStatus.DELETED:
                if status is ScheduleStatus.DELETED:
                    connection.execute(
                        "UPDATE schedules SET state_revision = ?, updated_ms = ?"
                        " WHERE tenant = ? AND schedule_id = ?",
                        (state_revision, now_ms, tenant, schedule_id),
                    )
                return False
            changes_state = status in (ScheduleStatus.ACTIVE, ScheduleStatus.PAUSED)
            if changes_state and current is not state_change_source(status):
                return False
            next_ms = {
                ScheduleStatus.ACTIVE: maybe(to_epoch_ms, next_schedule_time),
                ScheduleStatus.PAUSED: row["next_ms"],  # kept, for showing
            }.get(status)
            pausing = status is ScheduleStatus.PAUSED
            if status is ScheduleStatus.ACTIVE:
                status = status_by_next_time(next_schedule_time)
            # A pause says who paused, and when; a resume clears that and the failure streak.
            connection.execute(
                "UPDATE schedules SET state_revision = ?, status = ?, next_ms = ?, updated_ms = ?,"
                " lease_owner = NULL, lease_until_ms = NULL, paused_by = ?, paused_ms = ?,"
                " consecutive_failures = CASE WHEN ? THEN consecutive_failures ELSE 0 END"
                " WHERE tenant = ? AND schedule_id = ?",
                (
                    state_revision,
                    status.value,
                    next_ms,
                    now_ms,
                    PausedBy.USER.value if pausing else None,
                    now_ms if pausing else None,
                    pausing,
                    tenant,
                    schedule_id,
                ),
            )
            return True

    def claim_due_schedules(
        self, horizon: datetime, now: datetime, limit: int, owner: str, lease_until: datetime
    ) -> list[Schedule]:
        with self.db.write() as connection:
            rows = connection.execute(
                "SELECT * FROM schedules WHERE status = 'active' AND next_ms <= ?"
                " AND (lease_until_ms IS NULL OR lease_until_ms < ?)"
                " ORDER BY next_ms LIMIT ?",
                (to_epoch_ms(horizon), to_epoch_ms(now), limit),
            ).fetchall()
            until = to_epoch_ms(lease_until)
            connection.executemany(
                "UPDATE schedules SET lease_owner = ?, lease_until_ms = ?"
                " WHERE tenant = ? AND schedule_id = ?",
                [(owner, until, row["tenant"], row["schedule_id"]) for row in rows],
            )
        leased_until = utc_ms(lease_until)
        return [
            _schedule(row, self.secrets).evolve(lease_owner=owner, lease_until=leased_until)
            for row in rows
        ]

    def advance_schedule(
        self,
        claimed: Schedule,
        owner: str,
        next_schedule_time: datetime | None,
        occurrence_count: int,
        now: datetime,
        sent_ahead: Sequence[datetime] = (),
    ) -> bool:
        return self.advance_schedules(
            [Advance(claimed, next_schedule_time, occurrence_count, tuple(sent_ahead))], owner, now
        )[0]

    def advance_schedules(
        self, advances: Sequence[Advance], owner: str, now: datetime
    ) -> list[bool]:
        with self.db.write() as connection:
            return [_advance(connection, advance, owner, now) for advance in advances]

    def record_run(self, tenant: str, schedule_id: str, succeeded: bool, at: datetime) -> None:
        with self.db.write() as connection:
            _count_run(connection, tenant, schedule_id, succeeded, at)

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        return ordered_page(query, limit, cursor, lambda segment: self._segment(tenant, segment))

    def _segment(self, tenant: str, segment: Segment) -> list[Schedule]:
        query = segment.query
        clauses = ["tenant = ?", "status != 'deleted'"]
        params: list[Any] = [tenant]
        if query.status is not None:
            clauses.append("status = ?")
            params.append(query.status.value)
        if query.name_prefix:
            clauses.append("substr(name, 1, ?) = ?")
            params += [len(query.name_prefix), query.name_prefix]
        if query.tag:
            clauses.append("EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)")
            params.append(query.tag)
        if query.next_after is not None:
            clauses.append("next_ms >= ?")
            params.append(to_epoch_ms(query.next_after))
        if query.next_before is not None:
            clauses.append("next_ms <= ?")
            params.append(to_epoch_ms(query.next_before))
        text = (query.search or "").strip()
        if text:
            clauses.append(
                "(instr(name_key, ?) > 0"
                " OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)"
                " OR instr(target, ?) > 0)"
            )
            params += [name_key(text), text, searched_host(text) or None]
        column = _ORDER_COLUMNS[query.order]
        direction, beyond = ("DESC", "<") if query.descending else ("ASC", ">")
        if query.order in KEYLESS_LAST:
            clauses.append(f"{column} IS {'' if segment.keyless else 'NOT '}NULL")
        by_id = segment.keyless or query.order is ScheduleOrder.ID
        after = segment.after
        if after is not None and by_id:
            clauses.append(f"schedule_id {beyond} ?")
            params.append(after.schedule_id)
        elif after is not None:
            key = after.key
            clauses.append(f"({column}, schedule_id) {beyond} (?, ?)")
            params += [to_epoch_ms(key) if isinstance(key, datetime) else key, after.schedule_id]
        order = f"schedule_id {direction}"
        if not by_id:
            order = f"{column} {direction}, {order}"
        rows = (
            self.db.connection()
            .execute(
                f"SELECT * FROM schedules WHERE {' AND '.join(clauses)} ORDER BY {order} LIMIT ?",
                (*params, segment.limit),
            )
            .fetchall()
        )
        return [_schedule(row, self.secrets) for row in rows]

    def count_schedules(self) -> Mapping[str, int]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT status, count(*) AS n FROM schedules WHERE status != 'deleted'"
                " GROUP BY status"
            )
            .fetchall()
        )
        return {row["status"]: row["n"] for row in rows}

    def purge_expired(
        self, executions_before: datetime, schedules_before: datetime, limit: int
    ) -> tuple[int, int]:
        with self.db.write() as connection:
            executions = connection.execute(
                "DELETE FROM executions WHERE (tenant, occurrence_id) IN ("
                " SELECT tenant, occurrence_id FROM executions"
                " WHERE status IN ('succeeded', 'failed', 'skipped') AND finished_ms < ?"
                " ORDER BY finished_ms LIMIT ?)",
                (to_epoch_ms(executions_before), limit),
            ).rowcount
            schedules = connection.execute(
                "DELETE FROM schedules WHERE (tenant, schedule_id) IN ("
                " SELECT tenant, schedule_id FROM schedules"
                " WHERE status IN ('completed', 'deleted') AND updated_ms < ?"
                " ORDER BY updated_ms LIMIT ?)",
                (to_epoch_ms(schedules_before), limit),
            ).rowcount
        return executions, schedules

    def count_tenant_schedules(self, tenant: str) -> int:
        row = (
            self.db.connection()
            .execute(
                # Named: without statistics the planner would walk the rows instead.
                "SELECT count(*) AS n FROM schedules INDEXED BY schedules_by_tenant_status"
                " WHERE tenant = ? AND status IN ('active', 'paused')",
                (tenant,),
            )
            .fetchone()
        )
        return int(row["n"])

    def reserve_schedule_slot(
        self, reservation: SlotReservation, quota: int, now: datetime
    ) -> int | None:
        tenant = reservation.tenant
        # Under the write lock: every reservation of every process is decided in turn.
        with self.db.write() as connection:
            held = connection.execute(
                "SELECT schedule_id, revision, expires_ms FROM schedule_slots WHERE tenant = ?",
                (tenant,),
            ).fetchall()
            ids = sorted({reservation.schedule_id, *(row["schedule_id"] for row in held)})
            marks = ", ".join("?" * len(ids))
            states = {
                row["schedule_id"]: StoredState(
                    ScheduleStatus(row["status"]), row["revision"], row["state_revision"]
                )
                for row in connection.execute(
                    "SELECT schedule_id, status, revision, state_revision FROM schedules"
                    f" WHERE tenant = ? AND schedule_id IN ({marks})",
                    [tenant, *ids],
                )
            }
            pending, settled = set(), []
            for row in held:
                expires_at = from_epoch_ms(row["expires_ms"])
                if pending_slot(row["revision"], expires_at, states.get(row["schedule_id"]), now):
                    pending.add(row["schedule_id"])
                else:
                    settled.append((tenant, row["schedule_id"], row["revision"]))
            connection.executemany(
                "DELETE FROM schedule_slots WHERE tenant = ? AND schedule_id = ? AND revision = ?",
                settled,
            )
            live_elsewhere = connection.execute(
                "SELECT count(*) AS n FROM schedules INDEXED BY schedules_by_tenant_status"
                " WHERE tenant = ? AND status IN ('active', 'paused')"
                f" AND schedule_id NOT IN ({marks})",
                [tenant, *ids],
            ).fetchone()["n"]
            admitted, taken = admit_to_quota(
                reservation.schedule_id, states, pending, live_elsewhere, quota
            )
            if not admitted:
                return int(taken)
            connection.execute(
                "INSERT OR REPLACE INTO schedule_slots (tenant, schedule_id, revision, expires_ms)"
                " VALUES (?, ?, ?, ?)",
                (
                    tenant,
                    reservation.schedule_id,
                    reservation.revision,
                    to_epoch_ms(reservation.expires_at),
                ),
            )
        return None

    def release_schedule_slot(self, reservation: SlotReservation) -> None:
        self.db.write_one(
            "DELETE FROM schedule_slots WHERE tenant = ? AND schedule_id = ? AND revision = ?",
            (reservation.tenant, reservation.schedule_id, reservation.revision),
        )

    def reseal_definitions(self) -> int:
        resealed = 0
        after = ("", "")
        while True:
            rows = (
                self.db.connection()
                .execute(
                    "SELECT tenant, schedule_id, definition FROM schedules"
                    " WHERE (tenant, schedule_id) > (?, ?) AND definition IS NOT NULL"
                    " ORDER BY tenant, schedule_id LIMIT 500",
                    after,
                )
                .fetchall()
            )
            if not rows:
                return resealed
            for row in rows:
                text = self.secrets.resealed(row["definition"])
                if text is not None:
                    resealed += len(
                        self.db.write_one(
                            "UPDATE schedules SET definition = ?"
                            " WHERE tenant = ? AND schedule_id = ? AND definition = ? RETURNING 1",
                            (text, row["tenant"], row["schedule_id"], row["definition"]),
                        )
                    )
            after = (rows[-1]["tenant"], rows[-1]["schedule_id"])

    # -- idempotency keys ----------------------------------------------------------------

    def save_idempotency_record(
        self, record: IdempotencyRecord, now: datetime
    ) -> tuple[IdempotencyRecord, bool]:
        now_ms = to_epoch_ms(now)
        with self.db.write() as connection:
            # Expired records go here, in passing: the index makes it cost what has expired.
            connection.execute("DELETE FROM idempotency_keys WHERE expires_ms <= ?", (now_ms,))
            row = connection.execute(
                "SELECT * FROM idempotency_keys WHERE tenant = ? AND key = ?",
                (record.tenant, record.key),
            ).fetchone()
            if row is not None:
                return _idempotency(row), False
            connection.execute(
                "INSERT INTO idempotency_keys (tenant, key, fingerprint, schedule_id, revision,"
                " next_ms, timezone, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.tenant,
                    record.key,
                    record.fingerprint,
                    record.schedule_id,
                    record.revision,
                    maybe(to_epoch_ms, record.next_schedule_time),
                    record.timezone,
                    to_epoch_ms(record.created_at),
                    to_epoch_ms(record.expires_at),
                ),
            )
        return _stored_idempotency(record), True

    def get_idempotency_record(
        self, tenant: str, key: str, now: datetime
    ) -> IdempotencyRecord | None:
        row = (
            self.db.connection()
            .execute(
                "SELECT * FROM idempotency_keys WHERE tenant = ? AND key = ? AND expires_ms > ?",
                (tenant, key, to_epoch_ms(now)),
            )
            .fetchone()
        )
        return None if row is None else _idempotency(row)

    def delete_idempotency_record(self, tenant: str, key: str, fingerprint: str) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "DELETE FROM idempotency_keys WHERE tenant = ? AND key = ? AND fingerprint = ?",
                (tenant, key, fingerprint),
            )
            return cursor.rowcount == 1

    # -- API keys ------------------------------------------------------------------------

    def add_api_key(self, key: ApiKey) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "INSERT INTO api_keys (key_hash, tenant, name, created_ms) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (key_hash) DO NOTHING",
                (key.key_hash, key.tenant, key.name, to_epoch_ms(key.created_at)),
            )
            return cursor.rowcount == 1

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        row = (
            self.db.connection()
            .execute("SELECT * FROM api_keys WHERE key_hash = ?", (key_hash,))
            .fetchone()
        )
        return None if row is None else _api_key(row)

    def list_api_keys(self, tenant: str | None = None) -> list[ApiKey]:
        where, params = ("WHERE tenant = ?", (tenant,)) if tenant is not None else ("", ())
        rows = (
            self.db.connection()
            .execute(f"SELECT * FROM api_keys {where} ORDER BY created_ms, key_hash", params)
            .fetchall()
        )
        return [_api_key(row) for row in rows]

    def delete_api_key(self, key_id: str) -> int:
        if not is_key_id(key_id):
            return 0
        with self.db.write() as connection:
            cursor = connection.execute(
                "DELETE FROM api_keys WHERE substr(key_hash, 1, ?) = ?", (len(key_id), key_id)
            )
            return cursor.rowcount

    # -- executions ----------------------------------------------------------------------

    def begin_attempt(
        self, occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
    ) -> Execution | None:
        rows = self.db.write_one(_BEGIN, _begin_parameters(occurrence, owner, now, lease_until))
        return _begun(occurrence, rows[0] if rows else None, owner, now, lease_until)

    def begin_attempts(
        self, occurrences: Sequence[Occurrence], owner: str, now: datetime, lease_until: datetime
    ) -> list[Execution | None]:
        # One statement per chunk: each statement lets other threads take the GIL, and a busy
        # event loop may keep it for milliseconds before this thread gets it back.
        attempts: dict[tuple[str, str], sqlite3.Row] = {}
        unique = list({(o.tenant, o.occurrence_id): o for o in occurrences}.values())
        with self.db.write() as connection:
            for start in range(0, len(unique), _BEGINS_PER_STATEMENT):
                chunk = unique[start : start + _BEGINS_PER_STATEMENT]
                rows = connection.execute(
                    _BEGIN_MANY.format(values=", ".join([_BEGIN_ROW] * len(chunk))),
                    [p for o in chunk for p in _begin_parameters(o, owner, now, lease_until)],
                ).fetchall()
                for row in rows:
                    attempts[(row["tenant"], row["occurrence_id"])] = row
        begun: list[Execution | None] = []
        for occurrence in occurrences:
            row = attempts.pop((occurrence.tenant, occurrence.occurrence_id), None)
            begun.append(_begun(occurrence, row, owner, now, lease_until))
        return begun

    def finish_attempt(self, execution: Execution, owner: str, outcome: AttemptOutcome) -> bool:
        with self.db.write() as connection:
            return _finish(connection, execution, owner, outcome)

    def settle_attempts(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        keys = [(execution.tenant, execution.occurrence_id) for execution, _ in settled]
        if len(set(keys)) < len(keys):
            return self._settle_one_by_one(settled, owner)
        # Two statements per chunk, whatever its size: each statement lets other threads take
        # the GIL, and a busy event loop may keep it for milliseconds before this one gets it
        # back.
        recorded: set[tuple[str, str]] = set()
        with self.db.write() as connection:
            for start in range(0, len(settled), _SETTLES_PER_STATEMENT):
                chunk = settled[start : start + _SETTLES_PER_STATEMENT]
                rows = connection.execute(
                    _FINISH_MANY.format(values=", ".join([_FINISH_ROW] * len(chunk))),
                    [p for execution, outcome in chunk for p in _finish_values(execution, outcome)]
                    + [owner],
                ).fetchall()
                recorded.update((row["tenant"], row["occurrence_id"]) for row in rows)
            counts = _run_counts(
                [(e, o) for e, o in settled if (e.tenant, e.occurrence_id) in recorded]
            )
            for start in range(0, len(counts), _SETTLES_PER_STATEMENT):
                chunk = counts[start : start + _SETTLES_PER_STATEMENT]
                connection.execute(
                    _COUNT_MANY.format(values=", ".join([_COUNT_ROW] * len(chunk))),
                    [p for row in chunk for p in row],
                )
        return [key in recorded for key in keys]

    def _settle_one_by_one(
        self, settled: Sequence[tuple[Execution, AttemptOutcome]], owner: str
    ) -> list[bool]:
        recorded = []
        with self.db.write() as connection:
            for execution, outcome in settled:
                done = _finish(connection, execution, owner, outcome)
                if done and outcome.status.is_final:
                    _count_run(
                        connection,
                        execution.tenant,
                        execution.schedule_id,
                        outcome.status is ExecutionStatus.SUCCEEDED,
                        outcome.finished_at,
                    )
                recorded.append(done)
        return recorded

    def record_skips(
        self, skips: Sequence[tuple[Occurrence, str]], now: datetime, *, superseded: bool = False
    ) -> int:
        now_ms = to_epoch_ms(now)
        written = 0
        # Records created superseded, by schedule (an existing record keeps its flag, 0).
        created: Counter[tuple[str, str]] = Counter()
        with self.db.write() as connection:
            for occurrence, reason in skips:
                row = connection.execute(
                    "INSERT INTO executions (tenant, occurrence_id, schedule_id, scheduled_ms,"
                    " status, attempts, revision, finished_ms, error, manual, superseded)"
                    " VALUES (?, ?, ?, ?, 'skipped', 0, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (tenant, occurrence_id) DO UPDATE SET status = 'skipped',"
                    " finished_ms = excluded.finished_ms, error = excluded.error,"
                    " next_attempt_ms = NULL, lease_owner = NULL, lease_until_ms = NULL"
                    " WHERE status = 'retrying'"
                    " OR (status = 'running' AND lease_until_ms < excluded.finished_ms)"
                    " RETURNING superseded",
                    (
                        occurrence.tenant,
                        occurrence.occurrence_id,
                        occurrence.schedule_id,
                        to_epoch_ms(occurrence.scheduled_time),
                        occurrence.revision,
                        now_ms,
                        reason,
                        occurrence.manual,
                        superseded,
                    ),
                ).fetchone()
                if row is not None:
                    written += 1
                    if row["superseded"]:
                        created[(occurrence.tenant, occurrence.schedule_id)] += 1
            connection.executemany(
                "UPDATE schedules SET superseded_count = superseded_count + ?"
                " WHERE tenant = ? AND schedule_id = ?",
                [(count, tenant, schedule_id) for (tenant, schedule_id), count in created.items()],
            )
        return written

    def get_execution(self, tenant: str, occurrence_id: str) -> Execution | None:
        row = (
            self.db.connection()
            .execute(
                "SELECT * FROM executions WHERE tenant = ? AND occurrence_id = ?",
                (tenant, occurrence_id),
            )
            .fetchone()
        )
        return None if row is None else _execution(row)

    def list_executions(
        self,
        tenant: str,
        schedule_id: str,
        limit: int,
        cursor: str | None,
        status: ExecutionStatus | None = None,
    ) -> Page[Execution]:
        # With a status, the executions_by_status index; without, executions_by_schedule.
        where, params = "tenant = ? AND schedule_id = ? AND superseded = 0", [tenant, schedule_id]
        if status is not None:
            where = "tenant = ? AND schedule_id = ? AND status = ?"
            params = [tenant, schedule_id, status.value]
        return self._execution_page(
            where, params, ("scheduled_ms", attrgetter("scheduled_time")), limit, cursor
        )

    def list_dead_letters(
        self,
        tenant: str,
        limit: int,
        cursor: str | None,
        schedule_ids: Collection[str] | None = None,
    ) -> Page[Execution]:
        # Of some schedules: the tenant's dead letters read in order, the others passed over.
        where = "tenant = ? AND status = 'failed' AND discarded_ms IS NULL"
        ids = [] if schedule_ids is None else sorted(schedule_ids)
        if schedule_ids is not None:
            where += f" AND schedule_id IN ({', '.join('?' * len(ids))})"
        return self._execution_page(
            where,
            [tenant, *ids],
            ("finished_ms", attrgetter("finished_at")),
            limit,
            cursor,
        )

    def _execution_page(
        self,
        where: str,
        params: list[Any],
        order: tuple[str, Callable[[Execution], datetime | None]],
        limit: int,
        cursor: str | None,
    ) -> Page[Execution]:
        """The records ``where`` finds, newest first by ``order`` (its column, and the record's
        time in it), after ``cursor``."""
        column, moment = order
        after = ""
        if cursor is not None:
            after_ms, occurrence = parse_execution_cursor(cursor)
            after = f" AND ({column}, occurrence_id) < (?, ?)"
            params = [*params, after_ms, occurrence]
        rows = (
            self.db.connection()
            .execute(
                f"SELECT * FROM executions WHERE {where}{after}"
                f" ORDER BY {column} DESC, occurrence_id DESC LIMIT ?",
                (*params, limit + 1),
            )
            .fetchall()
        )
        return execution_page([_execution(row) for row in rows], limit, moment)

    def reopen_dead_letter(
        self, tenant: str, occurrence_id: str, now: datetime
    ) -> Execution | None:
        with self.db.write() as connection:
            row = connection.execute(
                "UPDATE executions SET status = 'retrying', next_attempt_ms = ?,"
                " lease_owner = NULL, lease_until_ms = NULL"
                " WHERE tenant = ? AND occurrence_id = ? AND status = 'failed'"
                " AND discarded_ms IS NULL RETURNING *",
                (to_epoch_ms(now), tenant, occurrence_id),
            ).fetchone()
        return None if row is None else _execution(row)

    def restore_dead_letter(self, reopened: Execution) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "UPDATE executions SET status = 'failed', next_attempt_ms = NULL"
                " WHERE tenant = ? AND occurrence_id = ? AND status = 'retrying'"
                " AND attempts = ? AND lease_owner IS NULL",
                (reopened.tenant, reopened.occurrence_id, reopened.attempts),
            )
            return cursor.rowcount == 1

    def discard_dead_letter(self, tenant: str, occurrence_id: str, now: datetime) -> bool:
        with self.db.write() as connection:
            cursor = connection.execute(
                "UPDATE executions SET discarded_ms = ? WHERE tenant = ? AND occurrence_id = ?"
                " AND status = 'failed' AND discarded_ms IS NULL",
                (to_epoch_ms(now), tenant, occurrence_id),
            )
            return cursor.rowcount == 1


# One statement: a new record, or the next attempt of one that is retrying, skipped, or running
# under an expired lease; nothing (no row back) when final or leased.
_BEGIN = (
    "INSERT INTO executions (tenant, occurrence_id, schedule_id, scheduled_ms,"
    " status, attempts, revision, started_ms, lease_owner, lease_until_ms, manual)"
    " VALUES (?, ?, ?, ?, 'running', 1, ?, ?, ?, ?, ?)"
    " ON CONFLICT (tenant, occurrence_id) DO UPDATE SET status = 'running',"
    " attempts = attempts + 1, revision = excluded.revision,"
    " started_ms = excluded.started_ms, lease_owner = excluded.lease_owner,"
    " lease_until_ms = excluded.lease_until_ms, next_attempt_ms = NULL, superseded = 0"
    " WHERE status IN ('retrying', 'skipped')"
    " OR (status = 'running' AND lease_until_ms < excluded.started_ms)"
    " RETURNING attempts, lateness_ms"
)


def _begin_parameters(
    occurrence: Occurrence, owner: str, now: datetime, lease_until: datetime
) -> tuple[Any, ...]:
    return (
        occurrence.tenant,
        occurrence.occurrence_id,
        occurrence.schedule_id,
        to_epoch_ms(occurrence.scheduled_time),
        occurrence.revision,
        to_epoch_ms(now),
        owner,
        to_epoch_ms(lease_until),
        occurrence.manual,
    )


def _apply_definition(
    connection: sqlite3.Connection,
    document: str,
    tenant: str,
    schedule_id: str,
    revision: int,
    definition: ScheduleDefinition,
    next_schedule_time: datetime | None,
    accepted_at: datetime,
) -> bool:
    """``apply_definition`` in the transaction of ``connection``; ``document``: the sealed
    definition's JSON text."""
    tags = json.dumps(list(definition.tags))
    target, key = target_of(definition.payload.location), name_key(definition.name)
    accepted = to_epoch_ms(accepted_at)
    next_ms = maybe(to_epoch_ms, next_schedule_time)
    row = connection.execute(
        "SELECT revision, state_revision, status FROM schedules"
        " WHERE tenant = ? AND schedule_id = ?",
        (tenant, schedule_id),
    ).fetchone()
    if row is None:
        status = status_by_next_time(next_schedule_time)
        connection.execute(
            "INSERT INTO schedules (tenant, schedule_id, revision, state_revision, status,"
            " definition, name, tags, next_ms, accepted_ms, created_ms, updated_ms,"
            " pause_after_failures, target, name_key)"
            " VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tenant,
                schedule_id,
                revision,
                status.value,
                document,
                definition.name,
                tags,
                next_ms,
                accepted,
                accepted,
                accepted,
                definition.pause_after_failures,
                target,
                key,
            ),
        )
        return True
    current = ScheduleStatus(row["status"])
    if not takes_definition(row["revision"], current, row["state_revision"], revision):
        return False
    current = status_after_definition(current, next_schedule_time)
    connection.execute(
        "UPDATE schedules SET revision = ?, status = ?, definition = ?, name = ?,"
        " tags = ?, next_ms = ?, accepted_ms = ?, updated_ms = ?, occurrence_count = 0,"
        " sent_ahead = NULL, lease_owner = NULL, lease_until_ms = NULL, pause_after_failures = ?,"
        " target = ?, name_key = ?"
        " WHERE tenant = ? AND schedule_id = ?",
        (
            revision,
            current.value,
            document,
            definition.name,
            tags,
            next_ms,
            accepted,
            accepted,
            definition.pause_after_failures,
            target,
            key,
            tenant,
            schedule_id,
        ),
    )
    return True


def _advance(connection: sqlite3.Connection, advance: Advance, owner: str, now: datetime) -> bool:
    claimed, next_schedule_time, occurrence_count, sent_ahead = advance
    status = status_by_next_time(next_schedule_time)
    cursor = connection.execute(
        "UPDATE schedules SET next_ms = ?, occurrence_count = ?, status = ?, sent_ahead = ?,"
        " updated_ms = ?, lease_owner = NULL, lease_until_ms = NULL"
        " WHERE tenant = ? AND schedule_id = ? AND lease_owner = ? AND revision = ?"
        " AND state_revision = ? AND status = 'active'",
        (
            maybe(to_epoch_ms, next_schedule_time),
            occurrence_count,
            status.value,
            json.dumps([to_epoch_ms(moment) for moment in sent_ahead]) if sent_ahead else None,
            to_epoch_ms(now),
            claimed.tenant,
            claimed.schedule_id,
            owner,
            claimed.revision,
            claimed.state_revision,
        ),
    )
    return cursor.rowcount == 1


def _count_run(
    connection: sqlite3.Connection, tenant: str, schedule_id: str, succeeded: bool, at: datetime
) -> None:
    at_ms = to_epoch_ms(at)
    connection.execute(
        _COUNT_MANY.format(values=_COUNT_ROW),
        (
            tenant,
            schedule_id,
            1,
            0 if succeeded else 1,
            succeeded,
            0 if succeeded else 1,
            at_ms,
            "succeeded" if succeeded else "failed",
            revision_at(at),
        ),
    )


# ``_finish`` and ``_count_run`` for many attempts, one statement each (SQLite 3.35+).
_SETTLES_PER_STATEMENT = 400
_FINISH_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# The attempt joins the end of the record's log, which keeps the latest KEPT_ATTEMPTS: each
# finish adds one, so dropping the first when full is enough. Its number is the record's own
# (as begun); the rest is the outcome's, its start when its request was sent.
_ATTEMPT = (
    "json_object('number', executions.attempts, 'status', v.column3,"
    " 'started_ms', v.column13, 'finished_ms', v.column4,"
    " 'duration_ms', v.column6, 'http_status', v.column5, 'error', v.column8,"
    " 'status_line', v.column10, 'excerpt', v.column11, 'truncated', v.column12)"
)
_FINISH_MANY = (
    "UPDATE executions SET status = v.column3, finished_ms = v.column4,"
    " http_status = v.column5, duration_ms = v.column6, lateness_ms = v.column7,"
    " error = v.column8, next_attempt_ms = v.column9, started_ms = v.column13,"
    " attempt_log = json_insert(CASE WHEN json_array_length(coalesce(attempt_log, '[]'))"
    f" >= {KEPT_ATTEMPTS} THEN json_remove(attempt_log, '$[0]')"
    f" ELSE coalesce(attempt_log, '[]') END, '$[#]', {_ATTEMPT}),"
    " lease_owner = NULL, lease_until_ms = NULL"
    " FROM (VALUES {values}) AS v"
    " WHERE executions.tenant = v.column1 AND executions.occurrence_id = v.column2"
    " AND executions.lease_owner = ? AND executions.status = 'running'"
    " RETURNING executions.tenant, executions.occurrence_id"
)
_COUNT_ROW = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"
# The failures in a row once the batch is counted; an active schedule whose streak reaches its
# pause_after_failures pauses itself, unless a pause or resume newer than the failure landed.
_STREAK = "CASE WHEN v.column5 THEN v.column6 ELSE consecutive_failures + v.column6 END"
_PAUSES = (
    f"(status = 'active' AND {_STREAK} >= pause_after_failures AND state_revision < v.column9)"
)
_COUNT_MANY = (
    "UPDATE schedules SET run_count = run_count + v.column3,"
    " failure_count = failure_count + v.column4,"
    f" consecutive_failures = {_STREAK},"
    " last_run_ms = v.column7, last_status = v.column8,"
    f" status = CASE WHEN {_PAUSES} THEN 'paused' ELSE status END,"
    f" paused_by = CASE WHEN {_PAUSES} THEN 'failures' ELSE paused_by END,"
    f" paused_ms = CASE WHEN {_PAUSES} THEN v.column7 ELSE paused_ms END,"
    f" updated_ms = CASE WHEN {_PAUSES} THEN v.column7 ELSE updated_ms END,"
    f" lease_owner = CASE WHEN {_PAUSES} THEN NULL ELSE lease_owner END,"
    f" lease_until_ms = CASE WHEN {_PAUSES} THEN NULL ELSE lease_until_ms END,"
    f" state_revision = CASE WHEN {_PAUSES} THEN v.column9 ELSE state_revision END"
    " FROM (VALUES {values}) AS v"
    " WHERE schedules.tenant = v.column1 AND schedules.schedule_id = v.column2"
)


def _finish_values(execution: Execution, outcome: AttemptOutcome) -> tuple[Any, ...]:
    return (
        execution.tenant,
        execution.occurrence_id,
        outcome.status.value,
        to_epoch_ms(outcome.finished_at),
        outcome.http_status,
        outcome.duration_ms,
        run_lateness_ms(execution, outcome),
        outcome.error,
        maybe(to_epoch_ms, outcome.next_attempt_at),
        outcome.response_status_line,
        outcome.response_excerpt,
        outcome.response_truncated,
        maybe(to_epoch_ms, attempt_started(execution, outcome)),
    )


def _attempts(log: str | None, execution: Execution) -> tuple[Attempt, ...]:
    """The record's log; for a record written before attempts were kept, its last one."""
    if log is None:
        return Attempt.last_of(execution)
    return tuple(
        Attempt.from_entry(
            entry, maybe(from_epoch_ms, entry["started_ms"]), from_epoch_ms(entry["finished_ms"])
        )
        for entry in json.loads(log)
    )


def _run_counts(
    recorded: Sequence[tuple[Execution, AttemptOutcome]],
) -> list[tuple[Any, ...]]:
    """What ``_count_run`` in order does, per schedule: runs, failures, whether a success reset
    the consecutive failures and how many followed, the last run's time and status, and the
    revision a pause at that time has."""
    counts: dict[tuple[str, str], list[Any]] = {}
    for execution, outcome in recorded:
        if not outcome.status.is_final:
            continue
        succeeded = outcome.status is ExecutionStatus.SUCCEEDED
        key = (execution.tenant, execution.schedule_id)
        row = counts.setdefault(key, [*key, 0, 0, False, 0, 0, "", 0])
        row[2] += 1
        row[3] += 0 if succeeded else 1
        row[4] = row[4] or succeeded
        row[5] = 0 if succeeded else row[5] + 1
        row[6] = to_epoch_ms(outcome.finished_at)
        row[7] = "succeeded" if succeeded else "failed"
        row[8] = revision_at(outcome.finished_at)
    return [tuple(row) for row in counts.values()]


def _finish(
    connection: sqlite3.Connection, execution: Execution, owner: str, outcome: AttemptOutcome
) -> bool:
    rows = connection.execute(
        _FINISH_MANY.format(values=_FINISH_ROW), (*_finish_values(execution, outcome), owner)
    ).fetchall()
    return len(rows) == 1


# ``_BEGIN`` for many occurrences in one statement (SQLite 3.35+: upsert with RETURNING).
_BEGIN_ROW = "(?, ?, ?, ?, 'running', 1, ?, ?, ?, ?, ?)"
_BEGIN_MANY = _BEGIN.replace(
    "VALUES (?, ?, ?, ?, 'running', 1, ?, ?, ?, ?, ?)", "VALUES {values}"
).replace("RETURNING attempts", "RETURNING tenant, occurrence_id, attempts")
_BEGINS_PER_STATEMENT = 500


def _begun(
    occurrence: Occurrence,
    row: sqlite3.Row | None,
    owner: str,
    now: datetime,
    lease_until: datetime,
) -> Execution | None:
    """The record begun, with its number of attempts and the lateness it keeps (``row``, as
    ``_BEGIN`` returns it); None if it was not begun (no row)."""
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


def _schedule(
    row: sqlite3.Row, secrets: SecretBox, cache: DefinitionCache | None = None
) -> Schedule:
    key = (row["tenant"], row["schedule_id"], row["revision"])
    return Schedule(
        tenant=key[0],
        schedule_id=key[1],
        revision=key[2],
        state_revision=row["state_revision"],
        status=ScheduleStatus(row["status"]),
        definition=open_definition(secrets, row["definition"], key, cache),
        next_schedule_time=maybe(from_epoch_ms, row["next_ms"]),
        accepted_at=from_epoch_ms(row["accepted_ms"]),
        created_at=from_epoch_ms(row["created_ms"]),
        updated_at=from_epoch_ms(row["updated_ms"]),
        occurrence_count=row["occurrence_count"],
        run_count=row["run_count"],
        superseded_count=row["superseded_count"],
        failure_count=row["failure_count"],
        consecutive_failures=row["consecutive_failures"],
        last_run_at=maybe(from_epoch_ms, row["last_run_ms"]),
        last_status=row["last_status"],
        lease_owner=row["lease_owner"],
        lease_until=maybe(from_epoch_ms, row["lease_until_ms"]),
        paused_by=None if row["paused_by"] is None else PausedBy(row["paused_by"]),
        paused_at=maybe(from_epoch_ms, row["paused_ms"]),
        sent_ahead=_instants(row["sent_ahead"]),
    )


def _instants(text: str | None) -> tuple[datetime, ...]:
    """A JSON list of epoch milliseconds (``NULL``: none) as instants."""
    return () if text is None else tuple(map(from_epoch_ms, json.loads(text)))


def _stored_idempotency(record: IdempotencyRecord) -> IdempotencyRecord:
    """The record as it reads back: instants to the millisecond."""
    return IdempotencyRecord(
        tenant=record.tenant,
        key=record.key,
        fingerprint=record.fingerprint,
        schedule_id=record.schedule_id,
        revision=record.revision,
        next_schedule_time=maybe(utc_ms, record.next_schedule_time),
        timezone=record.timezone,
        created_at=utc_ms(record.created_at),
        expires_at=utc_ms(record.expires_at),
    )


def _idempotency(row: sqlite3.Row) -> IdempotencyRecord:
    return IdempotencyRecord(
        tenant=row["tenant"],
        key=row["key"],
        fingerprint=row["fingerprint"],
        schedule_id=row["schedule_id"],
        revision=row["revision"],
        next_schedule_time=maybe(from_epoch_ms, row["next_ms"]),
        timezone=row["timezone"],
        created_at=from_epoch_ms(row["created_ms"]),
        expires_at=from_epoch_ms(row["expires_ms"]),
    )


def _api_key(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        key_hash=row["key_hash"],
        tenant=row["tenant"],
        name=row["name"],
        created_at=from_epoch_ms(row["created_ms"]),
    )


def _execution(row: sqlite3.Row) -> Execution:
    execution = Execution(
        tenant=row["tenant"],
        occurrence_id=row["occurrence_id"],
        schedule_id=row["schedule_id"],
        scheduled_time=from_epoch_ms(row["scheduled_ms"]),
        status=ExecutionStatus(row["status"]),
        attempts=row["attempts"],
        revision=row["revision"],
        started_at=maybe(from_epoch_ms, row["started_ms"]),
        finished_at=maybe(from_epoch_ms, row["finished_ms"]),
        http_status=row["http_status"],
        duration_ms=row["duration_ms"],
        lateness_ms=row["lateness_ms"],
        error=row["error"],
        next_attempt_at=maybe(from_epoch_ms, row["next_attempt_ms"]),
        lease_owner=row["lease_owner"],
        lease_until=maybe(from_epoch_ms, row["lease_until_ms"]),
        manual=bool(row["manual"]),
        superseded=bool(row["superseded"]),
    )
    return replace(execution, attempt_log=_attempts(row["attempt_log"], execution))
