"""The answers of ``POST /schedules/bulk`` (``scheduler_service.service.bulk``)."""

from __future__ import annotations

from marshmallow import fields

from scheduler_service.presenting.fields import Open
from scheduler_service.presenting.schemas import ScheduleViewSchema
from scheduler_service.service.bulk import IDS_SHOWN


class BulkDryRunSchema(Open):
    """Dumps a ``DryRun`` whose sample is presented (``ScheduleView``)."""

    matched = fields.Integer(
        required=True, metadata={"description": "how many schedules the selector matches now"}
    )
    sample = fields.List(
        fields.Nested(ScheduleViewSchema),
        required=True,
        metadata={"description": "the first of them by id"},
    )


class FailureSchema(Open):
    id = fields.String(required=True)
    reason = fields.String(required=True, metadata={"description": "why it was not changed"})


class BulkAnswerSchema(Open):
    """Dumps a ``BulkAnswer``: what one part of the operation did."""

    done = fields.Boolean(
        required=True, metadata={"description": "false: send continue back for the next part"}
    )
    continue_token = fields.String(
        data_key="continue",
        required=True,
        allow_none=True,
        metadata={
            "description": "send it back as continue, with the same request (and the same "
            "Idempotency-Key), for the next part; null when done"
        },
    )
    matched = fields.Integer(
        required=True, metadata={"description": "the schedules this part went over"}
    )
    changed = fields.Integer(required=True)
    unchanged = fields.Integer(
        required=True,
        metadata={"description": "already in that state (or a patch that changes nothing)"},
    )
    failed = fields.Integer(required=True)
    changed_ids = fields.List(
        fields.String(), required=True, metadata={"description": f"the first {IDS_SHOWN}"}
    )
    unchanged_ids = fields.List(
        fields.String(), required=True, metadata={"description": f"the first {IDS_SHOWN}"}
    )
    failures = fields.List(
        fields.Nested(FailureSchema),
        required=True,
        metadata={"description": f"the first {IDS_SHOWN}, with their reasons"},
    )
