"""When a schedule fires: each notation follows its own standard (docs/time-semantics.md).

- ``at`` and ``@at``: one instant. Accepted after it has passed, it fires once, right away.
- ``interval`` in seconds, minutes or hours, and ``@every``: exact elapsed time from the anchor;
  DST does not move it.
- ``interval`` in days, weeks, months or years: the anchor's local wall time, counted from the
  anchor (occurrence k is anchor + k units: Jan 31 monthly gives Feb 28, Mar 31, Apr 30, no drift).
- ``rrule`` (RFC 5545) and calendar intervals resolve local wall times with ``fold=0``: a time in a
  spring-forward gap is read with the offset before the gap, a repeated time is the earlier instant.
- ``cron``: cronsim matches the fields against local wall times; Debian cron's rules turn them into
  instants: a fixed-time job in a skipped hour runs once right after the jump, a repeated hour
  fires once, wildcard jobs follow real time.

Every engine answers ``next_after(t)``: the first occurrence strictly after the instant ``t``.
Occurrence n+1 is always computed from occurrence n's scheduled time, never from when it ran.
Every search stops at ``SEARCH_HORIZON``, so a rule that never fires is refused, not looped on.
"""

from __future__ import annotations

import math
import re
import time as cpu_clock
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from itertools import islice

import pendulum
from dateutil.rrule import rrule, rrulestr

from shared.model import Every, Timing, Unit
from shared.recurrence.cronfields import CronFields, Weekdays, parse_fields
from shared.timeutil import UTC, from_epoch_ms, load_zone, resolve_local, utc_ms

CRON_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_EXACT_SECONDS = {Unit.SECOND: 1, Unit.MINUTE: 60, Unit.HOUR: 3600}
_CALENDAR_UNITS = {Unit.DAY: "days", Unit.WEEK: "weeks", Unit.MONTH: "months", Unit.YEAR: "years"}
_DURATION_PART = re.compile(r"(\d+)(ms|s|m|h|d|w)")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
# Far enough to find the next Feb 29 or a yearly rule that skips years, short enough that a rule
# which never fires is refused quickly instead of being searched for ever.
SEARCH_HORIZON = timedelta(days=366 * 9)
_MS = timedelta(milliseconds=1)
_LAST_INSTANT = datetime(9999, 12, 1, tzinfo=UTC)
_FIRST_DAY = datetime(1, 1, 2, tzinfo=UTC)
_LAST_DAY = datetime(9999, 12, 30, tzinfo=UTC)
# Where the offset of a zone is sampled around an instant to find a change that may reorder wall
# times there: fine steps for DST, coarse ones for a zone crossing the date line.
_JUMP_SAMPLES = tuple(timedelta(minutes=30 * k) for k in range(1, 7)) + tuple(
    timedelta(hours=3 * k) for k in range(2, 10)
)
# The Gregorian calendar, weekdays included, repeats every 400 years.
_CALENDAR_CYCLE_YEARS = 400
# The CPU time one time computation (a create's checks, a preview, one step of the poller) may
# take; a rule that needs more is refused rather than allowed to starve other requests.
CPU_BUDGET_SECONDS = 0.5
_WEEK = timedelta(days=7)


class TooMuchWork(ValueError):
    """A time computation went over its CPU budget (``cpu_budget``)."""


# (deadline in thread CPU time, the budget's size) of the innermost ``cpu_budget``.
_budget: ContextVar[tuple[float, float] | None] = ContextVar("recurrence_budget", default=None)


@contextmanager
def cpu_budget(seconds: float = CPU_BUDGET_SECONDS) -> Iterator[None]:
    """Bound the CPU time of the time computations run inside: past ``seconds`` they raise
    ``TooMuchWork``. Thread CPU time, so a busy machine does not make a rule fail; an inner
    budget never extends an outer one."""
    deadline = cpu_clock.thread_time() + seconds
    outer = _budget.get()
    if outer is not None and outer[0] < deadline:
        deadline, seconds = outer
    token = _budget.set((deadline, seconds))
    try:
        yield
    finally:
        _budget.reset(token)


def _spending(walls: Iterable[datetime]) -> Iterator[datetime]:
    """``walls``, charging each to the budget (also those a caller filters out)."""
    for wall in walls:
        _spend()
        yield wall


