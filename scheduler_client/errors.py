"""What a call can raise: an answer of the API that is an error (a problem document, RFC 7807),
or no answer at all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SchedulerClientError(Exception):
    """Every error this client raises."""


class ConnectionFailed(SchedulerClientError):
    """No answer: the server could not be reached, or did not answer within the timeout.
    ``reason`` says why in a few words (``[Errno 111] Connection refused``, ``timed out``)."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class FieldError:
    """One bad field of a request, e.g. ``FieldError("schedule.cron", "…")``."""

    field: str
    message: str


class ApiError(SchedulerClientError):
    """The API answered an error; its problem document's fields are attributes."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        self.type: str = str(problem.get("type", "about:blank"))
        self.title: str = str(problem.get("title", ""))
        self.detail: str | None = problem.get("detail")
        self.errors: list[FieldError] = [
            FieldError(str(item.get("field", "")), str(item.get("message", "")))
            for item in problem.get("errors") or []
            if isinstance(item, dict)
        ]
        summary = f"{status} {self.title}".strip()
        if self.detail:
            summary += f": {self.detail}"
        super().__init__(summary)

    def messages_for(self, field: str) -> list[str]:
        """The messages about one field (``"schedule.cron"``)."""
        return [error.message for error in self.errors if error.field == field]


class InvalidRequest(ApiError):
    """400: the request is invalid; ``errors`` names every bad field."""


class Unauthorized(ApiError):
    """401: no API key where one is needed, or an unknown one."""


class QuotaExceeded(ApiError):
    """403: the tenant's quota of schedules is reached."""


class Forbidden(ApiError):
    """403: the API key's role may not do this; ``required_role`` (``write`` or ``admin``)
    is the role it needs."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(status, problem)
        self.required_role: str = str(problem["required_role"])


class NotFound(ApiError):
    """404: no such schedule (unknown, deleted, or another tenant's)."""


class Conflict(ApiError):
    """409: an Idempotency-Key reused with another request, or still held by a first request
    with it after the retries (its answer carries ``Retry-After``)."""


class ServiceUnavailable(ApiError):
    """503: a backend of the service is unavailable (after this client's retries)."""


ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: QuotaExceeded,
    404: NotFound,
    409: Conflict,
    503: ServiceUnavailable,
}


def api_error(status: int, problem: dict[str, Any]) -> ApiError:
    if status == 403 and "required_role" in problem:
        return Forbidden(status, problem)
    return ERRORS_BY_STATUS.get(status, ApiError)(status, problem)
