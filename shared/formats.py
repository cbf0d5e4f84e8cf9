"""Identifiers and positions that cross processes and reach clients, each spelled here once and
read back by its parser (``tests/unit/test_formats.py`` round-trips each).

- A schedule id: 1 to 128 letters, digits and ``. _ ~ -``, starting with a letter or digit (no
  ``:``, which the occurrence id relies on).
- An occurrence id: ``<schedule id>:<UTC time to the millisecond>`` for a scheduled occurrence
  (the same for every delivery of it: the webhook's ``Idempotency-Key``), or
  ``<schedule id>:manual:<UTC time>:<hex>`` for a manual trigger (the hex keeps two triggers in
  the same millisecond apart). What follows the first ``:`` tells the two apart: a time starts
  with a digit, a trigger's with ``manual``.
- An execution cursor: the position after a record in a listing of execution records, newest
  first: ``<epoch milliseconds>|<occurrence id>`` of the last record of the page.
- A change cursor: the position after a change in a schedule's change history, newest first:
  the ``seq`` of the last change of the page (``shared.changes.Change``), in decimal.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime

from shared.timeutil import UTC, iso_z, parse_iso, to_epoch_ms

# \Z, not $: "$" also matches before a final newline.
# A schedule id, for patterns that hold one.
SCHEDULE_ID_TEXT = r"[A-Za-z0-9][A-Za-z0-9._~-]{0,127}"
SCHEDULE_ID = re.compile(rf"^{SCHEDULE_ID_TEXT}\Z")
SCHEDULE_ID_RULE = "1 to 128 characters: letters, digits, . _ ~ -, starting with a letter or digit"

MANUAL = "manual"
_UTC = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"
# What follows "<schedule id>:" in an occurrence id: its UTC time, or a trigger's.
_SUFFIX = re.compile(
    rf"^(?:(?P<time>{_UTC})|{MANUAL}:(?P<manual>{_UTC}):(?P<token>[0-9a-f]{{1,32}}))\Z"
)
# Hex digits of a trigger's random part.
TOKEN_BYTES = 4

EXECUTION_CURSOR = re.compile(r"^\d{1,15}\|[^|]+\Z")
CHANGE_CURSOR = re.compile(r"^\d{1,19}\Z")


def occurrence_id(schedule_id: str, scheduled_time: datetime) -> str:
    """``<schedule_id>:<UTC time to the millisecond>``: the same for every delivery of it."""
    return f"{schedule_id}:{iso_z(scheduled_time)}"


def manual_occurrence_id(schedule_id: str, at: datetime, token: str | None = None) -> str:
    """A manual trigger's id, at ``at``: ``<schedule_id>:manual:<UTC time>:<hex>``, the hex
    random unless given; never equal to a scheduled occurrence's id."""
    return f"{schedule_id}:{MANUAL}:{iso_z(at)}:{token or secrets.token_hex(TOKEN_BYTES)}"


@dataclass(frozen=True)
class OccurrenceId:
    """What an occurrence id names: its schedule, its time, and for a trigger its random part."""

    schedule_id: str
    scheduled_time: datetime
    token: str | None = None

    @property
    def manual(self) -> bool:
        return self.token is not None

    def __str__(self) -> str:
        if self.token is None:
            return occurrence_id(self.schedule_id, self.scheduled_time)
        return manual_occurrence_id(self.schedule_id, self.scheduled_time, self.token)


def parse_occurrence_id(text: str) -> OccurrenceId | None:
    """What ``text`` names as an occurrence id (``occurrence_id``, ``manual_occurrence_id``),
    or ``None`` for text that is not one."""
    schedule_id, _, suffix = text.partition(":")
    found = _SUFFIX.match(suffix)
    if not SCHEDULE_ID.match(schedule_id) or found is None:
        return None
    try:
        moment = parse_iso(found["time"] or found["manual"]).astimezone(UTC)
    except ValueError:
        return None
    return OccurrenceId(schedule_id, moment, found["token"])


def execution_cursor(moment: datetime, occurrence: str) -> str:
    """The position after the record of ``occurrence`` at ``moment`` in a listing of execution
    records (newest first)."""
    return f"{to_epoch_ms(moment)}|{occurrence}"


def cursor_before(moment: datetime) -> str:
    """A position before every record at ``moment``: a listing from it starts with the records
    before ``moment``."""
    return f"{to_epoch_ms(moment)}|"


def parse_execution_cursor(cursor: str) -> tuple[int, str]:
    """The epoch milliseconds and occurrence id an ``execution_cursor`` (or ``cursor_before``:
    an empty id) names."""
    moment_ms, _, occurrence = cursor.partition("|")
    return int(moment_ms), occurrence


def is_execution_cursor(text: str) -> bool:
    """Whether ``text`` has the shape of an ``execution_cursor`` (a client passes one back)."""
    return EXECUTION_CURSOR.match(text) is not None


def change_cursor(seq: int) -> str:
    """The position after the change ``seq`` in a schedule's change history (newest first)."""
    return str(seq)


def parse_change_cursor(cursor: str) -> int:
    """The ``seq`` a ``change_cursor`` names: the next page starts with the change before it."""
    return int(cursor)
