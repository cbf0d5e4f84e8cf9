"""What every route of the API shares: its blueprint (arguments read from the body the request
parsed once, the error answers it declares), the application service, the page size of a
listing and the answer of a schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import flask_smorest
from flask import Response, current_app
from marshmallow import RAISE, Schema

from scheduler_service.presenting.schemas import ProblemSchema
from scheduler_service.presenting.views import (
    SCHEDULE_VIEW,
    ScheduleView,
    json_answer,
    schedule_view_of,
)
from scheduler_service.requests.bodies import BodyParser
from scheduler_service.roles import requires
from scheduler_service.service import ScheduleService
from shared.errors import InvalidInput
from shared.model import Schedule
from shared.ports import Role

# A view function, as a decorator of routes takes and gives it.
View = TypeVar("View", bound=Callable[..., Any])
PROBLEM = "application/problem+json"
# What each error answer a route declares means; 401, 429 and 503 apply to every route.
PROBLEMS = {
    400: "Invalid input: every bad field is named in errors",
    401: "No API key, or an unknown one",
    403: "The tenant's quota of schedules is reached",
    404: "No such schedule (unknown, deleted, or another tenant's)",
    409: "Idempotency-Key reused with another request",
    413: "Body over the size limit",
    415: "Body not JSON",
    429: "Over the tenant's rate limit; retry after Retry-After seconds",
    503: "A backend is unavailable; retry",
}
EVERY_ROUTE = (401, 429, 503)
# The header of an answer given again to a repeated Idempotency-Key.
REPLAYED = {
    "Idempotent-Replayed": {
        "description": "true when this answers an earlier request with the same Idempotency-Key",
        "schema": {"type": "string"},
    },
}
# The attribute of a route holding the reasons its 403 was declared for.
FORBIDDEN_REASONS = "forbidden_reasons"


class Blueprint(flask_smorest.Blueprint):  # type: ignore[misc]
    """flask-smorest's Blueprint, whose arguments are read by ``BodyParser`` and whose routes
    declare their error answers as RFC 7807 problems."""

    ARGUMENTS_PARSER = BodyParser()

    def problem(self, status: int, description: str) -> Any:
        """Declare one error answer a route can give."""
        return self.alt_response(
            status, schema=ProblemSchema, content_type=PROBLEM, description=description
        )

    def problems(self, *statuses: int) -> Any:
        """Declare the error answers a route can give, as ``PROBLEMS`` describes them."""

        def decorate(route: Any) -> Any:
            for status in sorted({*statuses, *EVERY_ROUTE}, reverse=True):
                if status == 403:
                    route = self.forbidden(PROBLEMS[403])(route)
                else:
                    route = self.problem(status, PROBLEMS[status])(route)
            return route

        return decorate

    def forbidden(self, reason: str) -> Any:
        """Declare one reason for a route's 403, beside those declared before: one answer
        whose description lists them all (flask-smorest would keep each declaration and show
        the first one's description only)."""

        def decorate(route: Any) -> Any:
            reasons = [*getattr(route, FORBIDDEN_REASONS, ()), reason]
            route = self.problem(403, "; or ".join(reasons))(route)
            responses = route._apidoc["response"]["responses"]
            responses[403] = responses[403][-1:]
            setattr(route, FORBIDDEN_REASONS, reasons)
            return route

        return decorate

    def requires(self, role: Role) -> Any:
        """Declare the role a route needs (``scheduler_service.roles``), in the OpenAPI
        document as ``x-required-role`` and, above ``read``, as a 403. Put it right under
        ``route``."""

        def decorate(route: Any) -> Any:
            route = self.doc(**{"x-required-role": role.value})(route)
            if role is not Role.READ:
                route = self.forbidden(
                    f"The API key's role is below {role.value} (required_role names the role)"
                )(route)
            return requires(role)(route)

        return decorate

    def posting(
        self,
        path: str,
        role: Role,
        body: type[Schema],
        answer: tuple[int, type[Schema]],
        operation_id: str,
        *problems: int,
        **arguments: Any,
    ) -> Any:
        """A ``POST`` of a JSON ``body`` by a caller of ``role``: a bad field is a 400 naming
        it, a body over the limit a 413, one not JSON a 415; ``answer`` its status and schema.
        ``arguments``: more of flask-smorest's ``arguments`` (``required=False``: the body may
        be left out)."""

        def decorate(route: Any) -> Any:
            route = self.problems(400, 413, 415, *problems)(route)
            route = self.doc(operationId=operation_id)(route)
            route = self.response(*answer)(route)
            route = self.arguments(body, error_status_code=400, **arguments)(route)
            route = self.requires(role)(route)
            return self.route(path, methods=["POST"])(route)

        return decorate

    def listing(
        self, path: str, query: type[Schema], page: type[Schema], operation_id: str, *problems: int
    ) -> Any:
        """A reader's ``GET`` of a paged listing: ``query`` its parameters (an unknown one is
        a 400), ``page`` its answer."""

        def decorate(route: Any) -> Any:
            route = self.problems(400, *problems)(route)
            route = self.doc(operationId=operation_id)(route)
            route = self.response(200, page)(route)
            route = self.arguments(query, location="query", unknown=RAISE, error_status_code=400)(
                route
            )
            route = self.requires(Role.READ)(route)
            return self.route(path, methods=["GET"])(route)

        return decorate


def service() -> ScheduleService:
    """The application service of the app that answers the request."""
    scheduler: ScheduleService = current_app.extensions["scheduler"]
    return scheduler


def page_size(query: dict[str, Any]) -> int:
    """A listing's ``limit``, or the default; ``InvalidInput`` naming it past the largest."""
    settings = service().settings
    limit: int = query.get("limit", settings.default_page_size)
    if limit > settings.max_page_size:
        raise InvalidInput({"limit": f"at most {settings.max_page_size}"})
    return limit


def present(schedule: Schedule) -> ScheduleView:
    """The schedule as clients see it, masked by the configured secret patterns."""
    scheduler = service()
    return schedule_view_of(
        schedule, scheduler.settings.secret_headers, scheduler.reads.next_fire_time(schedule)
    )


def schedule_answer(schedule: Schedule, status: int) -> Response:
    return json_answer(SCHEDULE_VIEW, present(schedule), status)