def _spend() -> None:
    """A step of a search: raise ``TooMuchWork`` once the current budget is spent."""
    budget = _budget.get()
    if budget is not None and cpu_clock.thread_time() > budget[0]:
        raise TooMuchWork(
            f"computing its times needs more than {budget[1]:g} s of CPU; simplify the rule "
            "or give it a later start"
        )


def _horizon(moment: datetime, span: timedelta = SEARCH_HORIZON) -> datetime:
    """The latest instant a search that starts at ``moment`` looks at: ``span`` later."""
    return _LAST_INSTANT if moment > _LAST_INSTANT - span else moment + span


def _wall(moment: datetime, zone: tzinfo) -> datetime:
    return moment.astimezone(zone).replace(tzinfo=None)


def _offset(moment: datetime, zone: tzinfo) -> timedelta:
    return moment.astimezone(zone).utcoffset() or timedelta(0)


def _jump_near(zone: tzinfo, moment: datetime) -> timedelta:
    """The size of the largest offset change of ``zone`` that is nearer to ``moment`` than its
    own size, or zero.

    Only near such a change do wall times resolve to instants out of order: 02:30 in a
    spring-forward gap is read with the offset before it, so it lands after 03:00; in a repeated
    hour, 01:00 the second time comes after 01:59 the first time. A search looks this far
    around its window of wall times.
    """
    try:
        here = _offset(moment, zone)
        widest = timedelta(0)
        nearer = timedelta(0)
        for distance in _JUMP_SAMPLES:
            for sample in (moment - distance, moment + distance):
                jump = abs(_offset(sample, zone) - here)
                if jump > nearer and jump > widest:
                    widest = jump
            nearer = distance
    except OverflowError:
        return timedelta(0)
    return widest


class Recurrence(ABC):
    """A source of occurrences for one schedule."""

    @abstractmethod
    def next_after(self, moment: datetime) -> datetime | None:
        """The first occurrence strictly after ``moment`` (aware), or ``None`` if there is none
        within ``SEARCH_HORIZON``."""

    def first_at_or_after(self, moment: datetime) -> datetime | None:
        return self.next_after(utc_ms(moment) - _MS)

    def first_fire(self, accepted_at: datetime) -> datetime | None:
        """The first occurrence of a schedule accepted at ``accepted_at``: the first at or after
        it (earlier ones are not backfilled)."""
        return self.first_at_or_after(accepted_at)

    def upcoming(self, accepted_at: datetime, count: int) -> Iterator[datetime]:
        """The first ``count`` occurrences of a schedule accepted at ``accepted_at``, each one
        computed from the previous one's scheduled time."""
        moment = self.first_fire(accepted_at)
        for _ in range(count):
            _spend()
            if moment is None:
                return
            yield moment
            moment = self.next_after(moment)

    def before(self, moment: datetime, count: int) -> list[datetime]:
        """The last ``count`` occurrences strictly before ``moment`` within ``SEARCH_HORIZON``,
        oldest first. The engines only search forward, so this walks forward over a window
        that doubles until it holds ``count`` of them."""
        window = timedelta(minutes=1)
        while True:
            since = moment - window if moment - _FIRST_DAY > window else _FIRST_DAY
            found: deque[datetime] = deque(maxlen=count)
            occurrence = self.first_at_or_after(since)
            while occurrence is not None and occurrence < moment:
                _spend()
                found.append(occurrence)
                occurrence = self.next_after(occurrence)
            if len(found) == count or window > SEARCH_HORIZON or since == _FIRST_DAY:
                return list(found)
            window *= 2


class OneTime(Recurrence):
    def __init__(self, at: datetime) -> None:
        self.at = utc_ms(at)

    def next_after(self, moment: datetime) -> datetime | None:
        return self.at if self.at > moment else None

    def first_fire(self, accepted_at: datetime) -> datetime | None:
        # Accepted after its time, a one-time schedule still fires once, right away.
        return self.at


class ExactInterval(Recurrence):
    """Every ``step`` of elapsed time from ``anchor``."""

    def __init__(self, anchor: datetime, step: timedelta) -> None:
        if step <= timedelta(0):
            raise ValueError("an interval must be positive")
        self.anchor = utc_ms(anchor)
        self.step = step

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        steps = (moment - self.anchor) // self.step + 1
        try:
            return utc_ms(self.anchor + steps * self.step)
        except OverflowError:  # past year 9999
            return None


