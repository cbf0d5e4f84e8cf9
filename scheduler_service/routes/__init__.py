"""The API's routes: one module a resource or part of one, each route parsing its request with
``scheduler_service.requests``, calling the application service (``scheduler_service.service``)
and answering through ``scheduler_service.presenting``; what they share is in ``common``.

The schedules' blueprint is ``schedules.blp``; ``actions``, ``history`` and ``preview`` add
their routes to it when imported, here, in the order the OpenAPI document lists them.
"""

from scheduler_service.routes import actions, dead_letters, history, preview, schedules

# The blueprints of the API's resources, as the app registers them.
BLUEPRINTS = (schedules.blp, dead_letters.blp)

__all__ = ["BLUEPRINTS", "actions", "history", "preview"]
