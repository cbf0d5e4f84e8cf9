"""Property-based tests: the recurrence engine against independent oracles, over many zones.

Each oracle computes the same occurrences another way, without the engine's search windows,
restarts or year shifts:
- RRULE: python-dateutil expanding the rule from DTSTART in the zone (zoneinfo, ``fold=0``),
  every occurrence converted to UTC, sorted and de-duplicated; EXDATE/RDATE as instants.
- calendar intervals: the anchor plus k months/days/… by ``relativedelta``, resolved by zoneinfo.
- exact intervals: the anchor plus k steps in UTC.
- cron: the fields as sets (drawn as sets, then written as text) and a brute-force walk, minute
  by minute in real time for wildcard-hour lines, wall time by wall time for fixed-time lines
  (Debian cron: a time the clocks skip runs at the first minute after the jump).

Accepted times are drawn near the zone's own offset changes as often as anywhere in the year.
Runs derandomized with a bounded number of examples, so CI is stable and quick.
"""

from __future__ import annotations

import calendar
import contextlib
import functools
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import islice, pairwise

from croniter import CroniterBadDateError, croniter
from dateutil.relativedelta import relativedelta
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.model import Every, Timing, Unit
from shared.notations import build_recurrence
from tests.support.times import upcoming

# Zones with something to test: 30- and 45-minute offsets and shifts, DST at midnight, negative
# DST, 2-hour DST, zones that changed offset for good, links, and the date line.
TRICKY_ZONES = (
    "America/New_York",
    "Europe/London",
    "Europe/Dublin",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "Asia/Calcutta",
    "Asia/Kathmandu",
    "America/St_Johns",
    "America/Havana",
    "America/Santiago",
    "America/Asuncion",
    "Asia/Beirut",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "Asia/Tehran",
    "America/Sao_Paulo",
    "Europe/Moscow",
    "US/Eastern",
    "Australia/Adelaide",
    "America/Nuuk",
    "UTC",
)
ALL_ZONES = tuple(sorted(zoneinfo.available_timezones()))
zones = st.one_of(st.sampled_from(TRICKY_ZONES), st.sampled_from(ALL_ZONES))

PROPERTY_SETTINGS = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- Where the clocks change ------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def transitions(zone_name: str, year: int) -> tuple[datetime, ...]:
    """The instants at which ``zone_name``'s UTC offset changes during ``year`` (to the minute)."""
    zone = zoneinfo.ZoneInfo(zone_name)
    found = []
    moment = datetime(year, 1, 1, tzinfo=UTC)
    end = datetime(year + 1, 1, 1, tzinfo=UTC)
    step = timedelta(hours=6)
    while moment < end:
        if moment.astimezone(zone).utcoffset() != (moment + step).astimezone(zone).utcoffset():
            low, high = moment, moment + step
            while high - low > timedelta(minutes=1):
                middle = low + (high - low) / 2
                if middle.astimezone(zone).utcoffset() == low.astimezone(zone).utcoffset():
                    low = middle
                else:
                    high = middle
            found.append(high.replace(second=0, microsecond=0))
        moment += step
    return tuple(found)


@st.composite
def accepted_times(draw: st.DrawFn, zone_name: str) -> datetime:
    """An instant to accept a schedule at: near one of the zone's offset changes, or anywhere."""
    year = draw(st.integers(2005, 2037))
    changes = transitions(zone_name, year)
    where = draw(st.sampled_from(["anywhere", "near", "close"]))
    if changes and where != "anywhere":
        change = draw(st.sampled_from(changes))
        if where == "close":
            return change + timedelta(minutes=draw(st.integers(-150, 90)))
        return change + timedelta(minutes=draw(st.integers(-36 * 60, 6 * 60)))
    start = datetime(year, 1, 1, tzinfo=UTC)
    return start + timedelta(seconds=draw(st.integers(0, 365 * 86400)))


