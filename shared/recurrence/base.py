"""What every recurrence engine is (``Recurrence``), how far a search may go
(``SEARCH_HORIZON``), how much CPU a computation may take (``cpu_budget``), and the wall-time
helpers the engines share."""

from __future__ import annotations

import gc
import threading
import time as cpu_clock
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from shared.timeutil import UTC, resolve_local, utc_ms

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
# The CPU time one time computation (a create's or a patch's checks, a preview, a backfill, the
# processor's first time, the poller's plan of one schedule) may take; a rule that needs more is
# refused rather than allowed to starve other requests.
CPU_BUDGET_SECONDS = 0.5
_WEEK = timedelta(days=7)


class TooMuchWork(ValueError):
    """A time computation went over its CPU budget (``cpu_budget``)."""


@dataclass
class _Budget:
    """The innermost ``cpu_budget``: its deadline in thread CPU time, its size, and how many
    cheap steps (``_tick``) were taken since the clock was last read."""

    deadline: float
    seconds: float
    ticks: int = 0


_budget: ContextVar[_Budget | None] = ContextVar("recurrence_budget", default=None)
# A cheap step reads the clock (a system call) once in this many.
_TICKS_PER_CHECK = 16


# What each thread spent collecting the oldest generation of garbage: a pause in proportion to
# the whole heap (0.2 s and more in a long-lived process), not to the computation it falls in.
_collections = threading.local()


def _note_full_collection(phase: str, info: dict[str, int]) -> None:
    """A ``gc.callbacks`` hook: adds each full collection's thread CPU time to the thread's."""
    if info["generation"] != 2:
        return
    now = cpu_clock.thread_time()
    if phase == "start":
        _collections.started = now
    elif hasattr(_collections, "started"):
        _collections.spent = getattr(_collections, "spent", 0.0) + now - _collections.started
        del _collections.started


gc.callbacks.append(_note_full_collection)


def _own_cpu() -> float:
    """This thread's CPU time, less what it spent in full garbage collections."""
    spent: float = getattr(_collections, "spent", 0.0)
    return cpu_clock.thread_time() - spent


@contextmanager
def cpu_budget(seconds: float = CPU_BUDGET_SECONDS) -> Iterator[None]:
    """Bound the CPU time of the time computations run inside: past ``seconds`` they raise
    ``TooMuchWork``. Thread CPU time, so a busy machine does not make a rule fail, less the
    full garbage collections that fall inside (``_note_full_collection``), so neither does a
    big heap; an inner budget never extends an outer one."""
    deadline = _own_cpu() + seconds
    outer = _budget.get()
    if outer is not None and outer.deadline < deadline:
        deadline, seconds = outer.deadline, outer.seconds
    token = _budget.set(_Budget(deadline, seconds))
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
    if budget is not None and _own_cpu() > budget.deadline:
        raise TooMuchWork(
            f"computing its times needs more than {budget.seconds:g} s of CPU; simplify the "
            "rule or give it a later start"
        )


def _tick() -> None:
    """A small step inside a library's loop (``shared.recurrence.dateutil_rules``): charged
    like ``_spend``, the clock read once every ``_TICKS_PER_CHECK`` steps."""
    budget = _budget.get()
    if budget is not None:
        budget.ticks += 1
        if budget.ticks % _TICKS_PER_CHECK == 0:
            _spend()


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

    def at_wall(self, wall: datetime, zone: tzinfo) -> datetime | None:
        """The instant this engine fires the naive wall time ``wall`` of ``zone`` at, for an
        occurrence a business calendar moves there (``shared.recurrence.business``): as RFC
        5545 reads it (``fold=0``), unless the engine has rules of its own (cron)."""
        return instant_in(wall, zone)

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


def _exists(wall: datetime, zone: tzinfo) -> bool:
    """Whether a naive local wall time happens in ``zone`` (is not in a spring-forward gap)."""
    return _wall(resolve_local(wall, zone), zone) == wall


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


def _epoch_seconds(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
