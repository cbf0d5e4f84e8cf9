"""Cron fields as wall-time sets: five-field Vixie lines, six and seven fields (seconds first, a
year last: Quartz and Spring order), Quartz/EventBridge day syntax and Jenkins-style hashed ``H``.

No library reads all of these (cronsim has no ``W``, year or ``L`` in ranges; croniter is the
tests' independent oracle), so the fields are read here, term by term:

- every field: ``*``, values, names (``JAN``, ``MON``), ranges, lists, steps (``*/15``, ``5/10``,
  ``8-18/2``); ``H``, ``H(0-7)``, ``H/15``, ``H(0-29)/10`` pick a value from the schedule's id;
- day of month: ``?``, ``L`` (last day), ``L-3``, ``LW`` (last weekday), ``15W`` (the weekday
  nearest the 15th, within the month), ``L`` as a range end (``1-L/8``, ``15-L``);
- day of week: ``?``, ``FRIL`` / ``5L`` (last Friday), ``MON#2`` and ranges with ``#``
  (``MON-FRI#1``: the first Monday, the first Tuesday …);
- year (seven fields): 1970 to 2199.

When both day fields are restricted a day matching either fires; when one is ``*`` or ``?``
both must match (Vixie cron's rule, kept for every line length).
"""

from __future__ import annotations

import binascii
import calendar
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import Enum
from functools import lru_cache

MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DAY_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
FIRST_YEAR, LAST_YEAR = 1970, 2199
_HASHED = re.compile(r"^H(?:\((\d+)-(\d+)\))?(?:/(\d+))?$")
_NEAREST_WEEKDAY = re.compile(r"^(\d+)W$")
_LAST_MINUS = re.compile(r"^L(?:-(\d+))?$")


class Weekdays(Enum):
    """How numbers in the day-of-week field are read."""

    UNIX = "0-7, 0 and 7 are Sunday"
    QUARTZ = "1-7, 1 is Sunday"
    NAMES = "names only"


@dataclass(frozen=True)
class _Spec:
    name: str
    low: int
    high: int
    # croniter's index of the field, so that ``H`` picks the values croniter picks.
    hash_index: int
    hash_high: int


_SECOND = _Spec("second", 0, 59, 5, 59)
_MINUTE = _Spec("minute", 0, 59, 0, 59)
_HOUR = _Spec("hour", 0, 23, 1, 23)
# Bare ``H`` in the day of month stays within 1-28, so that it fires every month (Jenkins).
_DAY = _Spec("day-of-month", 1, 31, 2, 28)
_MONTH = _Spec("month", 1, 12, 3, 12)
_WEEKDAY = _Spec("day-of-week", 0, 6, 4, 6)
_YEAR = _Spec("year", FIRST_YEAR, LAST_YEAR, 6, LAST_YEAR)

DaySet = Callable[[int, int], set[int]]


def _hash(spec: _Spec, seed: str | None, low: int, high: int) -> int:
    if seed is None:
        raise ValueError("H picks its values from the schedule's id: give the preview an id")
    crc = binascii.crc32(seed.encode()) & 0xFFFFFFFF
    return ((crc >> spec.hash_index) % (high - low + 1)) + low


def _unhash(term: str, spec: _Spec, seed: str | None) -> str:
    """``H`` forms → plain terms, as croniter expands them."""
    match = _HASHED.match(term)
    if match is None:
        return term
    if spec is _YEAR:
        raise ValueError("H is not allowed in the year field")
    low, high = spec.low, spec.hash_high
    if match.group(1) is not None:
        low, high = int(match.group(1)), int(match.group(2))
        if not spec.low <= low < high <= spec.high:
            raise ValueError(f"{term}: a range within {spec.low}-{spec.high}, low before high")
    step = match.group(3)
    if step is None:
        return str(_hash(spec, seed, low, high))
    if int(step) == 0:
        raise ValueError(f"{term}: a step of at least 1")
    if match.group(1) is None:
        high = spec.high
    offset = _hash(spec, seed, low, min(low + int(step) - 1, high))
    return str(offset) if offset == high else f"{offset}-{high}/{step}"