def resolve(wall: datetime, zone_name: str) -> datetime:
    """The instant of a wall time by PEP 495 ``fold=0``, through zoneinfo (not the engine)."""
    return wall.replace(tzinfo=zoneinfo.ZoneInfo(zone_name), fold=0).astimezone(UTC)


def local_wall(moment: datetime, zone_name: str) -> datetime:
    return moment.astimezone(zoneinfo.ZoneInfo(zone_name)).replace(tzinfo=None)


def exists(wall: datetime, zone_name: str) -> bool:
    return local_wall(resolve(wall, zone_name), zone_name) == wall


def engine_times(timing: Timing, accepted: datetime, count: int) -> list[datetime]:
    return upcoming(timing, accepted, count)


def assert_no_drift(timing: Timing, accepted: datetime, times: list[datetime]) -> None:
    """Occurrence n+1 follows from occurrence n's scheduled time, however late n ran."""
    recurrence = build_recurrence(timing, accepted)
    for earlier, later in pairwise(times):
        assert earlier < later
        assert recurrence.next_after(earlier) == later
        halfway = earlier + (later - earlier) / 2
        halfway = halfway.replace(microsecond=halfway.microsecond // 1000 * 1000)
        assert recurrence.next_after(halfway) == later


# -- RRULE ------------------------------------------------------------------------------------

WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")


@dataclass(frozen=True)
class DrawnRule:
    body: str  # without COUNT and UNTIL
    freq: str
    count: int | None
    has_until: bool
    until_local: bool  # write UNTIL as local wall time rather than UTC


@st.composite
def rules(draw: st.DrawFn) -> DrawnRule:
    """Rules that fire often enough that every gap is far below the search horizon."""
    freq = draw(st.sampled_from(["MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY"]))
    parts = [f"FREQ={freq}"]
    interval = {
        "MINUTELY": st.sampled_from([5, 7, 15, 20, 25, 30, 45, 90]),
        "HOURLY": st.integers(1, 5),
        "DAILY": st.integers(1, 3),
        "WEEKLY": st.integers(1, 2),
        "MONTHLY": st.integers(1, 3),
        "YEARLY": st.just(1),
    }[freq]
    parts.append(f"INTERVAL={draw(interval)}")
    hours = st.lists(st.sampled_from([0, 1, 2, 3, 4, 9, 12, 23]), min_size=1, max_size=4)
    minutes = st.lists(st.sampled_from([0, 7, 15, 30, 45, 59]), min_size=1, max_size=3)
    if freq == "MINUTELY":
        # BYHOUR with a step that does not divide the hour can leave no valid time at all.
        if draw(st.booleans()) and parts[1] in ("INTERVAL=5", "INTERVAL=15", "INTERVAL=30"):
            parts.append("BYHOUR=" + ",".join(map(str, sorted(set(draw(hours))))))
    else:
        if freq != "HOURLY" and draw(st.booleans()):
            parts.append("BYHOUR=" + ",".join(map(str, sorted(set(draw(hours))))))
        if draw(st.booleans()):
            parts.append("BYMINUTE=" + ",".join(map(str, sorted(set(draw(minutes))))))
    if freq in ("DAILY", "WEEKLY") and draw(st.booleans()):
        days = draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=5, unique=True))
        parts.append("BYDAY=" + ",".join(days))
    if freq == "MONTHLY":
        choice = draw(st.sampled_from(["none", "monthday", "nth", "setpos"]))
        if choice == "monthday":
            days = draw(st.lists(st.sampled_from([1, 2, 15, 28, 29, 30, 31, -1]), min_size=1))
            parts.append("BYMONTHDAY=" + ",".join(map(str, sorted(set(days)))))
        elif choice == "nth":
            nth = draw(st.sampled_from(["1", "2", "4", "-1", "-2"]))
            parts.append(f"BYDAY={nth}{draw(st.sampled_from(WEEKDAYS))}")
        elif choice == "setpos":
            parts.append("BYDAY=MO,TU,WE,TH,FR")
            parts.append(f"BYSETPOS={draw(st.sampled_from(['1', '-1', '2']))}")
    if freq == "YEARLY":
        months = draw(st.lists(st.integers(1, 12), min_size=1, max_size=3, unique=True))
        parts.append("BYMONTH=" + ",".join(map(str, sorted(months))))
        if draw(st.booleans()):
            parts.append(f"BYMONTHDAY={draw(st.sampled_from([1, 13, 28, -1]))}")
        elif draw(st.booleans()):
            nth = draw(st.sampled_from(["1", "-1"]))
            parts.append(f"BYDAY={nth}{draw(st.sampled_from(WEEKDAYS))}")
    if freq == "DAILY" and draw(st.booleans()):
        parts.append(f"BYMONTHDAY={draw(st.sampled_from([1, 13, 29, 31, -1]))}")
    ending = draw(st.sampled_from(["none", "none", "count", "until"]))
    count = draw(st.integers(1, 40)) if ending == "count" else None
    return DrawnRule(";".join(parts), freq, count, ending == "until", draw(st.booleans()))


