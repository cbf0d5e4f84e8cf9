"""The cursor of an ordered listing of schedules, and what a search looks for in targets."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.errors import InvalidInput
from shared.ports import ScheduleFilter, ScheduleOrder
from shared.schedule_listing import (
    Position,
    decode_cursor,
    encode_cursor,
    searched_host,
    target_of,
)

MOMENT = datetime(2026, 5, 1, 7, 0, 0, 123_000, tzinfo=UTC)
POSITIONS = [
    (ScheduleOrder.ID, Position("s-01", "s-01")),
    (ScheduleOrder.NAME, Position("a | b", "s-01")),
    (ScheduleOrder.NAME, Position("", "s-01")),
    (ScheduleOrder.NAME, Position('{"json": "|"}', "s.1~x")),
    (ScheduleOrder.NEXT_TIME, Position(MOMENT, "s-01")),
    (ScheduleOrder.NEXT_TIME, Position(None, "s-01")),
    (ScheduleOrder.CREATED, Position(MOMENT, "s-01")),
]


@pytest.mark.parametrize(("order", "position"), POSITIONS)
@pytest.mark.parametrize("descending", [False, True])
def test_a_cursor_reads_back_as_its_position_in_its_own_order_only(
    order: ScheduleOrder, position: Position, descending: bool
) -> None:
    query = ScheduleFilter(order=order, descending=descending)
    cursor = encode_cursor(position, query)
    assert decode_cursor(cursor, query) == position
    for other in ScheduleOrder:
        for direction in (False, True):
            if (other, direction) != (order, descending):
                with pytest.raises(InvalidInput):
                    decode_cursor(cursor, ScheduleFilter(order=other, descending=direction))


def test_by_id_ascending_the_cursor_is_the_last_id_as_the_api_gives_it() -> None:
    assert encode_cursor(Position("s-01", "s-01"), ScheduleFilter()) == "s-01"


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "name+|",
        "name+|3|s1",
        "name+|not json|s1",
        "next_time+|true|s1",
        "created+|null|s1",
        "created+|99999999999999999|s1",
        "created+|1.5|s1",
        'id-|"s2"|s1',
    ],
)
def test_a_cursor_no_listing_gave_is_refused_naming_the_cursor(cursor: str) -> None:
    order = ScheduleOrder(cursor.partition("+")[0].partition("-")[0] or "id")
    descending = "-|" in cursor
    with pytest.raises(InvalidInput) as refused:
        decode_cursor(cursor, ScheduleFilter(order=order, descending=descending))
    assert "cursor" in refused.value.fields


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("https://Hooks.Example.com/run?token=abc", "hooks.example.com"),
        ("http://10.0.0.7:8080/x/y", "10.0.0.7:8080"),
        ("https://user@hooks.example.com:443/", "hooks.example.com:443"),
        ("http://[::1]:9000/", "::1:9000"),
        ("https://hooks.example.com:99999/", "hooks.example.com"),
    ],
)
def test_the_target_is_the_host_and_port_only(url: str, target: str) -> None:
    assert target_of(url) == target


def test_a_search_looks_for_the_host_of_a_url_or_the_text() -> None:
    assert searched_host("https://Billing.example.com/a?b=c") == "billing.example.com"
    assert searched_host(" Billing ") == "billing"
