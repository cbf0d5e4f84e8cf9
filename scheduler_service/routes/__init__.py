"""The API's routes: one module a resource or part of one (and ``health``, ``metrics``,
``docs`` for operators), each route parsing its request with
``scheduler_service.requests``, calling the application service (``scheduler_service.service``)
and answering through ``scheduler_service.presenting``; what they share is in ``common``.

The schedules' blueprint is ``schedules.blp``; ``actions``, ``bulk``, ``changes``,
``diff``, ``history`` and ``preview`` add their routes to it when imported, here, in the
order the OpenAPI document lists them.
"""

from scheduler_service.routes import (
    actions,
    bulk,
    calendars,
    changes,
    dead_letters,
    diff,
    health,
    history,
    metrics,
    preview,
    schedules,
    signing_secrets,
)

# The blueprints the OpenAPI document shows, in its order. (``docs`` serves Swagger UI's files.)
BLUEPRINTS = (
    schedules.blp,
    dead_letters.blp,
    signing_secrets.blp,
    calendars.blp,
    health.blp,
    metrics.blp,
)

__all__ = ["BLUEPRINTS", "actions", "bulk", "changes", "diff", "history", "preview"]
