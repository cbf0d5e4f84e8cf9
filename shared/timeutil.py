"""Time helpers: every instant inside the service is an aware UTC datetime, to the millisecond.

Milliseconds because BSON keeps no more: an instant that went through MongoDB must compare equal
to the one that did not, and an occurrence id must not depend on dropped microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TypeVar

import pendulum
from pendulum.tz.exceptions import InvalidTimezone

__all__ = [
    "UTC",
    "from_epoch_ms",
    "iso_local",
    "iso_z",
    "load_zone",
    "maybe",
    "parse_iso",
    "resolve_local",
    "to_epoch_ms",
    "utc_ms",
]


def utc_ms(moment: datetime) -> datetime:
    """The same instant in UTC, truncated to the millisecond. Naive datetimes are refused."""
    if moment.tzinfo is not UTC:
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError(f"naive datetime {moment!r}: every instant must carry its time zone")
        moment = moment.astimezone(UTC)
    # Most instants are in UTC to the millisecond already (the executor makes thousands a second).
    extra = moment.microsecond % 1000
    return moment.replace(microsecond=moment.microsecond - extra) if extra else moment


def to_epoch_ms(moment: datetime) -> int:
    moment = utc_ms(moment)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def from_epoch_ms(epoch_ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=epoch_ms)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

A = TypeVar("A")
B = TypeVar("B")


def maybe(convert: Callable[[A], B], value: A | None) -> B | None:
    """``convert(value)``, or ``None`` for ``None``: an optional instant through ``utc_ms``,
    ``to_epoch_ms`` or ``from_epoch_ms``."""
    return None if value is None else convert(value)


def iso_z(moment: datetime) -> str:
    """``2026-03-08T07:30:00.000Z``: how the API writes times, and occurrence ids too."""
    # ``…+00:00`` in UTC, to the millisecond; ``isoformat`` costs a third of ``strftime``.
    return utc_ms(moment).isoformat(timespec="milliseconds")[:-6] + "Z"


def iso_local(moment: datetime, zone: tzinfo) -> str:
    """The local wall time with its offset, to the millisecond as ``iso_z`` writes the same
    instant, e.g. ``2026-03-08T03:30:00.000-04:00``."""
    return moment.astimezone(zone).isoformat(timespec="milliseconds")


def load_zone(name: str) -> tzinfo:
    """An IANA zone by name (links like ``Asia/Calcutta`` too); ``ValueError`` if unknown."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("time zone must be a non-empty IANA name such as 'Europe/Paris'")
    try:
        return pendulum.timezone(name.strip())
    except (InvalidTimezone, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def resolve_local(wall: datetime, zone: tzinfo) -> datetime:
    """The UTC instant of a local wall time, by the rules of RFC 5545 / PEP 495 ``fold=0``.

    A wall time that occurs twice (fall back) is the first, earlier instant; one that does not
    exist (spring forward) is read with the offset in force before the gap, so 02:30 on the day
    New York springs forward is 07:30Z (03:30 EDT).
    """
    if wall.tzinfo is not None:
        raise ValueError("resolve_local expects a naive wall time")
    return utc_ms(wall.replace(tzinfo=zone, fold=0))


# What ``parse_iso`` reads: 2026-05-01, 2026-05-01T09:00Z, 2026-05-01 09:00:00.250+05:30.
ISO_DATE_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?)?",
    re.ASCII,
)


def parse_iso(text: str) -> datetime:
    """An ISO-8601 date-time as written (``ISO_DATE_TIME``: a calendar date, and a time of
    hours and minutes, seconds and a fraction optional, and an offset or ``Z``); the result is
    naive when the text carries no offset. ``ValueError`` for anything else, where
    ``datetime.fromisoformat`` alone would read ``08:00:001`` as 08:00:00, and a week date, a
    basic-format time or an hour alone as some instant."""
    if not isinstance(text, str):
        raise ValueError("expected an ISO-8601 date-time string")
    if not ISO_DATE_TIME.fullmatch(text):
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    candidate = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        return datetime.fromisoformat(candidate)
    except ValueError as exc:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}") from exc