def rrule_oracle(
    body: str,
    dtstart: datetime,
    zone_name: str,
    count: int | None,
    until: datetime | None,
    exdates: set[datetime],
    rdates: set[datetime],
    not_before: datetime,
    wanted: int,
) -> list[datetime]:
    """Expand the rule from DTSTART (aware, zoneinfo) with dateutil; everything as instants."""
    text = body
    if count is not None:
        text += f";COUNT={count}"
    if until is not None:
        text += f";UNTIL={until.astimezone(UTC):%Y%m%dT%H%M%SZ}"
    rule = rrulestr(text, dtstart=dtstart.replace(tzinfo=zoneinfo.ZoneInfo(zone_name)))
    instants: set[datetime] = set(rdates)
    enough_after: datetime | None = None
    for occurrence in islice(rule, 200_000):
        instant = occurrence.astimezone(UTC)
        if enough_after is not None and instant > enough_after:
            break
        instants.add(instant)
        later = sorted(i for i in instants - exdates if i >= not_before)
        if enough_after is None and len(later) >= wanted:
            # Wall times come in order except around a jump: go two days further to be sure.
            enough_after = later[wanted - 1] + timedelta(days=2)
    return sorted(i for i in instants - exdates if i >= not_before)[:wanted]


@PROPERTY_SETTINGS
@given(data=st.data())
def test_rrule_matches_dateutil_with_zoneinfo(data: st.DataObject) -> None:
    zone_name = data.draw(zones, label="zone")
    accepted = data.draw(accepted_times(zone_name), label="accepted").replace(microsecond=0)
    drawn = data.draw(rules(), label="rule")
    fine = drawn.freq in ("MINUTELY", "HOURLY")
    check_rrule(data, zone_name, accepted, drawn, st.integers(0, 20 if fine else 1500))