def _number(text: str, spec: _Spec, weekdays: Weekdays = Weekdays.UNIX) -> int:
    if spec is _MONTH and text in MONTH_NAMES:
        return MONTH_NAMES.index(text) + 1
    if spec is _WEEKDAY and text in DAY_NAMES:
        return DAY_NAMES.index(text)
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a {spec.name} value")
    value = int(text)
    high = spec.high
    if spec is _WEEKDAY:
        if weekdays is Weekdays.NAMES:
            raise ValueError(
                f"day-of-week {text!r}: in a six- or seven-field line numbers mean different "
                "days to Spring (0 or 7 is Sunday) and Quartz (1 is Sunday); write names (MON)"
            )
        if weekdays is Weekdays.QUARTZ:
            if not 1 <= value <= 7:
                raise ValueError(f"day-of-week {value}: from 1 (Sunday) to 7 (Saturday)")
            return value - 1
        high = 7
    if not spec.low <= value <= high:
        raise ValueError(f"{spec.name} {value} is out of range {spec.low}-{high}")
    return value % 7 if spec is _WEEKDAY else value


def _split_step(term: str) -> tuple[str, int | None]:
    body, slash, step = term.partition("/")
    if not slash:
        return body, None
    if not step.isdigit() or int(step) == 0:
        raise ValueError(f"{term!r}: a step is a whole number from 1")
    return body, int(step)


def _values(term: str, spec: _Spec, weekdays: Weekdays = Weekdays.UNIX) -> list[int]:
    """One term of a plain field: ``*``, ``5``, ``1-5``, ``*/15``, ``5/10``, ``1-30/7``."""
    body, step = _split_step(term)
    if body == "*":
        low, high = spec.low, spec.high
    elif "-" in body:
        first, _, last = body.partition("-")
        low, high = _number(first, spec, weekdays), _number(last, spec, weekdays)
        if spec is _WEEKDAY and high < low:
            high += 7  # a week wraps round: FRI-MON, MON-SUN
        if high < low:
            raise ValueError(f"{term!r}: a range runs from low to high")
    else:
        low = _number(body, spec, weekdays)
        high = spec.high if step is not None else low
    values = list(range(low, high + 1, step or 1))
    return [value % 7 for value in values] if spec is _WEEKDAY else values


def _plain(text: str, spec: _Spec, seed: str | None) -> tuple[int, ...]:
    values: set[int] = set()
    for term in text.split(","):
        values.update(_values(_unhash(term, spec, seed), spec))
    return tuple(sorted(values))


def _last_weekday(year: int, month: int) -> int:
    last = calendar.monthrange(year, month)[1]
    weekday = date(year, month, last).weekday()  # Monday is 0
    return last - max(0, weekday - 4)


def _nearest_weekday(year: int, month: int, day: int) -> int | None:
    """Quartz's ``W``: the weekday nearest ``day``, never leaving the month."""
    last = calendar.monthrange(year, month)[1]
    if day > last:
        return None
    weekday = date(year, month, day).weekday()
    if weekday == 5:  # Saturday: the Friday before, or the Monday after the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: the Monday after, or the Friday before the last day
        return day + 1 if day < last else day - 2
    return day


