"""Domain objects that tests build by hand."""

from __future__ import annotations

from datetime import datetime

from shared.model import Payload, Schedule, ScheduleDefinition, ScheduleStatus, Timing


def make_schedule(
    definition: ScheduleDefinition,
    accepted_at: datetime,
    next_schedule_time: datetime | None,
    status: ScheduleStatus = ScheduleStatus.ACTIVE,
    revision: int = 1,
) -> Schedule:
    """Schedule ``s`` of tenant ``t`` as the store holds it once ``definition`` was applied
    (accepted, created and last updated at ``accepted_at``)."""
    return Schedule(
        tenant="t",
        schedule_id="s",
        revision=revision,
        state_revision=0,
        status=status,
        definition=definition,
        next_schedule_time=next_schedule_time,
        accepted_at=accepted_at,
        created_at=accepted_at,
        updated_at=accepted_at,
    )


def one_time(url: str, at: datetime) -> ScheduleDefinition:
    """A schedule that POSTs to ``url`` once, at ``at``."""
    return ScheduleDefinition(timing=Timing(timezone="UTC", at=at), payload=Payload("POST", url))
