"""The SQLite store's quota of live schedules per tenant, and its reservations."""

from __future__ import annotations

from datetime import datetime

from shared.adapters.sqlite.base import SqliteBacked
from shared.adapters.sqlite.sql import where
from shared.model import ScheduleStatus
from shared.ports import ScheduleStore, SlotReservation
from shared.quota_rules import (
    StoredState,
    admit_to_quota,
    pending_slot,
)
from shared.store_rules import LIVE
from shared.timeutil import from_epoch_ms, to_epoch_ms

_LIVE = where("schedules", LIVE)


class SqliteQuota(SqliteBacked, ScheduleStore):
    """A tenant's quota: its live schedules counted, reservations held under the write lock."""

    def count_tenant_schedules(self, tenant: str) -> int:
        row = (
            self.db.connection()
            .execute(
                # Named: without statistics the planner would walk the rows instead.
                "SELECT count(*) AS n FROM schedules INDEXED BY schedules_by_tenant_status"
                f" WHERE tenant = ? AND {_LIVE}",
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
                f" WHERE tenant = ? AND {_LIVE}"
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
