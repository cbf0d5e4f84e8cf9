"""Every error the API answers is RFC 7807 ``application/problem+json``, never a traceback."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, json
from werkzeug.exceptions import HTTPException

from scheduler_service.auth import AuthFailure
from scheduler_service.presenting.schemas import ProblemSchema
from scheduler_service.service.calendars import CalendarConflict, CalendarExists, NoCalendar
from scheduler_service.service.creating import IdempotencyConflict, QuotaExceeded
from scheduler_service.service.kept_answers import RETRY_AFTER_SECONDS, IdempotencyInProgress
from scheduler_service.service.running import NoDeadLetter, NotReplayable
from shared.errors import InvalidInput, NotFound, Transient
from shared.ports import MessageTooLarge
from shared.signing import RotationConflict

log = logging.getLogger(__name__)

# The shape of every error answer, as the OpenAPI document shows it.
PROBLEM = ProblemSchema()
# The field errors one answer lists at most.
MAX_LISTED_ERRORS = 50


def problem(
    status: int,
    title: str,
    detail: str | None = None,
    errors: list[dict[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
    required_role: str | None = None,
) -> Response:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    if detail:
        body["detail"] = detail
    if errors is not None:
        body["errors"] = errors
    if required_role is not None:
        body["required_role"] = required_role
    response = Response(
        json.dumps(PROBLEM.dump(body)), status=status, mimetype="application/problem+json"
    )
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def flatten(messages: Any, prefix: str = "") -> list[dict[str, str]]:
    """Marshmallow's nested messages → ``[{"field": "schedule.cron", "message": "…"}]``."""
    if isinstance(messages, Mapping):
        found: list[dict[str, str]] = []
        for key, value in messages.items():
            name = prefix if key == "_schema" else f"{prefix}.{key}" if prefix else str(key)
            found.extend(flatten(value, name))
        return found
    if isinstance(messages, list | tuple):
        if all(isinstance(item, str) for item in messages):
            return [{"field": prefix or "body", "message": str(item)} for item in messages]
        found = []
        for item in messages:
            found.extend(flatten(item, prefix))
        return found
    return [{"field": prefix or "body", "message": str(messages)}]


def invalid(errors: list[dict[str, str]]) -> Response:
    """A 400 naming the bad fields: the first ``MAX_LISTED_ERRORS`` of them (a body of
    thousands of unknown members would otherwise get an answer several times its size)."""
    listed = errors[:MAX_LISTED_ERRORS]
    fields = ", ".join(sorted({error["field"] for error in listed}))
    more = len(errors) - len(listed)
    if more:
        fields += f" (and {more} more errors)"
    return problem(400, "Invalid request", f"invalid fields: {fields}", listed)


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        data = getattr(exc, "data", None) or {}
        messages = data.get("messages") if isinstance(data, Mapping) else None
        if status in (400, 422) and messages is not None:
            # webargs reports {"json": {...}}, {"query": {...}}, {"headers": {...}}: name the
            # fields, not where they were.
            flat: list[dict[str, str]] = []
            for value in messages.values():
                flat.extend(flatten(value))
            return invalid(flat)
        detail = data.get("message") if isinstance(data, Mapping) else None
        return problem(status, exc.name, detail or exc.description)

    @app.errorhandler(InvalidInput)
    def invalid_input(exc: InvalidInput) -> Response:
        return invalid(
            [
                {"field": name, "message": message}
                for name, messages in exc.fields.items()
                for message in messages
            ]
        )

    @app.errorhandler(AuthFailure)
    def unauthorized(exc: AuthFailure) -> Response:
        return problem(
            401,
            "Unauthorized",
            str(exc),
            headers={"WWW-Authenticate": 'Bearer realm="scheduler"'},
        )

    @app.errorhandler(QuotaExceeded)
    def over_quota(exc: QuotaExceeded) -> Response:
        return problem(403, "Quota exceeded", str(exc))

    @app.errorhandler(IdempotencyConflict)
    @app.errorhandler(NotReplayable)
    @app.errorhandler(RotationConflict)
    @app.errorhandler(CalendarExists)
    @app.errorhandler(CalendarConflict)
    def conflict(
        exc: IdempotencyConflict
        | NotReplayable
        | RotationConflict
        | CalendarExists
        | CalendarConflict,
    ) -> Response:
        return problem(409, "Conflict", str(exc))

    @app.errorhandler(IdempotencyInProgress)
    def in_progress(exc: IdempotencyInProgress) -> Response:
        return problem(409, "Conflict", str(exc), headers={"Retry-After": str(RETRY_AFTER_SECONDS)})

    @app.errorhandler(NoCalendar)
    def no_calendar(exc: NoCalendar) -> Response:
        return problem(404, "Not Found", f"no calendar {exc.args[0]!r}")

    @app.errorhandler(NoDeadLetter)
    def no_dead_letter(exc: NoDeadLetter) -> Response:
        return problem(404, "Not Found", f"no dead letter {exc.args[0]!r}")

    @app.errorhandler(NotFound)
    def not_found(exc: NotFound) -> Response:
        return problem(404, "Not Found", f"no schedule {exc.args[0]!r}" if exc.args else None)

    @app.errorhandler(MessageTooLarge)
    def too_large_for_the_queue(exc: MessageTooLarge) -> Response:
        reason = f"the schedule is {exc.size} bytes as queued; the queue takes {exc.limit}"
        return problem(413, "Payload Too Large", reason, [{"field": "body", "message": reason}])

    @app.errorhandler(Transient)
    def unavailable(exc: Transient) -> Response:
        log.warning("backend unavailable: %s", exc, extra={"event": "transient_error"})
        return problem(
            503,
            "Service Unavailable",
            "a backend is unavailable; retry",
            headers={"Retry-After": "1"},
        )

    @app.errorhandler(Exception)
    def unexpected(exc: Exception) -> Response:
        log.exception("unhandled error", extra={"event": "unhandled_error"})
        return problem(500, "Internal Server Error", "an unexpected error; it has been logged")
