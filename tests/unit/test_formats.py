"""The formats that cross processes and reach clients read back what they wrote: occurrence ids
(scheduled and manual) and execution cursors (``shared.formats``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.formats import (
    SCHEDULE_ID,
    OccurrenceId,
    cursor_before,
    execution_cursor,
    is_execution_cursor,
    manual_occurrence_id,
    occurrence_id,
    parse_execution_cursor,
    parse_occurrence_id,
)
from shared.model import Occurrence, nominal_time
from shared.timeutil import to_epoch_ms, utc_ms

schedule_ids = st.from_regex(SCHEDULE_ID, fullmatch=True)
# Instants as the stores keep them: to the millisecond, between the years the API accepts.
instants = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9000, 12, 31), timezones=st.just(UTC)
).map(utc_ms)
tokens = st.text("0123456789abcdef", min_size=1, max_size=32)


@given(schedule_ids, instants)
def test_a_scheduled_occurrence_id_reads_back_as_its_schedule_and_time(
    schedule_id: str, moment: datetime
) -> None:
    text = occurrence_id(schedule_id, moment)
    assert parse_occurrence_id(text) == OccurrenceId(schedule_id, moment)
    assert str(parse_occurrence_id(text)) == text
    assert nominal_time(text) == moment


@given(schedule_ids, instants, tokens)
def test_a_manual_occurrence_id_reads_back_with_its_random_part(
    schedule_id: str, moment: datetime, token: str
) -> None:
    text = manual_occurrence_id(schedule_id, moment, token)
    named = parse_occurrence_id(text)
    assert named == OccurrenceId(schedule_id, moment, token)
    assert named is not None and named.manual and str(named) == text
    # A trigger's time is its own: no jitter to measure against a schedule's time.
    assert nominal_time(text) is None


def test_the_id_of_an_occurrence_is_the_format_s() -> None:
    moment = datetime(2026, 3, 8, 7, 30, 0, 123456, tzinfo=UTC)
    occurrence = Occurrence("t", "report", 1, moment)
    assert occurrence.occurrence_id == "report:2026-03-08T07:30:00.123Z"
    assert (
        manual_occurrence_id("report", moment, "beef")
        == "report:manual:2026-03-08T07:30:00.123Z:beef"
    )
    # Two triggers in the same millisecond are told apart by their random part.
    assert manual_occurrence_id("report", moment) != manual_occurrence_id("report", moment)


@pytest.mark.parametrize(
    "text",
    [
        "report",
        "report:",
        "report:2026-03-08T07:30:00Z",
        "report:2026-03-08T07:30:00.000",
        "report:2026-13-08T07:30:00.000Z",
        "report:2026-03-08T07:30:00.000Z\n",
        "report:manual:2026-03-08T07:30:00.000Z",
        "report:manual:2026-03-08T07:30:00.000Z:XYZ",
        "-report:2026-03-08T07:30:00.000Z",
        ":2026-03-08T07:30:00.000Z",
    ],
)
def test_text_that_is_not_an_occurrence_id_reads_as_none(text: str) -> None:
    assert parse_occurrence_id(text) is None


@given(instants, schedule_ids, instants)
def test_an_execution_cursor_reads_back_as_its_position(
    moment: datetime, schedule_id: str, scheduled: datetime
) -> None:
    occurrence = occurrence_id(schedule_id, scheduled)
    cursor = execution_cursor(moment, occurrence)
    assert is_execution_cursor(cursor)
    assert parse_execution_cursor(cursor) == (to_epoch_ms(moment), occurrence)
    assert parse_execution_cursor(cursor_before(moment)) == (to_epoch_ms(moment), "")


@pytest.mark.parametrize("text", ["", "123", "123|", "|report:x", "12a|report", "1|a|b"])
def test_text_that_is_not_an_execution_cursor_is_refused(text: str) -> None:
    assert not is_execution_cursor(text)