class CalendarInterval(Recurrence):
    """Every ``number`` days/weeks/months/years of local wall time, counted from ``anchor_wall``."""

    def __init__(self, anchor_wall: datetime, zone: tzinfo, every: Every) -> None:
        if every.unit.is_exact:
            raise ValueError(f"{every.unit.value} is elapsed time, not a calendar unit")
        self.anchor_wall = pendulum.instance(anchor_wall).naive()
        self.zone = zone
        self.every = every
        self.anchor = resolve_local(anchor_wall, zone)
        # The average length of one step in the Gregorian calendar, to estimate the step count
        # of an instant; the walk in ``next_after`` corrects the estimate either way.
        self._mean_step = {
            Unit.DAY: timedelta(days=1),
            Unit.WEEK: timedelta(days=7),
            Unit.MONTH: timedelta(days=146097 / 4800),
            Unit.YEAR: timedelta(days=146097 / 400),
        }[every.unit] * every.number

    def wall(self, index: int) -> datetime:
        """The local wall time of occurrence ``index``: the anchor plus ``index`` steps."""
        amount = index * self.every.number
        wall = self.anchor_wall.add(**{_CALENDAR_UNITS[self.every.unit]: amount})
        return datetime(*wall.timetuple()[:6], wall.microsecond)

    def occurrence(self, index: int) -> datetime:
        return resolve_local(self.wall(index), self.zone)

    def next_after(self, moment: datetime) -> datetime | None:
        if moment < self.anchor:
            return self.anchor
        # An estimate of the index, then walk to the first occurrence after moment.
        index = max(0, round((moment - self.anchor) / self._mean_step))
        try:
            while index > 0 and self.occurrence(index - 1) > moment:
                _spend()
                index -= 1
            while (found := self.occurrence(index)) <= moment:
                _spend()
                index += 1
        except (OverflowError, ValueError):  # past year 9999
            return None
        return found


class CronRecurrence(Recurrence):
    """A cron line in a zone, by Debian cron's rules.

    The fields match local wall times (``cronfields``); the wall times become instants here:
    - a fixed-time line (none of second, minute, hour starts with ``*``) fires each wall time
      once, at its first instant; a wall time the clocks skip fires at the first minute after
      the jump;
    - a wildcard line follows real time: a skipped wall time never happens, a repeated one
      happens twice.
    """

    def __init__(self, fields: CronFields, zone: tzinfo) -> None:
        self.fields = fields
        self.zone = zone

    def instants(self, wall: datetime) -> list[datetime]:
        """The instants at which a matching wall time fires."""
        if self.fields.fixed_time:
            while not _exists(wall, self.zone):
                wall += timedelta(minutes=1)
            return [resolve_local(wall, self.zone)]
        found = []
        for fold in (0, 1):
            local = wall.replace(tzinfo=self.zone, fold=fold)
            instant = utc_ms(local)
            if _wall(instant, self.zone) == wall and instant not in found:
                found.append(instant)
        return found

    def next_after(self, moment: datetime) -> datetime | None:
        limit = _horizon(moment)
        if self.fields.years is not None:
            # A year field names its years: search up to the last, however far.
            last_year = datetime(max(self.fields.years) + 1, 1, 2, tzinfo=UTC)
            limit = max(limit, min(last_year, _LAST_INSTANT))
        last_wall = _wall(limit, self.zone) + timedelta(days=2)
        best: datetime | None = None
        best_stop: datetime | None = None
        start = _wall(moment, self.zone) - _jump_near(self.zone, moment)
        try:
            for wall in self.fields.walls(start, _spend):
                if wall > last_wall or (best_stop is not None and wall > best_stop):
                    break
                for instant in self.instants(wall):
                    if moment < instant <= limit and (best is None or instant < best):
                        best = instant
                        best_stop = wall + _jump_near(self.zone, instant)
        except OverflowError:  # past year 9999
            pass
        return best


def _exists(wall: datetime, zone: tzinfo) -> bool:
    """Whether a naive local wall time happens in ``zone`` (is not in a spring-forward gap)."""
    return _wall(resolve_local(wall, zone), zone) == wall


