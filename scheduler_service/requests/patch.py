"""``PATCH /schedule/{id}``: a JSON merge patch (RFC 7396) onto the stored schedule's body.

The stored definition is written back as the body a ``PUT`` would send, the patch is merged
onto it (objects merge member by member, ``null`` removes a member, anything else replaces),
and the result takes the ``PUT`` path: the same validation, a new revision, queue 1.

Two exceptions to the member-by-member merge: a ``schedule`` that names its form (the first
member of a notation of ``shared.notations``: ``at``, ``interval``, ``cron``, ``rrule``, the
blueprint's ``start_date``) replaces the stored one whole, so a cron schedule can become an
interval without removing ``cron`` by hand; one that does not (e.g. only ``end``) merges into
it. And a ``payload`` that names another ``kind`` than the stored one's (``sqs`` for an
``http`` call) replaces it whole.
"""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields

from scheduler_service.presenting.problems import flatten
from scheduler_service.requests.fields import Strict
from scheduler_service.requests.schedule import ScheduleBodySchema, ScheduleRequest
from shared.errors import InvalidInput
from shared.model import JSON, ScheduleDefinition
from shared.notations import NOTATIONS

# The members that name a notation: a PATCH naming one replaces the stored schedule whole.
TIMING_FORMS = tuple(notation.form for notation in NOTATIONS)
# The PUT body's schema, made once: a load keeps no state in it (flask-smorest keeps one per
# route too), and making it (its nested schemas copied) was a third of a bulk patch's CPU.
_PUT_BODY = ScheduleBodySchema()
# What the document says of the operation, below its summary.
PATCH_DESCRIPTION = (
    "A JSON merge patch (RFC 7396) onto the stored schedule (objects merge, `null`\n"
    "removes a member), then validated and accepted as a `PUT` of the result: a new\n"
    "revision, the same answers. Secret values not sent stay as stored. A `schedule`\n"
    f"naming its form ({', '.join(f'`{form}`' for form in TIMING_FORMS)}) replaces the\n"
    "stored one whole."
)


class SchedulePatchSchema(Strict):
    """The body of ``PATCH /schedule/{id}``: any members of the create body. Objects merge
    into the stored ones (RFC 7396), ``null`` removes a member (it takes its default); the
    merged body is validated as a ``PUT`` body."""

    id = fields.Raw(metadata={"description": "if given, the id in the path"})
    name = fields.Raw(allow_none=True)
    description = fields.Raw(allow_none=True)
    type = fields.Raw(allow_none=True)
    schedule = fields.Raw(
        metadata={
            "description": "merged into the stored schedule; one that names its form "
            f"({', '.join(TIMING_FORMS)}) replaces it whole"
        }
    )
    payload = fields.Raw(
        metadata={
            "description": 'merged: e.g. {"url": …} changes the URL; one that names another '
            "kind replaces it whole"
        }
    )
    metadata = fields.Raw(allow_none=True)
    tags = fields.Raw(allow_none=True)
    priority = fields.Raw(allow_none=True)
    retry = fields.Raw(allow_none=True)
    misfire = fields.Raw(allow_none=True)
    jitter_seconds = fields.Raw(allow_none=True)
    pause_after_failures = fields.Raw(allow_none=True)
    overlap = fields.Raw(allow_none=True)
    on_failure = fields.Raw(allow_none=True, metadata={"description": "replaced whole"})
    alert = fields.Raw(allow_none=True)
    managed_by = fields.Raw(allow_none=True)
    calendar = fields.Raw(allow_none=True, metadata={"description": "merged; null removes it"})


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """RFC 7396: ``patch`` applied to ``target``."""
    if not isinstance(patch, dict):
        return patch
    merged: dict[str, Any] = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged


def patched_body(stored: dict[str, JSON], patch: dict[str, JSON]) -> dict[str, JSON]:
    """``patch`` merged onto ``stored`` (see the module docstring)."""
    schedule = patch.get("schedule")
    if isinstance(schedule, dict) and any(form in schedule for form in TIMING_FORMS):
        stored = {**stored, "schedule": {}}
    payload, stored_payload = patch.get("payload"), stored.get("payload")
    if (
        isinstance(payload, dict)
        and isinstance(stored_payload, dict)
        and payload.get("kind", stored_payload.get("kind")) != stored_payload.get("kind")
    ):
        stored = {**stored, "payload": {}}
    merged: dict[str, JSON] = merge_patch(stored, patch)
    return merged


def patched_request(stored: ScheduleDefinition, patch: dict[str, JSON]) -> ScheduleRequest:
    """``patch`` (a loaded ``SchedulePatchSchema``; its ``id`` aside) merged onto the stored
    definition's body and loaded as a ``PUT`` body, or ``InvalidInput`` naming every bad field
    of the result."""
    changes = {name: value for name, value in patch.items() if name != "id"}
    merged = patched_body(stored.body(), changes)
    try:
        body: ScheduleRequest = _PUT_BODY.load(merged)
    except ValidationError as exc:
        found: dict[str, list[str]] = {}
        for error in flatten(exc.messages):
            found.setdefault(error["field"], []).append(error["message"])
        raise InvalidInput(found) from None
    return body
