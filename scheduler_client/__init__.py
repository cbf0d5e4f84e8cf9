"""A typed Python client of the scheduler's HTTP API.

from scheduler_client import SchedulerClient

client = SchedulerClient("http://127.0.0.1:8080", api_key="sk_…")
accepted = client.create({"name": "hello", "schedule": {"cron": "@every 10s"},
                          "payload": {"method": "GET", "url": "https://example.com/"}})
for schedule in client.list(status="active"):
    print(schedule["id"], schedule["next_schedule_time"])
page = client.list_page(limit=50)  # one page; client.list_page(cursor=page["next_cursor"]) next
"""

from scheduler_client.client import SchedulerClient, api_base
from scheduler_client.errors import (
    ApiError,
    Conflict,
    ConnectionFailed,
    FieldError,
    InvalidRequest,
    NotFound,
    QuotaExceeded,
    SchedulerClientError,
    ServiceUnavailable,
    Unauthorized,
)
from scheduler_client.types import (
    Accepted,
    Attempt,
    Backfilled,
    DeadLetter,
    DeadLetterPage,
    Deleted,
    Discarded,
    Every,
    Execution,
    ExecutionPage,
    FailureHook,
    Occurrence,
    Preview,
    Replayed,
    Rotation,
    Schedule,
    ScheduleFilters,
    SchedulePage,
    SigningSecret,
    TimePair,
    Timing,
    Triggered,
)

__all__ = [
    "Accepted",
    "ApiError",
    "Attempt",
    "Backfilled",
    "Conflict",
    "ConnectionFailed",
    "DeadLetter",
    "DeadLetterPage",
    "Deleted",
    "Discarded",
    "Every",
    "Execution",
    "ExecutionPage",
    "FailureHook",
    "FieldError",
    "InvalidRequest",
    "NotFound",
    "Occurrence",
    "Preview",
    "QuotaExceeded",
    "Replayed",
    "Rotation",
    "Schedule",
    "ScheduleFilters",
    "SchedulePage",
    "SchedulerClient",
    "SchedulerClientError",
    "ServiceUnavailable",
    "SigningSecret",
    "TimePair",
    "Timing",
    "Triggered",
    "Unauthorized",
    "api_base",
]
