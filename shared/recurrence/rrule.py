"""``rrule``: RFC 5545 rules, read strictly, with the arithmetic that skips whole cycles."""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from itertools import islice

from dateutil.rrule import rrule

from shared.recurrence.base import (
    _CALENDAR_CYCLE_YEARS,
    _MS,
    _WEEK,
    SEARCH_HORIZON,
    Recurrence,
    TooMuchWork,
    _horizon,
    _jump_near,
    _spend,
    _spending,
    _wall,
)
from shared.recurrence.dateutil_rules import single_rule
from shared.timeutil import UTC, load_zone, resolve_local, utc_ms

_RULE_KEYS = frozenset(
    {
        "FREQ",
        "INTERVAL",
        "BYSECOND",
        "BYMINUTE",
        "BYHOUR",
        "BYDAY",
        "BYMONTHDAY",
        "BYYEARDAY",
        "BYWEEKNO",
        "BYMONTH",
        "BYSETPOS",
        "WKST",
        "BYEASTER",
    }
)
# Ranges RFC 5545 gives that dateutil does not check (it checks hours, minutes, seconds, setpos).
_SIGNED_RANGES = {"BYMONTHDAY": 31, "BYYEARDAY": 366, "BYWEEKNO": 53}
# dateutil's extension: days from Easter Sunday (0 is Easter itself). Easter falls from March 22
# to April 25, so these stay in Easter's year whatever its date; a day further away is in the
# year before or after for some Easter dates, which dateutil gets wrong (a day of the same year)
# or cannot compute at all (an IndexError, in those years only).
_EASTER_OFFSETS = range(-80, 251)
# RRULE and EXRULE lines in one field: each is expanded for every occurrence.
MAX_RULE_LINES = 10
# One INTERVAL of these frequencies is a fixed length of wall time; a search may then restart
# the rule a whole number of intervals later instead of walking it from its DTSTART.
_FIXED_PERIODS = {
    "SECONDLY": timedelta(seconds=1),
    "MINUTELY": timedelta(minutes=1),
    "HOURLY": timedelta(hours=1),
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(days=7),
}
# The longest interval of each frequency, in days, for how far a search looks.
_NOMINAL_DAYS = {"YEARLY": 366, "MONTHLY": 31, "WEEKLY": 7}
# Searches stay within what a datetime holds.
_LONGEST_SPAN_DAYS = 3_000_000
_DATE = re.compile(r"^\d{8}$")
_DATE_TIME = re.compile(r"^(\d{8}T\d{6})(Z?)$")
_BYDAY = re.compile(r"^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")


@dataclass(frozen=True)
class RulePart:
    """One RRULE or EXRULE: ``body`` without COUNT and UNTIL (as dateutil reads it), those two,
    its own DTSTART (a wall time) if a ``DTSTART`` line gave one, and how far a search for its
    next occurrence looks (``SEARCH_HORIZON``, or nine of its intervals if longer)."""

    body: str
    freq: str
    period: timedelta | None
    count: int | None = None
    until: datetime | None = None
    cycle: timedelta | None = None
    dtstart: datetime | None = None
    span: timedelta = SEARCH_HORIZON


@dataclass(frozen=True)
class RuleText:
    """An ``rrule`` field: RRULE lines, extra RDATE instants, EXDATE instants and whole days."""

    rules: tuple[RulePart, ...]
    rdates: tuple[datetime, ...] = ()
    exdates: frozenset[datetime] = frozenset()
    exdays: frozenset[date] = frozenset()
    exrules: tuple[RulePart, ...] = ()


