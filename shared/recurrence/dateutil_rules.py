"""dateutil's ``rrule``, interruptible by the CPU budget (``base.cpu_budget``).

dateutil hands back the occurrences it finds, one at a time, and the engine charges each to the
budget. Between two finds, though, dateutil's own loop may run for seconds without handing back
anything: a rule that never fires (``FREQ=DAILY;BYEASTER=0;BYMONTH=1``: Easter is never in
January; ``FREQ=MINUTELY;BYSETPOS=2``: a minute holds one time) is walked period by period up to
the year 9999. No input check can tell every such rule apart, so the walk itself is charged.

Its loop (``rrule._iter`` in dateutil 2.9) reads the rule's ``_tzinfo`` each period of an
``HOURLY``, ``MINUTELY`` or ``SECONDLY`` rule (to build that period's times), and its
``_byeaster`` each time it rebuilds its masks: every period of a ``YEARLY`` or ``MONTHLY`` rule,
and at least once a month for ``WEEKLY`` and ``DAILY`` ones. ``ChargedRule`` makes those two
reads a step of the budget (``base._tick``), so every period of the walk is charged, and past
the budget the walk stops with ``TooMuchWork`` (``tests/unit/test_cpu_budget.py`` holds it to
that for every frequency).
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from dateutil.rrule import rrule, rrulestr

from shared.recurrence.base import _tick


class ChargedRule(rrule):
    """An ``rrule`` whose walk is charged to the CPU budget (see the module docstring)."""

    @property
    def _tzinfo(self) -> tzinfo | None:
        _tick()
        zone: tzinfo | None = self.__dict__["_tzinfo"]
        return zone

    @_tzinfo.setter
    def _tzinfo(self, value: tzinfo | None) -> None:
        self.__dict__["_tzinfo"] = value

    @property
    def _byeaster(self) -> tuple[int, ...] | None:
        _tick()
        offsets: tuple[int, ...] | None = self.__dict__["_byeaster"]
        return offsets

    @_byeaster.setter
    def _byeaster(self, value: tuple[int, ...] | None) -> None:
        self.__dict__["_byeaster"] = value

    def replace(self, **kwargs: Any) -> ChargedRule:
        """As ``rrule.replace`` (which makes a plain ``rrule``), charged."""
        return charged(super().replace(**kwargs))


def charged(rule: rrule) -> ChargedRule:
    """The same rule, its walk charged to the budget: its state moved into a ``ChargedRule``,
    whose properties read it from the instance dictionary where ``rrule`` keeps it."""
    found = ChargedRule.__new__(ChargedRule)
    found.__dict__.update(vars(rule))
    return found


def single_rule(body: str, dtstart: datetime) -> ChargedRule:
    """One RRULE (``FREQ=…;…``) with its DTSTART, as dateutil reads it; charged."""
    rule = rrulestr(body, dtstart=dtstart)
    if not isinstance(rule, rrule):
        raise ValueError(f"not a single rule: {body!r}")
    return charged(rule)
