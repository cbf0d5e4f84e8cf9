"""The words the notations' descriptions share (``shared.describe`` puts them together)."""

from __future__ import annotations

from datetime import datetime, timedelta

from shared.timeutil import load_zone


def local(moment: datetime, zone_name: str) -> str:
    """A naive wall time as it is; an instant as the zone's wall time."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(load_zone(zone_name)).replace(tzinfo=None)
    pattern = "%Y-%m-%d %H:%M:%S" if moment.second or moment.microsecond else "%Y-%m-%d %H:%M"
    return moment.strftime(pattern)


def plural(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def times(number: int) -> str:
    return "once" if number == 1 else "twice" if number == 2 else f"{number} times"


def every(number: int, unit: str) -> str:
    return f"Every {unit}" if number == 1 else f"Every {number} {unit}s"


def join(words: list[str]) -> str:
    if len(words) <= 2:
        return " and ".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def duration(step: timedelta) -> str:
    milliseconds = step // timedelta(milliseconds=1)
    words = []
    for size, unit in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute")):
        count, milliseconds = divmod(milliseconds, size)
        if count:
            words.append(plural(count, unit))
    if milliseconds:
        seconds = milliseconds / 1000
        words.append(f"{seconds:g} second" + ("" if seconds == 1 else "s"))
    return " ".join(words)
