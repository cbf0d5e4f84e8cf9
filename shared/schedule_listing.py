"""How a listing of schedules is searched, ordered and paged, whatever the store.

A listing is ordered by one key (``ScheduleOrder``), then by schedule id, both ascending or
both descending (so one index serves either direction); schedules without the key (no next
time) come after all the others, by id. A page is read after a position, the last schedule of
the page before (a keyset: a page costs the same wherever it is). A store turns each
``Segment``, the schedules with the key or those without it, into one query; ``ordered_page``
makes a page of at most two of them.

The cursor of a listing by id, ascending, is the last id (as the API has always given it).
Another order's cursor names the order, so that a cursor is never read in another one:
``<order><+ or ->|<the key as JSON>|<schedule id>`` (a schedule id holds no ``|``).

Names are searched and ordered case folded (``name_key``: "Nightly" beside "nightly"), which
the store keeps beside the name. Search by URL: a payload's URL is sealed at rest with the rest
of the payload (its path and query may carry credentials, ``shared.secrets``), so the store
keeps beside it, unsealed, only its host and port (``target_of``), which no answer masks
either; a search matches that.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from shared.errors import InvalidInput
from shared.formats import SCHEDULE_ID_TEXT
from shared.model import Schedule
from shared.ports import Page, ScheduleFilter, ScheduleOrder
from shared.timeutil import from_epoch_ms, to_epoch_ms

SortKey = str | datetime | None
# The orders a listing is asked for (?sort= of the API and the console): the store's order, and
# whether descending (a leading -).
SORTS: dict[str, tuple[ScheduleOrder, bool]] = {
    "id": (ScheduleOrder.ID, False),
    "name": (ScheduleOrder.NAME, False),
    "-name": (ScheduleOrder.NAME, True),
    "next": (ScheduleOrder.NEXT_TIME, False),
    "-next": (ScheduleOrder.NEXT_TIME, True),
    "created": (ScheduleOrder.CREATED, False),
    "-created": (ScheduleOrder.CREATED, True),
}
# The longest text a listing searches for.
SEARCH_LENGTH = 200
# What ``encode_cursor`` writes, in any order (``decode_cursor`` checks it against the order).
CURSOR = re.compile(
    rf"^(?:{SCHEDULE_ID_TEXT}|(?:{'|'.join(ScheduleOrder)})[+-]\|.+\|{SCHEDULE_ID_TEXT})\Z"
)
# The orders whose key a schedule may lack.
KEYLESS_LAST = frozenset({ScheduleOrder.NEXT_TIME})
_NOT_A_CURSOR = {"cursor": "not a cursor of this listing: start again from its first page"}


def target_of(url: str) -> str:
    """What a store keeps unsealed of a payload's URL: its host, and port if one is written,
    in lower case (``https://Hooks.example.com:8443/x?token=…`` → ``hooks.example.com:8443``)."""
    parts = urlsplit(url.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    return f"{host}:{port}" if port is not None else host


def name_key(text: str) -> str:
    """What a name is searched and ordered by: case folded."""
    return text.casefold()


def searched_host(text: str) -> str:
    """The text a search looks for in targets: the host of a URL, else the text itself."""
    text = text.strip()
    return target_of(text) if "://" in text else text.casefold()


def sort_key(schedule: Schedule, order: ScheduleOrder) -> SortKey:
    if order is ScheduleOrder.NAME:
        return name_key(schedule.live_definition.name)
    if order is ScheduleOrder.NEXT_TIME:
        return schedule.next_schedule_time
    if order is ScheduleOrder.CREATED:
        return schedule.created_at
    return schedule.schedule_id


@dataclass(frozen=True)
class Position:
    """Where a page ends: its last schedule's key (``None``: it has none) and id."""

    key: SortKey
    schedule_id: str


@dataclass(frozen=True)
class Segment:
    """One query of a page: the schedules ``query`` selects that lack the order's key
    (``keyless``) or have it, after ``after`` in the order, ``limit`` at most, in order."""

    query: ScheduleFilter
    keyless: bool
    after: Position | None
    limit: int


def encode_cursor(position: Position, query: ScheduleFilter) -> str:
    if query.order is ScheduleOrder.ID and not query.descending:
        return position.schedule_id
    key = position.key
    value = to_epoch_ms(key) if isinstance(key, datetime) else key
    direction = "-" if query.descending else "+"
    return f"{query.order.value}{direction}|{json.dumps(value)}|{position.schedule_id}"


def decode_cursor(cursor: str, query: ScheduleFilter) -> Position:
    """The position ``cursor`` names in ``query``'s order; ``InvalidInput`` naming ``cursor``
    for one of another order, or no cursor at all."""
    if query.order is ScheduleOrder.ID and not query.descending:
        if "|" in cursor or not cursor:
            raise InvalidInput(_NOT_A_CURSOR)
        return Position(cursor, cursor)
    head, _, rest = cursor.partition("|")
    text, _, schedule_id = rest.rpartition("|")
    expected = f"{query.order.value}{'-' if query.descending else '+'}"
    try:
        value = json.loads(text) if head == expected and schedule_id else ValueError
    except ValueError:
        value = ValueError
    if query.order is ScheduleOrder.ID and value == schedule_id:
        return Position(schedule_id, schedule_id)
    if query.order is ScheduleOrder.NAME and isinstance(value, str):
        return Position(value, schedule_id)
    if query.order in (ScheduleOrder.NEXT_TIME, ScheduleOrder.CREATED):
        if value is None and query.order in KEYLESS_LAST:
            return Position(None, schedule_id)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return Position(from_epoch_ms(value), schedule_id)
            except OverflowError:
                pass
    raise InvalidInput(_NOT_A_CURSOR)


def ordered_page(
    query: ScheduleFilter,
    limit: int,
    cursor: str | None,
    fetch: Callable[[Segment], list[Schedule]],
) -> Page[Schedule]:
    """A page of ``limit`` schedules at most after ``cursor``, from the store's ``fetch``: the
    schedules with the key first, then, when they end within the page, those without it."""
    after = None if cursor is None else decode_cursor(cursor, query)
    found: list[Schedule] = []
    if after is None or after.key is not None:
        found = fetch(Segment(query, False, after, limit + 1))
    if len(found) <= limit and query.order in KEYLESS_LAST:
        keyless_after = after if after is not None and after.key is None else None
        found += fetch(Segment(query, True, keyless_after, limit + 1 - len(found)))
    items = found[:limit]
    if len(found) <= limit or not items:
        return Page(items)
    last = Position(sort_key(items[-1], query.order), items[-1].schedule_id)
    return Page(items, encode_cursor(last, query))
