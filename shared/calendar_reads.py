"""The business calendars of many schedules, read together: what the processor and the poller
compute times with (``shared.calendars``).

They are read from the store at every batch (one read per tenant of the batch that has
schedules naming calendars), never kept: a calendar's change is seen by the next poll.
A name the tenant no longer has counts as a calendar without dates (a delete is refused while a
schedule names it, so only a delete racing a create finds this)."""

from __future__ import annotations

from collections.abc import Iterable

from shared.calendars import BusinessCalendar, CalendarRule
from shared.model import Schedule
from shared.ports import CalendarStore

# (tenant, schedule id)
Key = tuple[str, str]


def business_calendars(
    store: CalendarStore, rules: Iterable[tuple[Key, CalendarRule | None]]
) -> dict[Key, BusinessCalendar]:
    """The business calendar of each key whose rule names calendars."""
    wanted = {key: rule for key, rule in rules if rule is not None}
    names: dict[str, set[str]] = {}
    for (tenant, _), rule in wanted.items():
        names.setdefault(tenant, set()).update(rule.exclude)
    found = {tenant: store.get_calendars(tenant, sorted(named)) for tenant, named in names.items()}
    return {
        key: BusinessCalendar.of(
            rule, [found[key[0]][name] for name in rule.exclude if name in found[key[0]]]
        )
        for key, rule in wanted.items()
    }


def schedules_calendars(
    store: CalendarStore, schedules: Iterable[Schedule]
) -> dict[Key, BusinessCalendar]:
    """The business calendar of each stored schedule whose live definition names calendars,
    by (tenant, schedule id): what its times are computed with
    (``shared.notations.schedule_recurrence``)."""
    return business_calendars(
        store,
        (((item.tenant, item.schedule_id), item.live_definition.calendar) for item in schedules),
    )
