"""What a ``PUT /schedule/{id}`` would change, storing nothing: ``POST /schedule/{id}/diff``,
the plan ``scheduler apply`` shows before it applies anything.

The body is read and checked as a ``PUT`` would read it (so a bad field is refused here, with
the same answer), masked secrets kept from the stored schedule as a ``PUT`` keeps them; then
the stored definition and the new one are compared as the bodies that would store them
(``ScheduleDefinition.body``): a create (nothing stored, or a deleted schedule), an update with
the paths of the members that differ (``payload.url``, ``tags``; never their values), or
unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scheduler_service.service.creating import Creation
from shared.errors import InvalidInput
from shared.jsonvalues import JSON, json_equal
from shared.model import ScheduleDefinition, ScheduleStatus
from shared.recurrence import TooMuchWork, cpu_budget


@dataclass(frozen=True)
class Comparison:
    schedule_id: str
    # "create", "update" or "unchanged".
    action: str
    changes: tuple[str, ...] = ()


def compare(
    creation: Creation,
    tenant: str,
    schedule_id: str,
    definition: ScheduleDefinition,
    *,
    fire_if_past: bool = False,
) -> Comparison:
    """What replacing the tenant's schedule ``schedule_id`` with ``definition`` would change,
    or ``InvalidInput`` naming every field a ``PUT`` of it would refuse."""
    definition = creation.keep_secrets(tenant, schedule_id, definition)
    parts = {
        "schedule": definition.timing,
        "payload": definition.payload,
        "retry": definition.retry,
        "on_failure": definition.on_failure,
        "fire_if_past": fire_if_past,
    }
    try:
        with cpu_budget():
            errors = creation.checks.domain_errors(parts, creation.clock.now(), schedule_id)
    except TooMuchWork as exc:
        raise InvalidInput({f"schedule.{definition.timing.kind}": str(exc)}) from None
    if errors:
        raise InvalidInput(errors)
    stored = creation.store.get_schedule(tenant, schedule_id)
    if stored is None or stored.status is ScheduleStatus.DELETED or stored.definition is None:
        return Comparison(schedule_id, "create")
    changes = tuple(changed_paths(stored.definition.body(), definition.body()))
    return Comparison(schedule_id, "update" if changes else "unchanged", changes)


def changed_paths(old: Mapping[str, JSON], new: Mapping[str, JSON], prefix: str = "") -> list[str]:
    """The dotted paths of the members that differ as JSON (``shared.jsonvalues.json_equal``),
    objects compared member by member (a list, and anything else, whole), in order."""
    found: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if isinstance(before, dict) and isinstance(after, dict):
            found += changed_paths(before, after, f"{prefix}{name}.")
        elif not json_equal(before, after):
            found.append(f"{prefix}{name}")
    return found
