"""The answer of ``POST /schedules/bulk`` (``scheduler_service.service.bulk``): a dry run's
(``matched`` and ``sample``) or a part's of a real one (``matched``, ``done``, ``continue``, the
counts and ids): one schema, each member saying which answers carry it."""

from __future__ import annotations

from marshmallow import fields

from scheduler_service.presenting.fields import Open, shown
from scheduler_service.presenting.schemas import ScheduleViewSchema
from scheduler_service.service.bulk import IDS_SHOWN


class FailureSchema(Open):
    id = shown(fields.String())
    reason = shown(fields.String(), "why it was not changed")


def _ids(outcome: str) -> fields.List[str]:
    return fields.List(
        fields.String(),
        metadata={"description": f"a real one: the first {IDS_SHOWN} ids {outcome}"},
    )


class BulkAnswerSchema(Open):
    """Dumps a ``DryRun`` whose sample is presented (``ScheduleView``), or a ``BulkAnswer``."""

    matched = shown(
        fields.Integer(),
        "a dry run: how many schedules the selector matches now; a real "
        "one: how many this part went over",
    )
    sample = fields.List(
        fields.Nested(ScheduleViewSchema),
        metadata={"description": "a dry run: the first matched, by id"},
    )
    done = fields.Boolean(
        metadata={"description": "a real one: false when more remain (send continue back)"}
    )
    continue_token = fields.String(
        data_key="continue",
        allow_none=True,
        metadata={
            "description": "a real one: send it back as continue, with the same request (and "
            "the same Idempotency-Key), for the next part; null when done"
        },
    )
    changed = fields.Integer(metadata={"description": "a real one"})
    unchanged = fields.Integer(
        metadata={
            "description": "a real one: already in that state (or a patch that changes nothing)"
        }
    )
    failed = fields.Integer(metadata={"description": "a real one"})
    changed_ids = _ids("changed")
    unchanged_ids = _ids("unchanged")
    failures = fields.List(
        fields.Nested(FailureSchema),
        metadata={"description": f"a real one: the first {IDS_SHOWN} failed, with their reasons"},
    )