def parse_rrule(text: str, zone: tzinfo) -> RuleText:
    """Read an ``rrule`` field: one RFC 5545 rule (``FREQ=…``, with or without ``RRULE:``), or
    content lines ``RRULE:``, ``EXRULE:``, ``RDATE:``, ``EXDATE:`` and ``DTSTART:``;
    ``ValueError`` saying what is wrong.

    Times without ``Z`` or ``TZID`` are local wall times in ``zone``. ``UNTIL`` is inclusive; a
    date alone (``UNTIL=20261231``, ``EXDATE;VALUE=DATE:20261225``) means that whole local day.
    The schedule's ``start`` is the DTSTART of the rules; a ``DTSTART`` line gives the rules
    after it (up to the next one) their own, so the parts of a set can start at different times.
    """
    unfolded = re.sub(r"\r?\n[ \t]", "", text)
    rules: list[RulePart] = []
    exrules: list[RulePart] = []
    dtstart: datetime | None = None
    rdates: list[datetime] = []
    exdates: set[datetime] = set()
    exdays: set[date] = set()
    for line in (line.strip() for line in unfolded.splitlines()):
        if not line:
            continue
        head, colon, value = line.partition(":")
        if not colon:
            head, value = "RRULE", line
        name, *params = head.split(";")
        name = name.strip().upper()
        if name in ("RRULE", "EXRULE"):
            if params:
                raise ValueError(f"{name} takes no parameters")
            (rules if name == "RRULE" else exrules).append(_rule_part(value, zone, dtstart))
        elif name in ("RDATE", "EXDATE"):
            instants, days = _date_list(name, params, value, zone)
            if name == "RDATE":
                if days:
                    raise ValueError("RDATE needs date-times (e.g. RDATE:20261224T090000)")
                rdates.extend(instants)
            else:
                exdates.update(instants)
                exdays.update(days)
        elif name == "DTSTART":
            instants, days = _date_list(name, params, value, zone)
            if len(instants) + len(days) != 1:
                raise ValueError("DTSTART gives one date-time (e.g. DTSTART:20260105T090000)")
            dtstart = _wall(instants[0], zone) if instants else datetime.combine(days[0], time())
        else:
            raise ValueError(
                f"unexpected line {line!r}: use RRULE, EXRULE, RDATE, EXDATE or DTSTART lines"
            )
    if not rules and not rdates:
        raise ValueError("the rule needs FREQ=… (an RRULE) or RDATE dates")
    if len(rules) + len(exrules) > MAX_RULE_LINES:
        raise ValueError(
            f"{len(rules) + len(exrules)} RRULE and EXRULE lines; at most {MAX_RULE_LINES}"
        )
    return RuleText(
        tuple(rules),
        tuple(sorted(set(rdates))),
        frozenset(exdates),
        frozenset(exdays),
        tuple(exrules),
    )


