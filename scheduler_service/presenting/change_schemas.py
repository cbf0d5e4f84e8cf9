"""Marshmallow schemas of a schedule's change history (``GET /schedule/{id}/changes``): each
change with its actor and the fields it changed (see ``schemas``)."""

from __future__ import annotations

from marshmallow import fields

from scheduler_service.presenting.fields import Instant, Open, nullable, one_of, shown
from shared.changes import ActorKind, ChangeAction
from shared.model import ScheduleStatus


class ActorSchema(Open):
    """Dumps a ``shared.changes.Actor``."""

    kind = one_of(
        ActorKind,
        "api_key: a call of the API; console: the console, signed in with a "
        "key; system: the service itself (a pause after pause_after_failures failures)",
    )
    key_id = nullable(
        fields.String(),
        "the API key's id, as scheduler keys list shows it; null for the "
        "system, or where the server needs no key",
    )
    name = nullable(
        fields.String(),
        "the API key's name (SCHEDULER_API_KEYS for a key of that setting); "
        "system for the service itself",
    )


class FieldChangeSchema(Open):
    """Dumps a ``shared.changes.FieldChange``."""

    path = shown(
        fields.String(),
        "the field, as a dotted path into the schedule as GET shows it: "
        "payload.url, payload.headers.X-Tenant, schedule.cron, retry.max_attempts; state for "
        "the status",
    )
    old = nullable(
        fields.Raw(),
        "its value before, as GET showed it (secrets masked); null where it "
        "had none. A value longer than 2,000 characters of JSON is its first 2,000 and its "
        "length",
    )
    new = nullable(fields.Raw(), "its value after, as GET shows it (secrets masked)")
    secret = shown(
        fields.Boolean(),
        "the field holds a secret: old and new are masked, whether or not "
        "they differ; that it is listed says that it changed",
    )


class ChangeSchema(Open):
    """Dumps a ``shared.changes.Change``."""

    at = shown(Instant(), "when the change was made")
    action = one_of(
        ChangeAction,
        "what was done: create, replace, patch, pause, resume, skip, delete, "
        "automatic_pause (pause_after_failures), replay (a dead letter sent again)",
    )
    revision = nullable(
        fields.Integer(),
        "the revision the change made (of the definition for create, "
        "replace and patch; of the state for the others); null for a replay, which makes "
        "none",
    )
    actor = shown(fields.Nested(ActorSchema), "who made it")
    # Not named "fields": a marshmallow schema's own attribute.
    changed = shown(
        fields.List(fields.Nested(FieldChangeSchema), attribute="fields", data_key="fields"),
        "what changed, field by field, in path order",
    )


class ChangePageSchema(Open):
    """Dumps a ``views.PageView`` of changes, with the schedule's status."""

    items = shown(fields.List(fields.Nested(ChangeSchema)), "newest first")
    next_cursor = nullable(
        fields.String(), "pass as ?cursor= for the next (older) page; null on the last"
    )
    schedule_status = one_of(
        ScheduleStatus,
        "the schedule's status; deleted once it is deleted (its changes stay "
        "readable as long as its runs, until retention removes them)",
    )
