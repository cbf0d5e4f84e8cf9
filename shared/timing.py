"""When a schedule fires: its ``Timing`` (a notation and its value, a zone, bounds), and the
``Every`` of an interval."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from shared.timeutil import parse_iso

JSON = Any


class Unit(StrEnum):
    SECOND = "second"
    MINUTE = "minute"
    HOUR = "hour"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"

    @classmethod
    def parse(cls, text: str) -> Unit:
        """``"Minutes"``, ``"minute"`` → ``Unit.MINUTE``; ``ValueError`` for anything else."""
        if isinstance(text, str):
            word = text.strip().lower()
            word = word[:-1] if word.endswith("s") else word
            for unit in cls:
                if unit.value == word:
                    return unit
        names = ", ".join(unit.value for unit in cls)
        raise ValueError(f"unknown unit {text!r}; use one of {names} (singular or plural)")

    @property
    def is_exact(self) -> bool:
        """Seconds, minutes and hours are elapsed time; longer units follow the local calendar."""
        return self in (Unit.SECOND, Unit.MINUTE, Unit.HOUR)


@dataclass(frozen=True)
class Every:
    number: int
    unit: Unit

    def __post_init__(self) -> None:
        if self.number <= 0:
            raise ValueError("an interval must be a positive whole number")


@dataclass(frozen=True, init=False)
class Timing:
    """When a schedule fires: its notation (``kind``, e.g. ``cron``: a notation of
    ``shared.notations``) and that notation's ``value`` (a cron line, an ``Every``, a datetime),
    in ``timezone``, bounded by ``start``, ``end`` and ``max_occurrences``. Written with the
    notation as a keyword: ``Timing("UTC", cron="0 9 * * *", end=…)``.

    ``start``, ``end`` and a datetime value are naive when they are local wall times in
    ``timezone`` and aware when they name an instant. ``end`` is inclusive: no occurrence after
    it.
    """

    timezone: str
    kind: str
    value: Any
    start: datetime | None
    end: datetime | None
    max_occurrences: int | None

    def __init__(
        self,
        timezone: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        max_occurrences: int | None = None,
        **notation: Any,
    ) -> None:
        given = {kind: value for kind, value in notation.items() if value is not None}
        if len(given) != 1:
            raise ValueError(
                f"a timing is in one notation, e.g. cron=…; got {', '.join(given) or 'none'}"
            )
        [(kind, value)] = given.items()
        for name, item in (
            ("timezone", timezone),
            ("kind", kind),
            ("value", value),
            ("start", start),
            ("end", end),
            ("max_occurrences", max_occurrences),
        ):
            object.__setattr__(self, name, item)

    def to_document(self) -> dict[str, JSON]:
        # The notations import this module: they are looked up when a timing is written.
        from shared.notations import notation_of

        document: dict[str, JSON] = {
            "timezone": self.timezone,
            self.kind: notation_of(self).encode(self.value),
        }
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is not None:
                document[name] = value.isoformat()
        if self.max_occurrences is not None:
            document["max_occurrences"] = self.max_occurrences
        return document

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Timing:
        from shared.notations import TIMING_NOTATIONS

        kinds = [kind for kind in TIMING_NOTATIONS if kind in document]
        if len(kinds) != 1:
            raise ValueError(f"a stored timing in one notation, not {sorted(document)}")
        [kind] = kinds
        return cls(
            document["timezone"],
            start=_optional_iso(document.get("start")),
            end=_optional_iso(document.get("end")),
            max_occurrences=document.get("max_occurrences"),
            **{kind: TIMING_NOTATIONS[kind].decode(document[kind])},
        )


def _optional_iso(value: str | None) -> datetime | None:
    return parse_iso(value) if value is not None else None
