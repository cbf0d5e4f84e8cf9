"""The body of ``POST /schedules/bulk`` (``scheduler_service.service.bulk``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validate, validates

from scheduler_service.requests.fields import Strict
from scheduler_service.requests.patch import SchedulePatchSchema
from scheduler_service.service.bulk import EMPTY_SELECTOR, MAX_IDS, BulkAction, Selector
from shared.formats import SCHEDULE_ID, SCHEDULE_ID_RULE
from shared.model import ScheduleStatus
from shared.schedule_listing import SEARCH_LENGTH

# The statuses a selector may name (deleted schedules are never matched).
SELECTABLE = [
    ScheduleStatus.ACTIVE.value,
    ScheduleStatus.PAUSED.value,
    ScheduleStatus.COMPLETED.value,
]


class SelectorSchema(Strict):
    """Which schedules: every criterion given holds; at least one is required."""

    tag = fields.String(
        validate=validate.Length(min=1, max=200), metadata={"description": "carries this tag"}
    )
    name_prefix = fields.String(
        validate=validate.Length(min=1, max=200),
        metadata={"description": "its name starts with this text"},
    )
    ids = fields.List(
        fields.String(),
        validate=validate.Length(min=1, max=MAX_IDS),
        metadata={"description": f"one of these ids (1 to {MAX_IDS})"},
    )
    status = fields.String(validate=validate.OneOf(SELECTABLE))
    search = fields.String(
        validate=validate.Length(min=1, max=SEARCH_LENGTH),
        metadata={"description": "as GET /schedules?q=: in its name, a tag, or its URL's host"},
    )

    @validates("ids")
    def _ids(self, ids: list[str], **_: Any) -> None:
        bad = [one for one in ids if not SCHEDULE_ID.match(one)]
        if bad:
            raise ValidationError(f"{bad[0]!r}: {SCHEDULE_ID_RULE}")

    @post_load
    def to_selector(self, data: dict[str, Any], **_: Any) -> Selector:
        ids = data.get("ids")
        status = data.get("status")
        selector = Selector(
            tag=data.get("tag"),
            name_prefix=data.get("name_prefix"),
            ids=tuple(ids) if ids is not None else None,
            status=ScheduleStatus(status) if status else None,
            search=data.get("search", "").strip() or None,
        )
        if selector.empty:
            raise ValidationError(EMPTY_SELECTOR, "_schema")
        return selector


class BulkSchema(Strict):
    """The body of ``POST /schedules/bulk``."""

    action = fields.String(required=True, validate=validate.OneOf([a.value for a in BulkAction]))
    selector = fields.Nested(SelectorSchema, required=True)
    patch = fields.Nested(
        SchedulePatchSchema,
        metadata={
            "description": "with action patch only: a JSON merge patch applied to each schedule, "
            "as PATCH /schedule/{id} applies it"
        },
    )
    dry_run = fields.Boolean(
        load_default=False,
        metadata={"description": "answer how many match and a sample; change nothing"},
    )
    continue_token = fields.String(
        data_key="continue",
        validate=validate.Length(min=1, max=1000),
        metadata={"description": "the continue of the previous answer, with the same request"},
    )

    @post_load
    def _checked(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        action = BulkAction(data["action"])
        if action is BulkAction.PATCH and not data.get("patch"):
            raise ValidationError("required with action patch: the fields to change", "patch")
        if action is not BulkAction.PATCH and "patch" in data:
            raise ValidationError("only with action patch", "patch")
        if data["dry_run"] and "continue_token" in data:
            raise ValidationError("a dry run has no parts to continue", "continue")
        return {**data, "action": action}
