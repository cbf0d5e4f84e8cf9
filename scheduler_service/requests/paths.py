"""The ids a route's path carries: checked before anything is read, each refusal naming the
parameter (``shared.formats`` defines what an id is)."""

from __future__ import annotations

from shared.errors import InvalidInput
from shared.formats import SCHEDULE_ID, SCHEDULE_ID_RULE, parse_occurrence_id


def check_id(schedule_id: str) -> None:
    """An id a schedule can have, or ``InvalidInput`` naming ``id``."""
    if not SCHEDULE_ID.match(schedule_id):
        raise InvalidInput({"id": SCHEDULE_ID_RULE})


def check_occurrence_id(occurrence_id: str, schedule_id: str | None = None) -> None:
    """An id an occurrence (of ``schedule_id``, if given) can have, or ``InvalidInput`` naming
    ``occurrence_id``: ``<schedule id>:<UTC time>`` or a trigger's
    ``<schedule id>:manual:<UTC time>:<hex>``."""
    named = parse_occurrence_id(occurrence_id)
    if named is not None and schedule_id in (None, named.schedule_id):
        return
    of = f" of {schedule_id}" if schedule_id is not None else ""
    raise InvalidInput(
        {
            "occurrence_id": f"not an occurrence id{of}: <schedule id>:<UTC time>, e.g. "
            f"{schedule_id or 'report'}:2026-03-08T07:30:00.000Z, as the history lists it"
        }
    )
