"""The web console at ``/console``: overview, schedules, one schedule, create and edit."""

from scheduler_service.console.views import PREFIX, blp

__all__ = ["PREFIX", "blp"]