def _rule_part(value: str, zone: tzinfo, dtstart: datetime | None = None) -> RulePart:
    fields: dict[str, str] = {}
    for part in (part.strip() for part in value.split(";")):
        if not part:
            continue
        key, equals, item = part.partition("=")
        key, item = key.strip().upper(), item.strip().upper()
        if not equals or not item:
            raise ValueError(f"{part!r} is not NAME=VALUE")
        if key in fields:
            raise ValueError(f"{key} is given twice")
        if key not in _RULE_KEYS | {"COUNT", "UNTIL"}:
            known = ", ".join([*sorted(_RULE_KEYS), "COUNT", "UNTIL"])
            raise ValueError(f"unknown rule part {key}; RFC 5545 has {known}")
        fields[key] = item
    freq = fields.get("FREQ")
    if freq is None:
        raise ValueError("the rule needs FREQ (e.g. FREQ=WEEKLY;BYDAY=MO)")
    if "COUNT" in fields and "UNTIL" in fields:
        raise ValueError("COUNT and UNTIL cannot both be given (RFC 5545)")
    count = _positive(fields.pop("COUNT"), "COUNT") if "COUNT" in fields else None
    until = _until(fields.pop("UNTIL"), zone) if "UNTIL" in fields else None
    interval = _positive(fields.get("INTERVAL", "1"), "INTERVAL")
    for key, bound in _SIGNED_RANGES.items():
        for item in _items(fields, key):
            number = _integer(item, key)
            if number == 0 or abs(number) > bound:
                raise ValueError(f"{key} values are from 1 to {bound} or -{bound} to -1")
    for item in _items(fields, "BYEASTER"):
        if _integer(item, "BYEASTER") not in _EASTER_OFFSETS:
            first, last = _EASTER_OFFSETS[0], _EASTER_OFFSETS[-1]
            raise ValueError(
                f"BYEASTER {item}: days from Easter Sunday are {first} to {last}, which stay in "
                "its year whatever its date (a day further away is in another year for some "
                "Easter dates)"
            )
    for item in _items(fields, "BYMONTH"):
        if not 1 <= _integer(item, "BYMONTH") <= 12:
            raise ValueError("BYMONTH values are from 1 to 12")
    for item in _items(fields, "BYDAY"):
        match = _BYDAY.match(item)
        if match is None:
            raise ValueError(f"BYDAY {item!r}: a weekday MO…SU, optionally numbered like 1MO, -1FR")
        if match.group(1) is not None:
            nth = int(match.group(1))
            if freq not in ("MONTHLY", "YEARLY"):
                raise ValueError("a numbered BYDAY (like -1FR) needs FREQ=MONTHLY or YEARLY")
            if nth == 0 or abs(nth) > (5 if freq == "MONTHLY" else 53):
                raise ValueError(f"BYDAY {item!r}: no such weekday in the {freq.lower()[:-2]}")
    body = ";".join(f"{key}={item}" for key, item in fields.items())
    try:
        single_rule(body, datetime(2000, 1, 1))
    except TooMuchWork:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"{exc}") from None
    period = _FIXED_PERIODS.get(freq)
    every = period * interval if period else None
    # A rule may skip some of its intervals (Feb 29 in a yearly rule) but not nine in a row.
    days = min(9 * interval * _NOMINAL_DAYS.get(freq, 1), _LONGEST_SPAN_DAYS)
    span = max(SEARCH_HORIZON, timedelta(days=days))
    return RulePart(body, freq, every, count, until, _cycle(every, fields), dtstart, span)


