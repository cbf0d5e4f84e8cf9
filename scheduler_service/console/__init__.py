"""The web console at ``/console``: overview, schedules, one schedule, its history and its
changes, dead letters, create and edit, the signing secrets, the business calendars.
Importing the page modules registers their routes."""

from scheduler_service.console import (
    backfill_page,
    bulk_actions,
    calendar_page,
    change_pages,
    dead_letter_pages,
    form_pages,
    history,
    overview,
    schedule_actions,
    schedule_list_page,
    schedule_page,
    signing_page,
)
from scheduler_service.console.pages import PREFIX, blp

__all__ = [
    "PREFIX",
    "backfill_page",
    "blp",
    "bulk_actions",
    "calendar_page",
    "change_pages",
    "dead_letter_pages",
    "form_pages",
    "history",
    "overview",
    "schedule_actions",
    "schedule_list_page",
    "schedule_page",
    "signing_page",
]
