"""The MongoDB store's claims of due schedules: by slices, so that pollers take disjoint work."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DESCENDING
from pymongo.errors import PyMongoError

from shared.adapters.mongo.base import Document, MongoBacked, write_cases_of
from shared.adapters.mongo.documents import SLICES
from shared.adapters.mongo.filters import Filters
from shared.adapters.mongo.transient import transient
from shared.claim_rules import (
    BY_PRIORITY,
    CLAIM,
    CLAIMABLE,
    DUE,
    OLDEST_FIRST,
    claim_params,
)
from shared.guards import holds
from shared.model import Schedule
from shared.ports import ClaimRequest, ScheduleStore

# How often a claim looks again for candidates it lost to a concurrent claimer.
_CLAIM_ROUNDS = 3


# Pollers claim disjoint work without coordinating. Each schedule carries a slice, a hash of
# its key (``shared.adapters.mongo.documents.schedule_slice``); a poller that is behind (its
# last claim came back full) claims from one window of consecutive slices, the next window at
# each claim, and every ``_WHOLE_EVERY``-th claim from all of them: the most overdue schedule
# (or one stored before slices) waits at most that many claims of any poller. A poller that
# lost candidates to another jumps to a window at random. The slices are cut into up to
# ``_WINDOWS`` windows: fewer, wider ones while a window holds less than a claim takes (each
# such claim costs a second round, from all slices).
_WINDOWS = 8
_WHOLE_EVERY = _WINDOWS + 1
# What a claim reads of its candidates: what CLAIM's cases tell apart.
_READ = ("status", "next_schedule_time", "lease_until")


@dataclass
class _ClaimCursor:
    """Where a poller (one owner) claims next; see ``SLICES``."""

    behind: bool = False
    windows: int = _WINDOWS
    window: int = field(default_factory=lambda: random.randrange(_WINDOWS))
    claims: int = 0
    # Claim tokens this owner stamped on schedules it never read back (the store failed
    # between the update and the read), with the ids they were stamped on.
    unread: dict[str, list[str]] = field(default_factory=dict)

    def next_window(self) -> tuple[int, int] | None:
        """The slices of this claim's first round; ``None``: all, earliest first."""
        if not self.behind:
            return None
        self.claims += 1
        if self.claims % _WHOLE_EVERY == 0:
            return None
        self.window = (self.window + 1) % self.windows
        return self._slices()

    def jump(self) -> tuple[int, int]:
        self.window = random.randrange(self.windows)
        return self._slices()

    def fitted(self, filled: bool) -> None:
        """Wider windows after one that held less than the claim wanted; narrower after one
        that filled it."""
        self.windows = min(_WINDOWS, self.windows * 2) if filled else max(1, self.windows // 2)
        self.window %= self.windows

    def _slices(self) -> tuple[int, int]:
        width = SLICES // self.windows
        return self.window * width, (self.window + 1) * width


class MongoClaims(MongoBacked, ScheduleStore):
    """The poller's claims: disjoint batches of due schedules, under a lease."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Where each poller (owner) of this process claims next.
        self._claim_cursors: dict[str, _ClaimCursor] = {}

    def claim_due_schedules(self, claim: ClaimRequest) -> list[Schedule]:
        # A constant number of round trips per batch, whatever its size: the candidates' ids
        # from the (status, next_schedule_time, slice, lease_until) index, one guarded
        # update_many per case of CLAIM that stamps a fresh claim token on those still free,
        # and one read of what carries the token (by _id, so it stays an index lookup). Of
        # concurrent claimers, each candidate goes to one: the update's filter repeats the
        # whole condition. A claimer that lost candidates to another goes round again, in
        # another window of slices (SLICES), and the next read no longer sees what the other
        # holds.
        params = claim_params(claim)
        filters = Filters("schedules", params)
        # By priority from the (status, priority, next_schedule_time, slice, lease_until)
        # index: read a priority at a time, each from its earliest to the horizon.
        order = OLDEST_FIRST if claim.oldest_first else BY_PRIORITY
        sort = [(name, DESCENDING if descending else ASCENDING) for name, descending in order]
        cursor = self._claim_cursors.setdefault(claim.owner, _ClaimCursor())
        window = cursor.next_window()
        claimed: list[Schedule] = []
        with transient("claim_due_schedules"):
            if cursor.unread:
                reclaimed = self._reclaim_unread(cursor, filters, params)
                claimed += [self.schedule_from(document) for document in reclaimed]
            for _ in range(_CLAIM_ROUNDS):
                wanted = claim.limit - len(claimed)
                if wanted <= 0:
                    break
                selector = filters.filter(CLAIMABLE)
                if window is not None:
                    # In $and, beside the lease's $or: nx-27017 0.8.1 drops a range that
                    # stands beside an $or.
                    in_window = {"slice": {"$gte": window[0], "$lt": window[1]}}
                    selector.setdefault("$and", []).append(in_window)
                candidates = list(
                    self.schedules.find(selector, dict.fromkeys(_READ, 1)).sort(sort).limit(wanted)
                )
                if not candidates and window is None:
                    break
                if candidates:
                    won = self._stamp_claims(candidates, filters, params)
                    claimed += [self.schedule_from(document) for document in won]
                    if len(won) < len(candidates):
                        window = cursor.jump()
                        continue
                if window is not None:
                    cursor.fitted(len(candidates) == wanted)
                if len(candidates) == wanted or window is None:
                    break
                # This window has no more due: the rest from all slices.
                window = None
        cursor.behind = len(claimed) >= claim.limit
        claimed.sort(key=_oldest_order if claim.oldest_first else _priority_order)
        return claimed

    def _stamp_claims(
        self, candidates: Sequence[Document], filters: Filters, params: Mapping[str, Any]
    ) -> list[Document]:
        """Lease the candidates still free to the owner; the documents this call leased."""
        token = uuid.uuid4().hex
        ids = [candidate["_id"] for candidate in candidates]
        found = [(c["_id"], self.fields("schedules", c)) for c in candidates]
        try:
            # One guarded update_many per case (no lease, or one that ran out: its poller
            # died), each of the candidates found in that case.
            for case in write_cases_of(CLAIM):
                chosen = [key for key, fields in found if holds(case.guard, fields, params)]
                if chosen:
                    update = self.update_of(CLAIM, case, params)
                    update["$set"]["claim_token"] = token
                    selector = {"_id": {"$in": chosen}, **filters.filter(case.guard)}
                    self.schedules.update_many(selector, update)
            return list(self.schedules.find({"_id": {"$in": ids}, "claim_token": token}))
        except PyMongoError:
            # An update may have been applied without its answer: what it leased is taken
            # back by this owner's next claim, not left until the lease ends.
            self._claim_cursors[params["owner"]].unread[token] = ids
            raise

    def _reclaim_unread(
        self, cursor: _ClaimCursor, filters: Filters, params: Mapping[str, Any]
    ) -> list[Document]:
        """The schedules an earlier claim of the owner leased but never read back (see
        ``_stamp_claims``), still leased to it and due: leased again under a new token, read.
        Advanced or claimed by another since, a schedule carries another owner or token."""
        unread, cursor.unread = cursor.unread, {}
        ids = list(dict.fromkeys(id_ for stamped in unread.values() for id_ in stamped))
        token = uuid.uuid4().hex
        leased = filters.value("lease_until", params["lease_until"])
        try:
            self.schedules.update_many(
                {
                    "_id": {"$in": ids},
                    "claim_token": {"$in": list(unread)},
                    "lease_owner": params["owner"],
                    **filters.filter(DUE),
                },
                {"$set": {"lease_until": leased, "claim_token": token}},
            )
            return list(self.schedules.find({"_id": {"$in": ids}, "claim_token": token}))
        except PyMongoError:
            cursor.unread = {**unread, token: ids}
            raise


def _oldest_order(schedule: Schedule) -> tuple[datetime, str]:
    assert schedule.next_schedule_time is not None  # claimed schedules are due
    return schedule.next_schedule_time, schedule.schedule_id


def _priority_order(schedule: Schedule) -> tuple[int, datetime, str]:
    return (-schedule.live_definition.priority, *_oldest_order(schedule))
