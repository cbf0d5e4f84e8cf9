"""The MongoDB store's quota of live schedules per tenant, and its reservations."""

from __future__ import annotations

from datetime import datetime

from pymongo.errors import DuplicateKeyError

from shared.adapters.mongo.base import MongoBacked
from shared.adapters.mongo.filters import Filters
from shared.adapters.mongo.transient import transient
from shared.errors import Transient
from shared.model import ScheduleStatus
from shared.ports import ScheduleStore, SlotReservation
from shared.quota_rules import (
    StoredState,
    admit_to_quota,
    pending_slot,
)
from shared.store_rules import LIVE
from shared.timeutil import from_epoch_ms, to_epoch_ms

_LIVE = Filters("schedules", {}).filter(LIVE)
# A tenant's quota reservations are one document: those pending (``reserved``), an upper bound
# of the slots taken (``taken``: counted exactly when written whole, then one more for each
# reservation added), the reservations that may still be added before the next count
# (``room``), and a ``version`` that every change raises. While the bound is under the quota and
# ``room`` is left, a reservation is one guarded update; otherwise the slots are counted anew,
# the reservations no longer pending dropped and the whole document written, guarded by its
# version, with ``room`` for _SLOTS_BETWEEN_COUNTS more. A writer that lost a round (another
# changed the document meanwhile) tries the one update again before counting anew, so that
# concurrent creates share each count rather than undo one another's: a count every
# _SLOTS_BETWEEN_COUNTS reservations however many creates await the processor. (When the count
# was due once 64 reservations were pending, every create counted while the processor was 64
# behind, 8 concurrent ones took up to 41 rounds of 4 commands each, and past _SLOT_ROUNDS the
# create answered 503.)
_SLOTS_BETWEEN_COUNTS = 64
_SLOT_ROUNDS = 64


class MongoQuota(MongoBacked, ScheduleStore):
    """A tenant's quota: its live schedules counted, its reservations in one document."""

    def count_tenant_schedules(self, tenant: str) -> int:
        with transient("count_tenant_schedules"):
            return self.schedules.count_documents({"tenant": tenant, **_LIVE})

    def reserve_schedule_slot(
        self, reservation: SlotReservation, quota: int, now: datetime
    ) -> int | None:
        entry = _slot_entry(reservation)
        with transient("reserve_schedule_slot"):
            for _ in range(_SLOT_ROUNDS):
                added = self.schedule_slots.update_one(
                    {"_id": reservation.tenant, "taken": {"$lt": quota}, "room": {"$gt": 0}},
                    {"$push": {"reserved": entry}, "$inc": {"taken": 1, "room": -1, "version": 1}},
                )
                if added.matched_count:
                    return None
                decided, taken = self._recount_slots(reservation, entry, quota, now)
                if decided:
                    return taken
        raise Transient(
            f"reserve_schedule_slot {reservation.tenant}: changed by other writers, try again"
        )

    def _recount_slots(
        self, reservation: SlotReservation, entry: str, quota: int, now: datetime
    ) -> tuple[bool, int | None]:
        """One round: whether it decided (else another writer changed the document
        meanwhile), and ``reserve_schedule_slot``'s answer."""
        tenant = reservation.tenant
        document = self.schedule_slots.find_one({"_id": tenant})
        held = [_slot(tenant, item) for item in (document["reserved"] if document else [])]
        ids = sorted({reservation.schedule_id, *(item.schedule_id for item in held)})
        # The reserved schedules in one read, and the other live ones counted apart: a create
        # applied between the two reads is counted once either way.
        states = {
            found["schedule_id"]: StoredState(
                ScheduleStatus(found["status"]), found["revision"], found["state_revision"]
            )
            for found in self.schedules.find(
                {"tenant": tenant, "schedule_id": {"$in": ids}},
                {"schedule_id": 1, "status": 1, "revision": 1, "state_revision": 1},
            )
        }
        kept = [
            item
            for item in held
            if pending_slot(item.revision, item.expires_at, states.get(item.schedule_id), now)
        ]
        live_elsewhere = self.schedules.count_documents(
            {"tenant": tenant, **_LIVE, "schedule_id": {"$nin": ids}}
        )
        admitted, taken = admit_to_quota(
            reservation.schedule_id,
            states,
            {item.schedule_id for item in kept},
            live_elsewhere,
            quota,
        )
        if not admitted:
            return True, taken
        reserved = [*map(_slot_entry, kept), entry]
        fields = {"reserved": reserved, "room": _SLOTS_BETWEEN_COUNTS, "taken": taken}
        if document is None:
            try:
                self.schedule_slots.insert_one({"_id": tenant, "version": 1, **fields})
            except DuplicateKeyError:
                return False, None
            return True, None
        written = self.schedule_slots.update_one(
            {"_id": tenant, "version": document["version"]},
            {"$set": fields, "$inc": {"version": 1}},
        )
        return bool(written.matched_count), None

    def release_schedule_slot(self, reservation: SlotReservation) -> None:
        entry = _slot_entry(reservation)
        with transient("release_schedule_slot"):
            # ``taken`` stays: an upper bound still, counted anew when it reaches the quota.
            self.schedule_slots.update_one(
                {"_id": reservation.tenant, "reserved": entry},
                {"$pull": {"reserved": entry}, "$inc": {"version": 1}},
            )


def _slot_entry(reservation: SlotReservation) -> str:
    """A quota reservation as an item of its tenant's ``reserved`` array: text, which every
    server compares, pushes and pulls alike (nx-27017 0.8.1 turns a pushed document to text)."""
    expires_ms = to_epoch_ms(reservation.expires_at)
    return f"{reservation.revision}:{expires_ms}:{reservation.schedule_id}"


def _slot(tenant: str, entry: str) -> SlotReservation:
    revision, expires_ms, schedule_id = entry.split(":", 2)
    return SlotReservation(tenant, schedule_id, int(revision), from_epoch_ms(int(expires_ms)))
