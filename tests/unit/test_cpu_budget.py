"""One CPU budget over every time computation, including the work dateutil does inside its own
loop (``shared/recurrence/dateutil_rules.py``); inputs that dateutil cannot compute are refused
up front (issue 22, item 3).

Costs are read as this thread's CPU time, which a busy machine does not inflate.
"""

from __future__ import annotations

import gc
import itertools
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest
from dateutil.rrule import rrulestr

from shared.errors import InvalidInput
from shared.model import Every, Timing, Unit
from shared.notations import build_recurrence
from shared.recurrence import CPU_BUDGET_SECONDS, TooMuchWork, cpu_budget, parse_rrule
from shared.recurrence import base as recurrence_base
from shared.recurrence.dateutil_rules import single_rule
from shared.timeutil import UTC
from shared.validation import check_timing
from tests.support.times import upcoming

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
# What a refusal may cost beyond the budget: the last steps before the clock is read again.
SLACK_SECONDS = 0.4
FREQUENCIES = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")


class Spent:
    seconds = 0.0


@pytest.fixture
def spent() -> Iterator[Spent]:
    """The thread CPU time the test's body took."""
    result = Spent()
    started = time.thread_time()
    yield result
    result.seconds = time.thread_time() - started


def refusal(rule: str) -> tuple[dict[str, list[str]], float]:
    """The fields a create's checks name for ``rule``, and the thread CPU time they took."""
    started = time.thread_time()
    with pytest.raises(InvalidInput) as raised:
        check_timing(Timing("UTC", rrule=rule), NOW, timedelta(seconds=1))
    return raised.value.fields, time.thread_time() - started


@pytest.mark.parametrize("freq", FREQUENCIES)
def test_a_rule_dateutil_walks_to_the_year_9999_is_stopped_by_the_budget(freq: str) -> None:
    """Easter is never in January: dateutil walks every period up to 9999 without handing
    back anything (3 to 7 s a line before), and nothing can move a BYEASTER rule near 9999."""
    fields, cost = refusal(f"FREQ={freq};BYEASTER=0;BYMONTH=1")
    assert list(fields) == ["schedule.rrule"]
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS


@pytest.mark.parametrize("freq", ["SECONDLY", "MINUTELY", "HOURLY"])
def test_a_set_position_a_period_never_has_is_stopped_by_the_budget(freq: str) -> None:
    """One time per period and BYSETPOS=2: no period ever has a second (minutes of work for
    dateutil before, even near the year 9999)."""
    fields, cost = refusal(f"FREQ={freq};BYSETPOS=2")
    assert list(fields) == ["schedule.rrule"]
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS


def test_rule_lines_share_one_budget() -> None:
    """Four never-firing lines cost one budget, not four (35 s before)."""
    lines = "\n".join(f"RRULE:FREQ=DAILY;BYEASTER={offset};BYMONTH=1" for offset in range(4))
    fields, cost = refusal(lines)
    assert "schedule.rrule" in fields
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS


def test_at_most_ten_rule_lines() -> None:
    """46 such lines fit in the field's 2,000 characters; a field holds at most ten."""
    lines = "\n".join(f"RRULE:FREQ=DAILY;BYEASTER={n % 9};BYMONTH=1" for n in range(46))
    assert len(lines) <= 2000
    fields, cost = refusal(lines)
    assert "at most 10" in fields["schedule.rrule"][0]
    assert cost < 0.1
    ten = "\n".join(["RRULE:FREQ=DAILY;BYHOUR=9", *["EXRULE:FREQ=YEARLY;BYMONTH=2"] * 9])
    check_timing(Timing("UTC", rrule=ten), NOW, timedelta(seconds=1))


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=DAILY;BYEASTER=365",  # past the end of every year: an IndexError inside dateutil
        "FREQ=DAILY;BYEASTER=-365",
        # Fires while Easter is early (to 2028); from a late Easter on (2029) dateutil fails.
        "FREQ=DAILY;BYEASTER=" + ",".join(map(str, [*range(50), 265])),
        "FREQ=YEARLY;BYEASTER=251",
        "FREQ=YEARLY;BYEASTER=-81",
    ],
)
def test_an_easter_offset_that_leaves_easters_year_is_refused_by_name(rule: str) -> None:
    fields, _ = refusal(rule)
    assert "BYEASTER" in fields["schedule.rrule"][0]
    assert "-80 to 250" in fields["schedule.rrule"][0]