# -- RFC 5545 ------------------------------------------------------------------------------

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
# dateutil's extension: days from Easter Sunday (0 is Easter itself).
_EASTER_OFFSET = 365
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
        if abs(_integer(item, "BYEASTER")) > _EASTER_OFFSET:
            raise ValueError(f"BYEASTER values are days from Easter, -{_EASTER_OFFSET} to 365")
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
        _single_rule(body, datetime(2000, 1, 1))
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


def _single_rule(body: str, dtstart: datetime) -> rrule:
    rule = rrulestr(body, dtstart=dtstart)
    if not isinstance(rule, rrule):
        raise ValueError(f"not a single rule: {body!r}")
    return rule


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
            (part, _single_rule(part.body, self._anchor(part))) for part in self.spec.rules
        ]
        self.exrules = [
            (part, _single_rule(part.body, self._anchor(part))) for part in self.spec.exrules
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


class Bounded(Recurrence):
    """Another recurrence limited to ``[start, end]`` and to ``max_occurrences`` occurrences."""

    def __init__(
        self,
        inner: Recurrence,
        start: datetime | None = None,
        end: datetime | None = None,
        max_occurrences: int | None = None,
    ) -> None:
        self.inner = inner
        self.start = start
        self.end = end
        self.max_occurrences = max_occurrences

    def _within(self, found: datetime | None) -> datetime | None:
        if found is None:
            return None
        if (self.start is not None and found < self.start) or (
            self.end is not None and found > self.end
        ):
            return None
        return found

    def next_after(self, moment: datetime) -> datetime | None:
        if self.start is not None and moment < self.start:
            moment = self.start - _MS
        return self._within(self.inner.next_after(moment))

    def first_fire(self, accepted_at: datetime) -> datetime | None:
        if self.start is not None:
            accepted_at = max(accepted_at, self.start)
        return self._within(self.inner.first_fire(accepted_at))

    def upcoming(self, accepted_at: datetime, count: int) -> Iterator[datetime]:
        """As ``Recurrence.upcoming``, and no more than ``max_occurrences``: the schedule
        fires that many times from its acceptance."""
        if self.max_occurrences is not None:
            count = min(count, self.max_occurrences)
        return super().upcoming(accepted_at, count)


def parse_duration(text: str) -> timedelta:
    """``1h30m``, ``90s``, ``2d``, ``500ms`` → a positive duration (seed 004's ``@every``)."""
    compact = text.replace(" ", "").lower()
    parts = _DURATION_PART.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"not a duration: {text!r}; use e.g. 90s, 15m, 1h30m, 2d")
    milliseconds = sum(int(number) * _DURATION_MS[unit] for number, unit in parts)
    if milliseconds <= 0:
        raise ValueError("a duration must be positive")
    if milliseconds > SEARCH_HORIZON // _MS:
        raise ValueError(f"a duration of at most {SEARCH_HORIZON.days} days")
    return timedelta(milliseconds=milliseconds)


def instant_in(moment: datetime, zone: tzinfo) -> datetime:
    """An instant from a naive wall time in ``zone`` or from an aware datetime.

    A time whose instant falls outside what a datetime holds (``9999-12-31T23:59:59`` in a zone
    west of UTC, a common "no end" value) is clamped to the first or last representable day.
    """
    try:
        return resolve_local(moment, zone) if moment.tzinfo is None else utc_ms(moment)
    except OverflowError:
        return _FIRST_DAY if moment.year < 2000 else _LAST_DAY


def wall_in(moment: datetime, zone: tzinfo) -> datetime:
    """The naive local wall time in ``zone`` of a naive wall time or an aware datetime."""
    return moment if moment.tzinfo is None else _wall(moment, zone)