@st.composite
def jumps(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and an instant within a couple of hours of one of its offset changes."""
    zone_name = draw(st.sampled_from([z for z in TRICKY_ZONES if transitions(z, 2026)]))
    year = draw(st.integers(2006, 2037))
    changes = transitions(zone_name, year) or transitions(zone_name, 2026)
    change = draw(st.sampled_from(changes))
    return zone_name, change + timedelta(minutes=draw(st.integers(-150, 120)))


@PROPERTY_SETTINGS
@given(data=st.data())
def test_sub_hourly_rrule_across_offset_changes_matches_dateutil(data: st.DataObject) -> None:
    # Steps that do not divide the hour put skipped wall times between the real ones (RFC 5545
    # reads them with the offset before the gap), and repeated ones fire once: the instants come
    # out of wall-time order, and the engine must still give them in order.
    zone_name, accepted = data.draw(jumps(), label="jump")
    step = data.draw(st.sampled_from([7, 13, 25, 45, 50, 90]), label="step")
    body = data.draw(
        st.sampled_from(
            [
                f"FREQ=MINUTELY;INTERVAL={step}",
                "FREQ=HOURLY;BYMINUTE=7,37",
                "FREQ=DAILY;BYHOUR=0,1,2,3;BYMINUTE=0,20,40",
            ]
        ),
        label="body",
    )
    freq = body.split(";")[0].removeprefix("FREQ=")
    drawn = DrawnRule(body, freq, None, has_until=False, until_local=False)
    check_rrule(data, zone_name, accepted, drawn, st.integers(0, 3))


def check_rrule(
    data: st.DataObject,
    zone_name: str,
    accepted: datetime,
    drawn: DrawnRule,
    days_back: st.SearchStrategy[int],
) -> None:
    """The engine's first occurrences of the rule, accepted at ``accepted``, are the oracle's."""
    back = timedelta(days=data.draw(days_back, label="days_back"))
    start_wall = (local_wall(accepted, zone_name) - back).replace(
        hour=data.draw(st.sampled_from([0, 1, 2, 3, 9, 23]), label="start_hour"),
        minute=data.draw(st.sampled_from([0, 15, 30, 59]), label="start_minute"),
        second=0,
        microsecond=0,
    )
    start = resolve(start_wall, zone_name)
    until = None
    text = drawn.body
    if drawn.count is not None:
        text += f";COUNT={drawn.count}"
    if drawn.has_until:
        until_wall = local_wall(accepted, zone_name) + timedelta(
            minutes=data.draw(st.integers(0, 90 * 24 * 60))
        )
        until = resolve(until_wall, zone_name)
        written = f"{until_wall:%Y%m%dT%H%M%S}" if drawn.until_local else f"{until:%Y%m%dT%H%M%SZ}"
        text += f";UNTIL={written}"
    # EXDATE one wall time of the rule near acceptance, and RDATE an extra instant.
    lines = [f"RRULE:{text}"]
    exdates: set[datetime] = set()
    rdates: set[datetime] = set()
    if data.draw(st.booleans(), label="exdate"):
        near = rrulestr(drawn.body, dtstart=start_wall).after(local_wall(accepted, zone_name))
        if near is not None:
            lines.append(f"EXDATE:{near:%Y%m%dT%H%M%S}")
            exdates.add(resolve(near, zone_name))
    if data.draw(st.booleans(), label="rdate"):
        extra = accepted + timedelta(minutes=data.draw(st.integers(0, 3 * 24 * 60)))
        lines.append(f"RDATE:{extra:%Y%m%dT%H%M%SZ}")
        rdates.add(extra)
    timing = Timing(zone_name, rrule="\n".join(lines), start=start_wall)

    wanted = 6
    expected = rrule_oracle(
        drawn.body,
        start_wall,
        zone_name,
        drawn.count,
        until,
        exdates,
        {r for r in rdates if r >= start},
        max(accepted, start),
        wanted,
    )
    actual = engine_times(timing, accepted, wanted)
    assert actual == expected
    assert_no_drift(timing, accepted, actual)


# -- Calendar and exact intervals ------------------------------------------------------------


@PROPERTY_SETTINGS
@given(data=st.data())
def test_calendar_intervals_match_relativedelta_with_zoneinfo(data: st.DataObject) -> None:
    zone_name = data.draw(zones, label="zone")
    accepted = data.draw(accepted_times(zone_name), label="accepted").replace(microsecond=0)
    unit = data.draw(st.sampled_from([Unit.DAY, Unit.WEEK, Unit.MONTH, Unit.YEAR]), label="unit")
    number = data.draw(st.integers(1, 3), label="number")
    with_start = data.draw(st.booleans(), label="with_start")
    if with_start:
        anchor_wall = _anchor(data, accepted, zone_name, unit)
        timing = Timing(zone_name, interval=Every(number, unit), start=anchor_wall)
        first_wall = anchor_wall
        not_before = max(accepted, resolve(anchor_wall, zone_name))
    else:
        timing = Timing(zone_name, interval=Every(number, unit))
        first_wall = local_wall(accepted, zone_name) + calendar_step(unit, number)
        not_before = accepted
    expected: list[datetime] = []
    step = 0
    while len(expected) < 5:
        wall = first_wall + calendar_step(unit, number * step)
        instant = resolve(wall, zone_name)
        if instant >= not_before and (not expected or instant > expected[-1]):
            expected.append(instant)
        step += 1
    actual = engine_times(timing, accepted, 5)
    assert actual == expected
    assert_no_drift(timing, accepted, actual)


def calendar_step(unit: Unit, amount: int) -> relativedelta:
    if unit is Unit.DAY:
        return relativedelta(days=amount)
    if unit is Unit.WEEK:
        return relativedelta(weeks=amount)
    if unit is Unit.MONTH:
        return relativedelta(months=amount)
    return relativedelta(years=amount)


def _anchor(data: st.DataObject, accepted: datetime, zone_name: str, unit: Unit) -> datetime:
    back = timedelta(days=data.draw(st.integers(0, 3000), label="days_back"))
    day = local_wall(accepted, zone_name) - back
    if unit in (Unit.MONTH, Unit.YEAR) and data.draw(st.booleans(), label="month_end"):
        # The 29th-31st, to exercise month-end clamping.
        last = calendar.monthrange(day.year, day.month)[1]
        day = day.replace(day=min(last, data.draw(st.integers(29, 31), label="day")))
    return datetime.combine(
        day.date(),
        time(data.draw(st.integers(0, 23), label="hour"), data.draw(st.sampled_from([0, 30])), 0),
    )


@PROPERTY_SETTINGS
@given(data=st.data())
def test_exact_intervals_are_elapsed_time(data: st.DataObject) -> None:
    zone_name = data.draw(zones, label="zone")
    accepted = data.draw(accepted_times(zone_name), label="accepted")
    unit = data.draw(st.sampled_from([Unit.SECOND, Unit.MINUTE, Unit.HOUR]), label="unit")
    number = data.draw(st.integers(1, 90), label="number")
    step = timedelta(seconds=number * {Unit.SECOND: 1, Unit.MINUTE: 60, Unit.HOUR: 3600}[unit])
    if data.draw(st.booleans(), label="with_start"):
        back = timedelta(hours=data.draw(st.integers(0, 48), label="hours_back"))
        start_wall = (local_wall(accepted, zone_name) - back).replace(
            minute=0, second=0, microsecond=0
        )
        timing = Timing(zone_name, interval=Every(number, unit), start=start_wall)
        anchor = resolve(start_wall, zone_name)
    else:
        timing = Timing(zone_name, interval=Every(number, unit))
        anchor = accepted.replace(microsecond=accepted.microsecond // 1000 * 1000) + step
    skipped = max(0, -(-(accepted - anchor) // step))
    expected = [anchor + (skipped + k) * step for k in range(5)]
    actual = engine_times(timing, accepted, 5)
    assert actual == expected
    assert_no_drift(timing, accepted, actual)


# -- Cron -------------------------------------------------------------------------------------

DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")


@dataclass(frozen=True)
class DrawnCron:
    """A cron line's meaning as sets, and the text it is written as."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]  # days of the month; 32 stands for L (the last day)
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    nth_weekdays: frozenset[tuple[int, int]]  # (weekday, n): the n-th such weekday; -1 = last
    day_star: bool
    weekday_star: bool
    fixed_time: bool


@st.composite
def numeric_field(
    draw: st.DrawFn, low: int, high: int, steps: list[int], favourites: list[int]
) -> tuple[str, frozenset[int]]:
    kind = draw(st.sampled_from(["star", "step", "single", "list", "range", "range_step"]))
    values = st.sampled_from(favourites) if favourites else st.integers(low, high)
    if kind == "star":
        return "*", frozenset(range(low, high + 1))
    if kind == "step":
        step = draw(st.sampled_from(steps))
        return f"*/{step}", frozenset(range(low, high + 1, step))
    if kind == "single":
        value = draw(values)
        return str(value), frozenset({value})
    if kind == "list":
        chosen = sorted(set(draw(st.lists(values, min_size=2, max_size=4))))
        return ",".join(map(str, chosen)), frozenset(chosen)
    first = draw(st.integers(low, high - 1))
    last = draw(st.integers(first, min(high, first + 6)))
    if kind == "range":
        return f"{first}-{last}", frozenset(range(first, last + 1))
    step = draw(st.sampled_from([2, 3]))
    return f"{first}-{last}/{step}", frozenset(range(first, last + 1, step))


@st.composite
def cron_lines(draw: st.DrawFn) -> DrawnCron:
    minute_text, minutes = draw(numeric_field(0, 59, [5, 10, 15, 20, 30], [0, 1, 15, 30, 45, 59]))
    if minute_text == "*":
        minute_text, minutes = "*/5", frozenset(range(0, 60, 5))  # keep the walk small
    hour_text, hours = draw(numeric_field(0, 23, [2, 3, 6], [0, 1, 2, 3, 4, 12, 23]))
    day_kind = draw(st.sampled_from(["star", "star", "star", "list", "last", "range", "step"]))
    day_text, days = {
        "star": ("*", frozenset(range(1, 32))),
        "list": ("1,15,29,30,31", frozenset({1, 15, 29, 30, 31})),
        "last": ("L", frozenset({32})),
        "range": ("1-7", frozenset(range(1, 8))),
        "step": ("*/2", frozenset(range(1, 32, 2))),
    }[day_kind]
    month_kind = draw(st.sampled_from(["star", "star", "names", "numbers"]))
    if month_kind == "star":
        month_text, months = "*", frozenset(range(1, 13))
    else:
        chosen = sorted(draw(st.lists(st.integers(1, 12), min_size=2, max_size=6, unique=True)))
        names = [MONTH_NAMES[m - 1] if month_kind == "names" else str(m) for m in chosen]
        month_text, months = ",".join(names), frozenset(chosen)
    weekday_kind = draw(
        st.sampled_from(["star", "star", "star", "weekdays", "weekend", "nth", "last", "numbers"])
    )
    weekdays: frozenset[int] = frozenset(range(7))
    nth: frozenset[tuple[int, int]] = frozenset()
    if weekday_kind == "star":
        weekday_text = "*"
    elif weekday_kind == "weekdays":
        weekday_text, weekdays = "MON-FRI", frozenset(range(1, 6))
    elif weekday_kind == "weekend":
        weekday_text, weekdays = "SAT,SUN", frozenset({0, 6})
    elif weekday_kind == "numbers":
        weekday_text, weekdays = "0,3,7", frozenset({0, 3})
    elif weekday_kind == "nth":
        day, n = draw(st.integers(0, 6)), draw(st.integers(1, 4))
        weekday_text = f"{DAY_NAMES[day]}#{n}" if draw(st.booleans()) else f"{day}#{n}"
        weekdays, nth = frozenset(), frozenset({(day, n)})
    else:
        day = draw(st.integers(0, 6))
        weekday_text, weekdays, nth = f"{day}L", frozenset(), frozenset({(day, -1)})
    return DrawnCron(
        text=" ".join([minute_text, hour_text, day_text, month_text, weekday_text]),
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=weekdays,
        nth_weekdays=nth,
        day_star=day_text.startswith("*"),
        weekday_star=weekday_text.startswith("*"),
        fixed_time=not minute_text.startswith("*") and not hour_text.startswith("*"),
    )


def cron_day_matches(line: DrawnCron, day: date) -> bool:
    if day.month not in line.months:
        return False
    last = calendar.monthrange(day.year, day.month)[1]
    by_day = day.day in line.days or (32 in line.days and day.day == last)
    weekday = (day.weekday() + 1) % 7
    by_weekday = weekday in line.weekdays or any(
        weekday == wanted and (n == (day.day - 1) // 7 + 1 or (n == -1 and day.day + 7 > last))
        for wanted, n in line.nth_weekdays
    )
    # Debian cron: if either day field starts with "*", both must match; otherwise either.
    if line.day_star or line.weekday_star:
        return by_day and by_weekday
    return by_day or by_weekday


def cron_oracle(
    line: DrawnCron, zone_name: str, since: datetime, until: datetime
) -> list[datetime]:
    """Every firing in ``[since, until]``, found by walking minutes."""
    found: set[datetime] = set()
    if not line.fixed_time:
        # Wildcard hour or minute: real time, minute by minute.
        moment = since.replace(second=0, microsecond=0)
        if moment < since:
            moment += timedelta(minutes=1)
        while moment <= until:
            wall = local_wall(moment, zone_name)
            if (
                wall.minute in line.minutes
                and wall.hour in line.hours
                and cron_day_matches(line, wall.date())
            ):
                found.add(moment)
            moment += timedelta(minutes=1)
        return sorted(found)
    # Fixed time: each matching wall time once, at its first instant; a skipped one runs at the
    # first wall minute after the jump.
    day = local_wall(since, zone_name).date() - timedelta(days=2)
    while day <= local_wall(until, zone_name).date() + timedelta(days=1):
        if cron_day_matches(line, day):
            for hour in line.hours:
                for minute in line.minutes:
                    wall = datetime.combine(day, time(hour, minute))
                    while not exists(wall, zone_name):
                        wall += timedelta(minutes=1)
                    instant = resolve(wall, zone_name)
                    if since <= instant <= until:
                        found.add(instant)
        day += timedelta(days=1)
    return sorted(found)


def engine_until(timing: Timing, accepted: datetime, until: datetime) -> Iterator[datetime]:
    recurrence = build_recurrence(timing, accepted)
    moment = recurrence.first_fire(accepted)
    while moment is not None and moment <= until:
        yield moment
        moment = recurrence.next_after(moment)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_cron_matches_a_brute_force_minute_walk(data: st.DataObject) -> None:
    zone_name = data.draw(zones, label="zone")
    accepted = data.draw(accepted_times(zone_name), label="accepted").replace(microsecond=0)
    line = data.draw(cron_lines(), label="line")
    window_end = accepted + timedelta(days=2)
    timing = Timing(zone_name, cron=line.text)
    actual = list(engine_until(timing, accepted, window_end))
    assert actual == cron_oracle(line, zone_name, accepted, window_end), line.text
    assert_no_drift(timing, accepted, actual[:20])


# -- Quartz-style and hashed cron lines against croniter ---------------------------------------
# croniter reads seconds first (``second_at_beginning``), years, ``L``, ``W``, ``#`` and ``H``
# (by the same crc32 of the id), so it is an independent oracle for the fields; in UTC there is
# no DST rule to tell them apart.

_CRON_DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


@st.composite
def quartz_lines(draw: st.DrawFn) -> str:
    def plain(low: int, high: int) -> str:
        # croniter reads an equal range (5-5) as the whole field, a quirk left out here.
        start = draw(st.integers(low, high - 1))
        return draw(
            st.sampled_from(
                [
                    "*",
                    str(start),
                    f"{start}-{draw(st.integers(start + 1, high))}",
                    f"*/{draw(st.integers(1, 20))}",
                    f"{start}/{draw(st.integers(1, 20))}",
                    "H",
                    f"H/{draw(st.integers(2, 20))}",
                    f"H({low}-{high})",
                ]
            )
        )

    second = plain(0, 59)
    minute = plain(0, 59)
    hour = plain(0, 23)
    weekday = draw(st.sampled_from(_CRON_DAY_NAMES))
    month_day, week_day = draw(
        st.sampled_from(
            [
                ("?", "*"),
                ("L", "?"),
                (f"{draw(st.integers(1, 28))}W", "?"),
                (f"{draw(st.integers(1, 28))}", "?"),
                ("H(1-28)", "?"),
                ("?", weekday),
                ("?", f"{weekday}#{draw(st.integers(1, 4))}"),
                ("?", f"MON-{draw(st.sampled_from((*_CRON_DAY_NAMES[2:], 'SUN')))}"),
            ]
        )
    )
    month = draw(st.sampled_from(["*", "JAN-JUN", "2", "*/3", "H"]))
    fields = [second, minute, hour, month_day, month, week_day]
    if draw(st.booleans()):
        fields.append(draw(st.sampled_from(["*", "2027", "2026-2028", "2027,2030"])))
    return " ".join(fields)


@PROPERTY_SETTINGS
@given(
    line=quartz_lines(),
    schedule_id=st.text("abcdef0123456789-", min_size=1, max_size=36),
    accepted=st.datetimes(datetime(2026, 1, 1), datetime(2027, 12, 31)),
)
def test_quartz_and_hashed_cron_match_croniter(
    line: str, schedule_id: str, accepted: datetime
) -> None:
    accepted = accepted.replace(microsecond=0, tzinfo=UTC)
    timing = Timing("UTC", cron=line)
    ours = upcoming(timing, accepted, 8, schedule_id)
    oracle = croniter(
        line,
        accepted - timedelta(seconds=1),
        hash_id=schedule_id.encode(),
        second_at_beginning=True,
    )
    expected = []
    # croniter raises when a year field has run out.
    with contextlib.suppress(CroniterBadDateError):
        while len(expected) < 8 and (moment := oracle.get_next(datetime)).year < 2036:
            expected.append(moment)
    assert [moment.replace(tzinfo=None) for moment in ours] == [
        moment.replace(tzinfo=None) for moment in expected
    ][: len(ours)], (line, schedule_id)
    assert len(ours) == len(expected) or len(ours) == 8


# -- RRULE sets: EXRULE and BYEASTER against dateutil's rruleset ---------------------------


@st.composite
def rule_sets(draw: st.DrawFn) -> tuple[str, int]:
    """An RRULE with an EXRULE or a BYEASTER part, bounded by COUNT so the oracle ends, and
    how many of its times to compare."""
    hour = draw(st.integers(0, 23))
    at = f"BYHOUR={hour};BYMINUTE={draw(st.sampled_from([0, 30]))};BYSECOND=0"
    if draw(st.booleans()):
        freq = draw(st.sampled_from(["DAILY", "WEEKLY"]))
        interval = draw(st.integers(1, 3))
        count = draw(st.integers(5, 60))
        days = draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=6, unique=True))
        byday = ";BYDAY=" + ",".join(WEEKDAYS) if freq == "WEEKLY" else ""
        excluded = ",".join(days)
        text = (
            f"RRULE:FREQ={freq};INTERVAL={interval};COUNT={count}{byday};{at}\n"
            f"EXRULE:FREQ=WEEKLY;BYDAY={excluded};{at}"
        )
        return text, 8
    offset = draw(st.integers(-63, 60))
    count = draw(st.integers(1, 6))
    return f"RRULE:FREQ=YEARLY;BYEASTER={offset};COUNT={count};{at}", count


@PROPERTY_SETTINGS
@given(data=st.data())
def test_exrule_and_byeaster_match_dateutils_rruleset(data: st.DataObject) -> None:
    zone_name = data.draw(st.sampled_from(["UTC", "America/New_York", "Europe/Berlin"]))
    text, wanted = data.draw(rule_sets(), label="rule set")
    start_wall = datetime(data.draw(st.integers(2026, 2030)), 1, 1) + timedelta(
        days=data.draw(st.integers(0, 364))
    )
    zone = zoneinfo.ZoneInfo(zone_name)
    oracle = rrulestr(text, dtstart=start_wall.replace(tzinfo=zone), forceset=True)
    expected = [moment.astimezone(UTC) for moment in islice(oracle, wanted)]
    timing = Timing(zone_name, rrule=text, start=start_wall)
    accepted = resolve(start_wall, zone_name) - timedelta(days=1)
    assert upcoming(timing, accepted, wanted) == expected
