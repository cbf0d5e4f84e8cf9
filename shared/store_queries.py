"""The store's listings as queries, once for every backend: which records (a condition of
``shared.guards`` and its parameters), in which order, how many. Each backend runs a ``Query``
as it is (``SELECT … WHERE … ORDER BY … LIMIT``, ``find().sort().limit()``).

A listing of schedules goes a segment at a time (``shared.schedule_listing``); a page of
execution records is ordered by a time, then the occurrence id, newest first, after a cursor
(``shared.ports.execution_page``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.claim_rules import LATE_DUE
from shared.execution_rules import DEAD_LETTER, IS_RUN
from shared.formats import parse_execution_cursor
from shared.guards import After, AnyOf, Condition, Field, Param
from shared.model import ScheduleStatus
from shared.ports import DeadLetterRequest, HistoryRequest, ScheduleOrder
from shared.schedule_listing import KEYLESS_LAST, Segment, name_key, searched_host
from shared.store_rules import (
    SHOWN,
    STATUS,
)
from shared.timeutil import from_epoch_ms

TENANT = Field("tenant") == Param("tenant")
SCHEDULE = Field("schedule_id") == Param("schedule_id")
# The stored field each order of a listing goes by, then the schedule id.
ORDER_FIELDS = {
    ScheduleOrder.ID: "schedule_id",
    ScheduleOrder.NAME: "name_key",
    ScheduleOrder.NEXT_TIME: "next_schedule_time",
    ScheduleOrder.CREATED: "created_at",
}


@dataclass(frozen=True)
class Query:
    table: str
    condition: Condition
    params: Mapping[str, Any]
    order: tuple[str, ...]
    descending: bool
    limit: int
    # The instant each record is paged by (execution records), for its cursor.
    moment: str = field(default="", compare=False)


def segment_query(tenant: str, segment: Segment) -> Query | None:
    """A segment of a listing of schedules; ``None`` where it holds none (a listing of
    tombstones; the schedules without a next time within a window of next times)."""
    query = segment.query
    condition = TENANT & SHOWN
    params: dict[str, Any] = {"tenant": tenant}
    if query.status is ScheduleStatus.DELETED:
        return None
    if query.status is not None:
        condition &= STATUS == Param("status")
        params["status"] = query.status.value
    if query.name_prefix:
        condition &= Field("name").starts_with(Param("prefix"))
        params["prefix"] = query.name_prefix
    if query.tag:
        condition &= Field("tags").has(Param("tag"))
        params["tag"] = query.tag
    if query.ids is not None:
        if not query.ids:
            return None
        condition &= _one_of("schedule_id", sorted(set(query.ids)), params)
    window = {"next_after": (">=", query.next_after), "next_before": ("<=", query.next_before)}
    for name, (op, moment) in window.items():
        if moment is not None:
            condition &= _compare(Field("next_schedule_time"), op, Param(name))
            params[name] = moment
    text = (query.search or "").strip()
    if text:
        searched = Field("name_key").contains(Param("name_part")) | Field("tags").has(Param("text"))
        params |= {"name_part": name_key(text), "text": text}
        host = searched_host(text)
        if host:
            searched |= Field("target").contains(Param("host"))
            params["host"] = host
        condition &= searched
    ordered = ORDER_FIELDS[query.order]
    if query.order in KEYLESS_LAST:
        if segment.keyless and (query.next_after or query.next_before):
            return None  # a window of times holds no schedule without one
        condition &= (Field(ordered) == None) if segment.keyless else (Field(ordered) != None)
    by_id = segment.keyless or query.order is ScheduleOrder.ID
    order = ("schedule_id",) if by_id else (ordered, "schedule_id")
    after = segment.after
    if after is not None:
        keys = (after.schedule_id,) if by_id else (after.key, after.schedule_id)
        names = tuple(f"after_{index}" for index in range(len(order)))
        condition &= After(order, tuple(map(Param, names)), query.descending)
        params |= dict(zip(names, keys, strict=True))
    return Query("schedules", condition, params, order, query.descending, segment.limit)


def _compare(stored: Field, op: str, given: Param) -> Condition:
    return stored >= given if op == ">=" else stored <= given


def history_query(history: HistoryRequest) -> Query:
    """A schedule's records, newest scheduled time first: with ``status``, those in it;
    without, its runs (``IS_RUN``)."""
    status = history.status
    condition = TENANT & SCHEDULE & (IS_RUN if status is None else STATUS == Param("status"))
    params: dict[str, Any] = {"tenant": history.tenant, "schedule_id": history.schedule_id}
    if status is not None:
        params["status"] = status.value
    return _page("scheduled_time", condition, params, history.limit, history.cursor)


def dead_letters_query(request: DeadLetterRequest) -> Query | None:
    """The tenant's dead letters, the latest failure first; of ``schedule_ids`` only when
    given (``None`` for none of them)."""
    condition = TENANT & DEAD_LETTER
    params: dict[str, Any] = {"tenant": request.tenant}
    if request.schedule_ids is not None:
        ids = sorted(request.schedule_ids)
        if not ids:
            return None
        condition &= _one_of("schedule_id", ids, params)
    return _page("finished_at", condition, params, request.limit, request.cursor)


def _one_of(name: str, values: list[str], params: dict[str, Any]) -> Condition:
    """``name`` is one of ``values`` (added to ``params``). Equalities rather than one list:
    on MongoDB an $or of them, which nx-27017 0.8.1 (a wire server we test against) gets right
    beside dates written by update operators, and $in does not; SQLite makes of them the same
    search as of a list."""
    names = [f"{name}_{index}" for index in range(len(values))]
    params |= dict(zip(names, values, strict=True))
    return AnyOf(tuple(Field(name) == Param(one) for one in names))


def _page(
    moment: str, condition: Condition, params: dict[str, Any], limit: int, cursor: str | None
) -> Query:
    """Newest first by ``moment``, then occurrence id; after ``cursor``; one more than
    ``limit`` (to learn whether more exist)."""
    order = (moment, "occurrence_id")
    if cursor is not None:
        moment_ms, occurrence_id = parse_execution_cursor(cursor)
        condition &= After(order, (Param("after_time"), Param("after_id")), descending=True)
        params |= {"after_time": from_epoch_ms(moment_ms), "after_id": occurrence_id}
    return Query("executions", condition, params, order, True, limit + 1, moment)


def late_query(now: Any, limit: int) -> Query:
    """The schedules whose lateness is due to be checked by ``now`` (``LATE_DUE``), the
    longest waiting first."""
    return Query("schedules", LATE_DUE, {"now": now}, ("late_check_at",), False, limit)


def recorded_query(tenant: str, schedule_id: str, occurrence_ids: Collection[str]) -> Query:
    """The execution records of some occurrences of a schedule (equalities, as
    ``dead_letters_query``'s, for nx-27017)."""
    ids = sorted(occurrence_ids)
    names = [f"occurrence_{index}" for index in range(len(ids))]
    condition = (
        TENANT & SCHEDULE & AnyOf(tuple(Field("occurrence_id") == Param(name) for name in names))
    )
    params: dict[str, Any] = {"tenant": tenant, "schedule_id": schedule_id}
    params |= dict(zip(names, ids, strict=True))
    return Query("executions", condition, params, ("occurrence_id",), False, len(ids))