def build_recurrence(
    timing: Timing,
    accepted_at: datetime,
    schedule_id: str | None = None,
    *,
    cron: Recurrence | None = None,
    rule: RuleText | None = None,
) -> Bounded:
    """The recurrence of a timing. ``accepted_at`` anchors forms that have no explicit start:
    an interval or ``@every`` then fires first one interval after it, and an RRULE's DTSTART is
    00:00 local on the day the schedule is accepted. A cron line's ``H`` spreads by
    ``schedule_id``.

    ``cron`` and ``rule`` are the timing's cron line or rule already read (``cron_recurrence``
    at the anchor and with the ``schedule_id`` given here, ``parse_rrule``): not read again."""
    zone = load_zone(timing.timezone)
    start = instant_in(timing.start, zone) if timing.start is not None else None
    end = instant_in(timing.end, zone) if timing.end is not None else None
    accepted_at = utc_ms(accepted_at)
    inner: Recurrence
    if timing.at is not None:
        inner = OneTime(instant_in(timing.at, zone))
    elif timing.interval is not None:
        every = timing.interval
        if every.unit.is_exact:
            step = timedelta(seconds=every.number * _EXACT_SECONDS[every.unit])
            inner = ExactInterval(start if start is not None else accepted_at + step, step)
        elif timing.start is not None:
            inner = CalendarInterval(wall_in(timing.start, zone), zone, every)
        else:
            accepted = CalendarInterval(_wall(accepted_at, zone), zone, every)
            inner = CalendarInterval(accepted.wall(1), zone, every)
    elif timing.cron is not None:
        anchor = start if start is not None else accepted_at
        inner = cron or cron_recurrence(
            timing.cron, zone, anchor, starts_at_anchor=start is not None, schedule_id=schedule_id
        )
    elif timing.rrule is not None:
        if timing.start is not None:
            dtstart = wall_in(timing.start, zone)
        else:
            dtstart = datetime.combine(_wall(accepted_at, zone).date(), time())
        inner = RRuleRecurrence(rule or timing.rrule, dtstart, zone)
    else:
        raise ValueError("a timing needs one of at, interval, cron, rrule")
    return Bounded(inner, start, end, timing.max_occurrences)


def normalize_cron(expression: str) -> str:
    """Whitespace collapsed and a macro (``@daily`` …) replaced by its five fields."""
    text = " ".join(expression.split())
    return CRON_MACROS.get(text.lower(), text)


def cron_recurrence(
    expression: str,
    zone: tzinfo,
    anchor: datetime,
    starts_at_anchor: bool = True,
    schedule_id: str | None = None,
) -> Recurrence:
    """Cron lines of five, six (seconds first) or seven fields (and a year), ``@hourly``-style
    macros, ``@every <duration>``, ``@at <unix time>`` and EventBridge's ``rate(…)``,
    ``cron(…)`` and ``at(…)``. ``H`` picks its values from ``schedule_id``.

    ``@every`` and ``rate`` count from ``anchor``: the first run is the anchor itself when
    ``starts_at_anchor`` (an explicit start), else one step later.
    """
    text = normalize_cron(expression)
    lowered = text.lower()
    if lowered.startswith(("@every ", "rate(")):
        step = (
            parse_duration(text[len("@every ") :])
            if lowered.startswith("@every ")
            else parse_rate(text)
        )
        return ExactInterval(anchor if starts_at_anchor else anchor + step, step)
    if lowered.startswith("@at "):
        seconds = text[len("@at ") :]
        if not seconds.isdigit():
            raise ValueError(f"@at needs a Unix time in whole seconds, got {seconds!r}")
        if int(seconds) >= _epoch_seconds(_LAST_INSTANT):
            raise ValueError(f"@at {seconds} is after the year 9999")
        return OneTime(from_epoch_ms(int(seconds) * 1000))
    if lowered.startswith("at("):
        return OneTime(instant_in(parse_at(text), zone))
    if text.startswith("@"):
        known = ", ".join([*CRON_MACROS, "@every <duration>", "@at <unix time>"])
        raise ValueError(f"unknown macro {text.split()[0]!r}; use one of {known}")
    fields, weekdays = cron_fields(text)
    try:
        parsed = parse_fields(fields, schedule_id, weekdays)
    except ValueError as exc:
        raise ValueError(f"malformed cron line {expression!r}: {exc}") from None
    if not _has_a_day(parsed):
        raise ValueError(f"cron line {expression!r} never fires: no month it names has that day")
    return CronRecurrence(parsed, zone)


def _has_a_day(fields: CronFields) -> bool:
    """Whether some month the line names has a day it matches: leap years and weekdays repeat
    every 28 years within a century, or in the years of a year field."""
    years = sorted(fields.years) if fields.years is not None else range(2000, 2028)
    return any(fields.days(year, month) for year in years for month in fields.months)