def _month_day_term(term: str, seed: str | None) -> DaySet:
    term = _unhash(term, _DAY, seed)
    if term == "LW":
        return lambda year, month: {_last_weekday(year, month)}
    if (match := _NEAREST_WEEKDAY.match(term)) is not None:
        day = _number(match.group(1), _DAY)
        return lambda year, month: {d} if (d := _nearest_weekday(year, month, day)) else set()
    body, step = _split_step(term)
    first, dash, last = body.partition("-") if not body.startswith("L") else (body, "", "")
    if (match := _LAST_MINUS.match(body)) is not None and step is None:
        back = int(match.group(1) or 0)
        if back > 30:
            raise ValueError(f"{term!r}: L-n counts back at most 30 days")

        def before_last(year: int, month: int) -> set[int]:
            day = calendar.monthrange(year, month)[1] - back
            return {day} if day >= 1 else set()

        return before_last
    if dash and last == "L":
        low = _number(first, _DAY)
        return lambda year, month: set(
            range(low, calendar.monthrange(year, month)[1] + 1, step or 1)
        )
    if body.startswith("L"):
        raise ValueError(f"{term!r}: L, L-n, LW, or L ending a range (1-L/8)")
    days = frozenset(_values(term, _DAY))
    return lambda year, month: {d for d in days if d <= calendar.monthrange(year, month)[1]}


def _week_day_term(term: str, seed: str | None, weekdays: Weekdays) -> DaySet:
    term = _unhash(term, _WEEKDAY, seed)
    if "#" in term:
        days_text, _, nth_text = term.partition("#")
        if not nth_text.isdigit() or not 1 <= int(nth_text) <= 5:
            raise ValueError(f"{term!r}: # is followed by 1 to 5 (MON#2: the second Monday)")
        nth = int(nth_text)
        wanted = frozenset(_values(days_text, _WEEKDAY, weekdays))

        def nth_weekdays(year: int, month: int) -> set[int]:
            first = date(year, month, 1).isoweekday() % 7  # Sunday is 0
            last = calendar.monthrange(year, month)[1]
            found = set()
            for weekday in wanted:
                day = 1 + (weekday - first) % 7 + 7 * (nth - 1)
                if day <= last:
                    found.add(day)
            return found

        return nth_weekdays
    if term.endswith("L"):
        if term == "L":
            raise ValueError("L alone in day-of-week: write SAT, or FRIL / 5L for the last Friday")
        weekday = _number(term[:-1], _WEEKDAY, weekdays)

        def last_weekday(year: int, month: int) -> set[int]:
            last = calendar.monthrange(year, month)[1]
            return {last - (date(year, month, last).isoweekday() % 7 - weekday) % 7}

        return last_weekday
    wanted = frozenset(_values(term, _WEEKDAY, weekdays))

    def plain_weekdays(year: int, month: int) -> set[int]:
        first = date(year, month, 1).isoweekday() % 7
        last = calendar.monthrange(year, month)[1]
        return {day for day in range(1, last + 1) if (first + day - 1) % 7 in wanted}

    return plain_weekdays


def _union(terms: list[DaySet]) -> DaySet:
    return lambda year, month: set().union(*(term(year, month) for term in terms))