@pytest.mark.parametrize(
    ("rule", "accepted", "expected"),
    [
        # The furthest offsets from the earliest and the latest Easter stay in Easter's year.
        ("FREQ=YEARLY;BYEASTER=-80", datetime(2285, 1, 1, tzinfo=UTC), datetime(2285, 1, 1)),
        ("FREQ=YEARLY;BYEASTER=250", datetime(2038, 1, 1, tzinfo=UTC), datetime(2038, 12, 31)),
        ("FREQ=YEARLY;BYEASTER=-80", datetime(2038, 1, 1, tzinfo=UTC), datetime(2038, 2, 4)),
        ("FREQ=YEARLY;BYEASTER=250", datetime(2285, 1, 1, tzinfo=UTC), datetime(2285, 11, 27)),
    ],
)
def test_the_whole_easter_range_computes_in_every_year(
    rule: str, accepted: datetime, expected: datetime
) -> None:
    """Easter falls from March 22 (2285) to April 25 (2038)."""
    [first] = upcoming(Timing("UTC", rrule=rule), accepted, 1)
    assert first == expected.replace(tzinfo=UTC)


def test_a_charged_rule_finds_what_dateutil_finds() -> None:
    """Outside a budget the charged rule is dateutil's own; inside one, only slower to stop."""
    easter = "FREQ=YEARLY;BYEASTER=-2,0,1;BYHOUR=9,17;BYMINUTE=30"
    for text in (easter, "FREQ=HOURLY;INTERVAL=7;BYMINUTE=15", "FREQ=MONTHLY;BYDAY=-1FR"):
        start = datetime(2026, 1, 1)
        plain = rrulestr(text, dtstart=start)
        charged = single_rule(text, start)
        with cpu_budget():
            assert list(charged.replace(count=40)) == list(plain.replace(count=40))


def test_the_budget_stops_dateutil_between_two_finds(spent: Spent) -> None:
    """Stopped inside dateutil's loop: not after it has walked to the year 9999."""
    rule = single_rule("FREQ=SECONDLY;BYSETPOS=2", datetime(2026, 1, 1))
    with pytest.raises(TooMuchWork), cpu_budget(0.05):
        next(iter(rule))
    parse_rrule("FREQ=DAILY", UTC)  # the rule module still reads rules after a refusal
    assert spent.seconds < 0.05 + SLACK_SECONDS


@pytest.fixture
def slow_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each reading of the CPU clock finds a millisecond more spent: a budget of n ms runs out
    at the n-th reading, wherever in the search that falls."""
    ticks = itertools.count()
    monkeypatch.setattr(recurrence_base.cpu_clock, "thread_time", lambda: next(ticks) / 1000)


@pytest.mark.usefixtures("slow_cpu")
def test_running_out_of_budget_never_gives_a_wrong_time() -> None:
    """Every minute but in June: from May 31, the next is July 1 (seconds to find). Out of
    budget, wherever that happens, the search says so; it once took the end of the budget in
    a rule's expansion for the end of an excluded run (then the next time was, say, June 1,
    04:21)."""
    timing = Timing("UTC", rrule="RRULE:FREQ=MINUTELY\nEXRULE:FREQ=MINUTELY;BYMONTH=6")
    recurrence = build_recurrence(timing, datetime(2026, 5, 31, tzinfo=UTC))
    for milliseconds in range(1, 60):
        with pytest.raises(TooMuchWork), cpu_budget(milliseconds / 1000 - 0.0001):
            recurrence.next_after(datetime(2026, 5, 31, 23, 59, tzinfo=UTC))


@pytest.mark.usefixtures("slow_cpu")
def test_a_calendar_interval_out_of_budget_is_not_the_end_of_the_calendar() -> None:
    """(Once taken for the year 9999: no next time, the schedule completed.)"""
    timing = Timing("UTC", interval=Every(1, Unit.MONTH), start=datetime(2026, 1, 31))
    recurrence = build_recurrence(timing, NOW)
    with pytest.raises(TooMuchWork), cpu_budget(0.0005):
        recurrence.next_after(datetime(2040, 3, 31, tzinfo=UTC))  # an occurrence: one step on


@pytest.fixture
def slow_full_collections() -> Iterator[None]:
    """Each full garbage collection takes 0.3 s of this thread's CPU, as one does late in a
    long-lived process (the test suite's, past its 1,500th test) where the heap is big."""

    def slow(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            until = time.thread_time() + 0.3
            while time.thread_time() < until:
                pass

    gc.callbacks.append(slow)
    try:
        yield
    finally:
        gc.callbacks.remove(slow)


@pytest.mark.usefixtures("slow_full_collections")
def test_a_full_garbage_collection_is_not_charged_to_the_budget() -> None:
    """A cheap rule whose computation a full collection interrupted once ran out of its budget:
    a console create was refused, or, in the processor, an accepted create dead-lettered (the
    schedule silently lost). A costly rule is still stopped."""
    started = time.thread_time()
    with cpu_budget(0.1):
        gc.collect()
        times = upcoming(Timing("Europe/Paris", cron="0 2 * * *"), NOW, 50)
    assert len(times) == 50
    assert time.thread_time() - started >= 0.3  # the collection was slow, inside the budget
    costly = single_rule("FREQ=SECONDLY;BYSETPOS=2", datetime(2026, 1, 1))
    with pytest.raises(TooMuchWork), cpu_budget(0.05):
        gc.collect()
        next(iter(costly))