_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minute|hour|day)s?\s*\)$", re.IGNORECASE)
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
_AT = re.compile(r"^at\(\s*(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\s*\)$", re.IGNORECASE)
_EVENTBRIDGE_CRON = re.compile(r"^cron\((.*)\)$", re.IGNORECASE)


def parse_rate(text: str) -> timedelta:
    """EventBridge ``rate(5 minutes)``: elapsed time, in minutes, hours or days."""
    match = _RATE.match(text)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{text!r}: EventBridge writes rate(value unit), e.g. rate(5 minutes)")
    seconds = int(match.group(1)) * _RATE_UNITS[match.group(2).lower()]
    if seconds > SEARCH_HORIZON.total_seconds():
        raise ValueError(f"a rate of at most {SEARCH_HORIZON.days} days")
    return timedelta(seconds=seconds)


def parse_at(text: str) -> datetime:
    """EventBridge ``at(2027-01-01T09:00:00)``: a local wall time in the schedule's zone."""
    match = _AT.match(text)
    if match is None:
        raise ValueError(f"{text!r}: EventBridge writes at(yyyy-mm-ddThh:mm:ss)")
    try:
        return datetime.fromisoformat(match.group(1))
    except ValueError:
        raise ValueError(f"{text!r} is not a real date and time") from None


def cron_fields(text: str) -> tuple[tuple[str, ...], Weekdays]:
    """The seven-or-fewer fields of a cron line, seconds first, and how its day-of-week numbers
    read: five fields get ``0`` seconds (Unix numbers), six and seven are Quartz/Spring order
    (names only: the two number days differently), ``cron(…)`` is EventBridge's six fields
    ``min hour dom month dow year`` (1 is Sunday)."""
    match = _EVENTBRIDGE_CRON.match(text)
    if match is not None:
        fields = match.group(1).upper().split()
        if len(fields) != 6:
            raise ValueError(
                "EventBridge's cron(…) has six fields: minutes hours day-of-month month "
                f"day-of-week year; got {len(fields)}"
            )
        return ("0", *fields), Weekdays.QUARTZ
    fields = text.upper().split()
    if len(fields) == 5:
        return ("0", *fields), Weekdays.UNIX
    if len(fields) in (6, 7):
        return tuple(fields), Weekdays.NAMES
    raise ValueError(
        "a cron line has five fields (minute hour day-of-month month day-of-week), six "
        f"(seconds first, as Quartz and Spring) or seven (and a year); got {len(fields)}"
    )


def _epoch_seconds(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())


def first_occurrence(
    timing: Timing, accepted_at: datetime, schedule_id: str | None = None
) -> datetime | None:
    """The first occurrence of a schedule accepted at ``accepted_at``.

    Earlier occurrences are not backfilled, except that a one-time schedule whose time has
    already passed fires once, right away (its time is returned; the poller sees it overdue).
    """
    with cpu_budget():
        return build_recurrence(timing, accepted_at, schedule_id).first_fire(accepted_at)


def upcoming(
    timing: Timing, accepted_at: datetime, count: int, schedule_id: str | None = None
) -> list[datetime]:
    """The first ``count`` occurrences of a schedule accepted at ``accepted_at``."""
    with cpu_budget():
        recurrence = build_recurrence(timing, accepted_at, schedule_id)
        return list(recurrence.upcoming(accepted_at, count))


def previous(
    timing: Timing, moment: datetime, count: int, schedule_id: str | None = None
) -> list[datetime]:
    """The last ``count`` occurrences before ``moment``, oldest first, of a schedule taken as
    accepted ``SEARCH_HORIZON`` earlier (forms without a start count from acceptance)."""
    with cpu_budget():
        recurrence = build_recurrence(timing, moment - SEARCH_HORIZON, schedule_id)
        return recurrence.before(moment, count)


__all__ = [
    "CPU_BUDGET_SECONDS",
    "SEARCH_HORIZON",
    "UTC",
    "Bounded",
    "CalendarInterval",
    "CronRecurrence",
    "ExactInterval",
    "OneTime",
    "RRuleRecurrence",
    "Recurrence",
    "RuleText",
    "TooMuchWork",
    "build_recurrence",
    "cpu_budget",
    "cron_recurrence",
    "first_occurrence",
    "instant_in",
    "parse_duration",
    "parse_rrule",
    "previous",
    "upcoming",
]