@dataclass(frozen=True)
class CronFields:
    """A parsed cron line: the wall times it matches, to the second."""

    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: frozenset[int]
    years: frozenset[int] | None
    month_days: DaySet | None  # None: ``*`` or ``?``
    week_days: DaySet | None
    fixed_time: bool
    _cache: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict, compare=False)

    def days(self, year: int, month: int) -> tuple[int, ...]:
        """The matching days of a month, in order."""
        key = (year, month)
        if key not in self._cache:
            by_month = self.month_days(year, month) if self.month_days else None
            by_week = self.week_days(year, month) if self.week_days else None
            if by_month is None and by_week is None:
                found = set(range(1, calendar.monthrange(year, month)[1] + 1))
            elif by_month is None or by_week is None:
                found = by_month if by_week is None else by_week  # type: ignore[assignment]
            else:
                found = by_month | by_week
            self._cache[key] = tuple(sorted(found))
        return self._cache[key]

    def next_wall(self, moment: datetime, spend: Callable[[], None]) -> datetime | None:
        """The first matching wall time at or after ``moment`` (to the second), before 10000."""
        if moment.microsecond:
            moment = moment.replace(microsecond=0) + timedelta(seconds=1)
        year, month, day = moment.year, moment.month, moment.day
        hour, minute, second = moment.hour, moment.minute, moment.second
        while year <= 9999:
            spend()
            if self.years is not None and year not in self.years:
                later = [y for y in self.years if y > year]
                if not later:
                    return None
                year, month, day, hour, minute, second = min(later), 1, 1, 0, 0, 0
                continue
            if month not in self.months:
                year, month = (year + 1, 1) if month == 12 else (year, month + 1)
                day, hour, minute, second = 1, 0, 0, 0
                continue
            found_day = _first_at_least(self.days(year, month), day)
            if found_day is None:
                year, month = (year + 1, 1) if month == 12 else (year, month + 1)
                day, hour, minute, second = 1, 0, 0, 0
                continue
            if found_day > day:
                day, hour, minute, second = found_day, 0, 0, 0
            found_hour = _first_at_least(self.hours, hour)
            if found_hour is None:
                day, hour, minute, second = day + 1, 0, 0, 0
                continue
            if found_hour > hour:
                hour, minute, second = found_hour, 0, 0
            found_minute = _first_at_least(self.minutes, minute)
            if found_minute is None:
                hour, minute, second = hour + 1, 0, 0
                if hour == 24:
                    day, hour = day + 1, 0
                continue
            if found_minute > minute:
                minute, second = found_minute, 0
            found_second = _first_at_least(self.seconds, second)
            if found_second is None:
                minute, second = minute + 1, 0
                if minute == 60:
                    hour, minute = hour + 1, 0
                    if hour == 24:
                        day, hour = day + 1, 0
                continue
            return datetime(year, month, day, hour, minute, found_second)
        return None

    def walls(self, start: datetime, spend: Callable[[], None]) -> Iterator[datetime]:
        """Matching wall times from ``start`` on, in order."""
        moment: datetime | None = start
        while moment is not None:
            moment = self.next_wall(moment, spend)
            if moment is None:
                return
            yield moment
            moment = moment + timedelta(seconds=1) if moment.year < 9999 else None


def _first_at_least(values: tuple[int, ...], least: int) -> int | None:
    for value in values:
        if value >= least:
            return value
    return None


@lru_cache(maxsize=1024)
def parse_fields(
    fields: tuple[str, ...], seed: str | None, weekdays: Weekdays = Weekdays.UNIX
) -> CronFields:
    """Six or seven upper-case fields ``sec min hour dom month dow [year]``; ``ValueError``
    naming the field that is wrong."""
    second, minute, hour, month_day, month, week_day = fields[:6]
    year = fields[6] if len(fields) == 7 else "*"
    seconds = _plain(second, _SECOND, seed)
    minutes = _plain(minute, _MINUTE, seed)
    hours = _plain(hour, _HOUR, seed)
    months = frozenset(_plain(month, _MONTH, seed))
    years = None if year in ("*", "?") else frozenset(_plain(year, _YEAR, seed))
    month_days = (
        None
        if month_day in ("*", "?")
        else _union([_month_day_term(term, seed) for term in month_day.split(",")])
    )
    week_days = (
        None
        if week_day in ("*", "?")
        else _union([_week_day_term(term, seed, weekdays) for term in week_day.split(",")])
    )
    star_day = month_day.startswith(("*", "?")) or week_day.startswith(("*", "?"))
    if not star_day or month_days is None or week_days is None:
        combined_month, combined_week = month_days, week_days
    else:
        # Vixie: one of the two starts with * (``*/2``): both must match.
        combined_month = _intersect(month_days, week_days)
        combined_week = None
    fixed = not any(text.startswith("*") for text in (second, minute, hour))
    return CronFields(seconds, minutes, hours, months, years, combined_month, combined_week, fixed)


def _intersect(first: DaySet, second: DaySet) -> DaySet:
    return lambda year, month: first(year, month) & second(year, month)