def _cycle(period: timedelta | None, fields: dict[str, str]) -> timedelta | None:
    """The wall time after which a rule of a fixed period repeats its occurrences exactly (the
    same number in each cycle), or ``None`` if the calendar (months, years) breaks the pattern."""
    calendar_parts = {"BYMONTH", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYEASTER"}
    if period is None or fields.keys() & calendar_parts:
        return None
    # Times of day repeat every day, weekdays every week.
    if "BYDAY" in fields:
        pattern = _WEEK
    elif fields.keys() & {"BYHOUR", "BYMINUTE", "BYSECOND"}:
        pattern = timedelta(days=1)
    else:
        return period
    seconds = math.lcm(int(period.total_seconds()), int(pattern.total_seconds()))
    return timedelta(seconds=seconds)


def _items(fields: dict[str, str], key: str) -> list[str]:
    return fields[key].split(",") if key in fields else []


def _integer(text: str, key: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{key} {text!r} is not a whole number") from None


def _positive(text: str, key: str) -> int:
    number = _integer(text, key)
    if number < 1:
        raise ValueError(f"{key} must be a whole number from 1")
    return number


def _date_time(text: str, zone: tzinfo, where: str) -> datetime:
    """``YYYYMMDDTHHMMSS`` local in ``zone`` or ``…Z`` UTC, as an instant."""
    match = _DATE_TIME.match(text)
    if match is None:
        raise ValueError(f"{where} {text!r}: expected YYYYMMDDTHHMMSS, local or with Z for UTC")
    try:
        moment = datetime.strptime(match.group(1), "%Y%m%dT%H%M%S")
    except ValueError:
        raise ValueError(f"{where} {text!r} is not a real date and time") from None
    return utc_ms(moment.replace(tzinfo=UTC)) if match.group(2) else resolve_local(moment, zone)


def _day(text: str, where: str) -> date:
    try:
        return datetime.strptime(text, "%Y%m%d").date()
    except ValueError:
        raise ValueError(f"{where} {text!r} is not a real date (YYYYMMDD)") from None


def _until(text: str, zone: tzinfo) -> datetime:
    if _DATE.match(text):
        # A date alone: the rule runs through the end of that local day.
        next_day = datetime.combine(_day(text, "UNTIL") + timedelta(days=1), time())
        return resolve_local(next_day, zone) - _MS
    return _date_time(text, zone, "UNTIL")


def _date_list(
    name: str, params: list[str], value: str, zone: tzinfo
) -> tuple[list[datetime], list[date]]:
    value_zone, value_type = zone, "DATE-TIME"
    for param in params:
        key, _, item = param.partition("=")
        key = key.strip().upper()
        if key == "TZID":
            value_zone = load_zone(item.strip().strip('"'))
        elif key == "VALUE" and item.strip().upper() in ("DATE", "DATE-TIME"):
            value_type = item.strip().upper()
        else:
            raise ValueError(f"{name}: unsupported parameter {param!r} (TZID or VALUE=DATE)")
    instants: list[datetime] = []
    days: list[date] = []
    for item in (item.strip().upper() for item in value.split(",")):
        if value_type == "DATE" or _DATE.match(item):
            days.append(_day(item, name))
        elif item.endswith("Z") and value_zone is not zone:
            raise ValueError(f"{name} {item!r}: a UTC time (Z) cannot also have a TZID")
        else:
            instants.append(_date_time(item, value_zone, name))
    return instants, days


def rrule_recurrence(
    text: str | RuleText, zone: tzinfo, start_wall: datetime | None, accepted_at: datetime
) -> RRuleRecurrence:
    """The rule with the schedule's start (``start_wall``, a local wall time) as DTSTART, or
    00:00 local on the day it is accepted."""
    if start_wall is None:
        start_wall = datetime.combine(_wall(accepted_at, zone).date(), time())
    return RRuleRecurrence(text, start_wall, zone)


class RRuleRecurrence(Recurrence):
    """RFC 5545 rules over local wall times (python-dateutil), resolved to instants.

    The schedule's start is DTSTART. An RRULE line is expanded in wall time; RDATE and EXDATE
    are instants; an EXDATE date excludes that whole local day.
    """

    def __init__(self, text: str | RuleText, anchor_wall: datetime, zone: tzinfo) -> None:
        self.spec = parse_rrule(text, zone) if isinstance(text, str) else text
        self.zone = zone
        self.anchor_wall = anchor_wall.replace(microsecond=0)
        self.rules = [
            (part, single_rule(part.body, self._anchor(part))) for part in self.spec.rules
        ]
        self.exrules = [
            (part, single_rule(part.body, self._anchor(part))) for part in self.spec.exrules
        ]
        self._per_cycle: dict[RulePart, int] = {}

    def _anchor(self, part: RulePart) -> datetime:
        """The DTSTART of one rule: its own ``DTSTART`` line, or the schedule's."""
        return part.dtstart if part.dtstart is not None else self.anchor_wall

    def next_after(self, moment: datetime) -> datetime | None:
        rdates = self.spec.rdates
        while True:
            _spend()
            found = [
                instant
                for part, rule in self.rules
                if (instant := self._rule_next(part, rule, moment, _horizon(moment, part.span)))
                is not None
            ]
            index = bisect_right(rdates, moment)
            if index < len(rdates):
                found.append(rdates[index])
            if not found:
                return None
            best = min(found)
            local_day = _wall(best, self.zone).date()
            if local_day in self.spec.exdays:
                # Skip the rest of an excluded day at once.
                next_day = datetime.combine(local_day + timedelta(days=1), time())
                moment = max(best, resolve_local(next_day, self.zone) - _MS)
            elif best in self.spec.exdates or any(
                self._rule_next(part, rule, best - _MS, best) == best for part, rule in self.exrules
            ):
                moment = best
            else:
                return best

    def _rule_next(
        self, part: RulePart, rule: rrule, moment: datetime, limit: datetime
    ) -> datetime | None:
        """The first instant of one RRULE strictly after ``moment``, up to ``limit``.

        Wall times resolve to instants out of order only around an offset jump, so the search
        starts that far before ``moment``'s wall time and, once it has a candidate, goes on that
        far after it, keeping the earliest instant.
        """
        end = limit if part.until is None else min(limit, part.until)
        if moment >= end:
            return None
        wall_from = _wall(moment, self.zone) - _jump_near(self.zone, moment)
        # Two days past the end covers any offset: no later wall time resolves before the end.
        stop = _wall(end, self.zone) + timedelta(days=2)
        # dateutil checks UNTIL only against the occurrences it finds, so a rule that finds none
        # would be expanded up to the year 9999. The calendar repeats every 400 years, so expand
        # it that many years later, near 9999, and move its wall times back. Easter's date does
        # not repeat with the 400-year calendar: a BYEASTER rule is expanded where it is (a rule
        # of it that finds nothing is stopped by the CPU budget).
        shift = (
            0
            if "BYEASTER" in part.body.upper()
            else _CALENDAR_CYCLE_YEARS * max(0, (9998 - stop.year) // _CALENDAR_CYCLE_YEARS)
        )

        def later(wall: datetime) -> datetime:
            return wall.replace(year=wall.year + shift)

        shifted: Iterable[datetime]
        if part.count is None:
            dtstart = self._anchor(part)
            if part.period is not None and wall_from - dtstart > 2 * part.period:
                # Restart the rule a whole number of intervals later: the same occurrences
                # from there on, without walking every one since DTSTART.
                dtstart += ((wall_from - dtstart) // part.period - 1) * part.period
            shifted = rule.replace(dtstart=later(dtstart), until=later(stop)).xafter(
                later(wall_from)
            )
        else:
            # COUNT counts from DTSTART: skip whole cycles of the rule, then walk.
            dtstart, remaining = self._skip_cycles(part, rule, wall_from)
            series = rule.replace(dtstart=later(dtstart), until=later(stop))
            shifted = (w for w in _spending(islice(series, remaining)) if w > later(wall_from))
        best: datetime | None = None
        best_stop: datetime | None = None
        try:
            for shifted_wall in shifted:
                _spend()
                wall = shifted_wall.replace(year=shifted_wall.year - shift)
                if best_stop is not None and wall > best_stop:
                    break
                instant = resolve_local(wall, self.zone)
                if moment < instant <= end and (best is None or instant < best):
                    best = instant
                    best_stop = wall + _jump_near(self.zone, instant)
                elif instant > end and best_stop is None:
                    best_stop = wall + _jump_near(self.zone, instant)
        except TooMuchWork:
            raise  # a ValueError too, but says nothing of the rule
        except ValueError:
            # dateutil finds some combinations empty only while iterating.
            return best
        return best

    def _skip_cycles(
        self, part: RulePart, rule: rrule, wall_from: datetime
    ) -> tuple[datetime, int]:
        """A later DTSTART for a COUNT rule and the count left from there: whole cycles of the
        rule before ``wall_from`` are skipped arithmetically (the count they use is counted
        once), so a far-past start costs no more than a recent one."""
        count = part.count or 0
        cycle = part.cycle
        anchor = self._anchor(part)
        if cycle is None or wall_from - anchor <= 2 * cycle:
            return anchor, count
        per_cycle = self._per_cycle.get(part)
        if per_cycle is None:
            end = anchor + cycle - timedelta(seconds=1)
            per_cycle = 0
            for _ in rule.replace(dtstart=anchor, until=end):
                _spend()
                per_cycle += 1
            self._per_cycle[part] = per_cycle
        cycles = (wall_from - anchor) // cycle - 1
        return anchor + cycles * cycle, max(0, count - cycles * per_cycle)
