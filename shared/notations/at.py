"""``at``: one time, ISO-8601 (docs/time-semantics.md). Accepted after it has passed, it fires
once, at once."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

from shared.notations.base import Anchors, MemberKind, TimingNotation
from shared.notations.words import local
from shared.recurrence import OneTime, Recurrence, instant_in
from shared.timeutil import parse_iso
from shared.timing import JSON, Timing


class At(TimingNotation):
    name = "at"
    label = "Once, at a time"
    view_label = "once, at"
    view_kind = MemberKind.DATE_TIME
    view_description = "a one-time schedule"
    member_label = "At (in the time zone below)"
    member_description = "one time, ISO-8601"
    one_time_words = "at"
    console_fire_if_past = True

    def is_one_time(self, members: Any) -> bool:
        return True

    def encode(self, value: Any) -> JSON:
        return _moment(value).isoformat()

    def decode(self, document: JSON) -> Any:
        return parse_iso(document)

    def view(self, value: Any, zone: tzinfo) -> Any:
        return instant_in(_moment(value), zone)

    def recurrence(self, timing: Timing, anchors: Anchors) -> Recurrence:
        return OneTime(instant_in(_moment(timing.value), anchors.zone))

    def describe(self, timing: Timing) -> str:
        return f"Once, at {local(_moment(timing.value), timing.timezone)}"


def _moment(value: Any) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"an at time is a datetime, not {value!r}")
    return value


NOTATION = At()
