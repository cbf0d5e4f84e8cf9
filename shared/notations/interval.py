"""``interval``: every N units (docs/time-semantics.md). Seconds, minutes and hours are elapsed
time; days and longer are calendar steps of local wall time from the anchor (``start``, else
one interval after the schedule is accepted)."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from shared.notations.base import Anchors, MemberKind, TimingNotation
from shared.notations.words import every, local
from shared.recurrence import Recurrence, wall_in
from shared.recurrence.intervals import interval_recurrence
from shared.timeutil import load_zone
from shared.timing import JSON, Every, Timing, Unit


class Interval(TimingNotation):
    name = "interval"
    label = "Every N units"
    view_label = "every"
    view_kind = MemberKind.INTERVAL
    member_label = "Every"
    member_example = "10"
    describes_start = True

    def from_body(self, loaded: Any) -> Any:
        return Every(loaded["number"], loaded["unit"])

    def encode(self, value: Any) -> JSON:
        step = _every(value)
        return {"number": step.number, "unit": step.unit.value}

    def decode(self, document: JSON) -> Any:
        return Every(document["number"], Unit(document["unit"]))

    def view(self, value: Any, zone: tzinfo) -> Any:
        return self.encode(value)

    def recurrence(self, timing: Timing, anchors: Anchors) -> Recurrence:
        zone, start = anchors.zone, anchors.start
        start_wall = None if timing.start is None else wall_in(timing.start, zone)
        return interval_recurrence(
            _every(timing.value), zone, start, start_wall, anchors.accepted_at
        )

    def describe(self, timing: Timing) -> str:
        step = _every(timing.value)
        text = every(step.number, step.unit.value)
        if step.unit.is_exact:
            text += " (elapsed time)"
        if timing.start is None:
            return text + ", the first one interval after the schedule is accepted"
        if not step.unit.is_exact:
            wall = wall_in(timing.start, load_zone(timing.timezone))
            text += f" at {wall.hour:02d}:{wall.minute:02d}"
        return text + f", from {local(timing.start, timing.timezone)}"


def _every(value: Any) -> Every:
    if not isinstance(value, Every):
        raise TypeError(f"an interval is an Every, not {value!r}")
    return value


NOTATION = Interval()
