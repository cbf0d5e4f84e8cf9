"""The web console at ``/console``: overview, schedules, one schedule, its history and its
changes, dead letters, create and edit, the signing secrets. Importing the page modules registers
their routes."""

from scheduler_service.console import (
    backfill_page,
    change_pages,
    dead_letter_pages,
    form_pages,
    history,
    overview,
    schedule_pages,
    signing_page,
)
from scheduler_service.console.pages import PREFIX, blp

__all__ = [
    "PREFIX",
    "backfill_page",
    "blp",
    "change_pages",
    "dead_letter_pages",
    "form_pages",
    "history",
    "overview",
    "schedule_pages",
    "signing_page",
]
