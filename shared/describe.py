"""A schedule's times in plain English, for the preview and the stored schedule's view.

The words are a mental check for the user ("At 09:00 on Monday through Friday, Asia/Kolkata"),
not a contract: the occurrences are. Each notation says its own part
(``TimingNotation.describe``, in ``shared.notations``); here the zone, bounds and limits follow.
"""

from __future__ import annotations

from shared.notations import notation_of
from shared.notations.words import local, times
from shared.timing import Timing


def describe(timing: Timing) -> str:
    """``At 09:00 on Monday through Friday, Asia/Kolkata``; bounds and limits follow."""
    notation = notation_of(timing)
    try:
        core = notation.describe(timing)
    except ValueError:
        core = f"By the {timing.kind} {timing.value}"
    parts = [core, timing.timezone]
    if timing.start is not None and not notation.describes_start:
        parts.append(f"from {local(timing.start, timing.timezone)}")
    if timing.end is not None:
        parts.append(f"until {local(timing.end, timing.timezone)}")
    if timing.max_occurrences is not None:
        parts.append(f"at most {times(timing.max_occurrences)}")
    return ", ".join(parts)
