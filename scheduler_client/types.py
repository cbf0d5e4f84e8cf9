"""The API's answers as typed dictionaries (as documented in ``/openapi.json``).

They are plain ``dict`` at run time: a field the API adds later is kept, not refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict


class ScheduleFilters(TypedDict, total=False):
    """What ``list`` and ``list_page`` select, as ``GET /schedules`` names it (``search``: its
    ``?q=``); ``None`` leaves one out."""

    status: str | None
    name: str | None
    tag: str | None
    next_after: str | None
    next_before: str | None
    search: str | None
    sort: str | None
    limit: int | None


class ExecutionFilters(TypedDict, total=False):
    """What ``executions`` and ``executions_page`` select: the records in ``status`` (``skipped``
    lists the superseded ones too), ``limit`` a page; ``None`` leaves one out."""

    status: str | None
    limit: int | None


class WriteOptions(TypedDict, total=False):
    """How ``create``, ``replace`` and ``update`` send a schedule: under ``idempotency_key``, its
    webhook calls continuing the W3C trace ``traceparent`` (with its ``tracestate``; without, the
    service starts one: docs/tracing.md); ``None`` leaves one out."""

    idempotency_key: str | None
    traceparent: str | None
    tracestate: str | None


class CalendarDays(TypedDict, total=False):
    """The days of a calendar ``create_calendar`` and ``replace_calendar`` send: its ``dates``
    (``YYYY-MM-DD``) or an iCalendar file's text (``ics``), one of the two, and what it is
    (``description``, empty unless given)."""

    dates: Sequence[str] | None
    ics: str | None
    description: str


class BulkOptions(TypedDict, total=False):
    """What ``bulk`` and ``bulk_part`` send beside the action and selector: the ``patch`` of a
    ``patch`` action, and the ``Idempotency-Key`` of each part."""

    patch: Mapping[str, Any] | None
    idempotency_key: str | None


class TimePair(TypedDict):
    utc: str
    local: str


class Accepted(TypedDict):
    id: str
    status: str
    revision: int
    next_schedule_time: str | None
    next_schedule_time_local: str | None


class BulkSelector(TypedDict, total=False):
    """Which schedules a bulk operation acts on (``POST /schedules/bulk``): every criterion
    given holds; at least one is required."""

    tag: str
    name_prefix: str
    ids: list[str]
    status: str
    search: str


class BulkFailure(TypedDict):
    id: str
    reason: str


class BulkDone(TypedDict):
    """What a bulk operation did: one part's answer (``bulk_part``), or every part's summed
    (``bulk``, whose ``continue`` is then ``None``, ``done`` true and ``parts`` how many)."""

    done: bool
    matched: int
    changed: int
    unchanged: int
    failed: int
    changed_ids: list[str]
    unchanged_ids: list[str]
    failures: list[BulkFailure]
    parts: NotRequired[int]


class BulkDryRun(TypedDict):
    matched: int
    sample: list[Schedule]


class Comparison(TypedDict):
    """What a replace would do (``diff``): ``action`` is ``create``, ``update`` or
    ``unchanged``; ``changes`` the paths an update changes (``payload.url``)."""

    id: str
    action: str
    changes: list[str]


class Deleted(TypedDict):
    id: str
    status: str


class Triggered(TypedDict):
    id: str
    occurrence_id: str
    scheduled_time: str
    status: str


class LeftOut(TypedDict):
    occurrence_id: str
    reason: str


class Backfilled(TypedDict):
    id: str
    policy: str
    queued: list[str]
    left_out: list[LeftOut]


class DeadLetter(TypedDict):
    id: str
    schedule_id: str
    occurrence_id: str
    scheduled_time: str
    failed_at: str | None
    attempts: int
    http_status: int | None
    error: str | None
    manual: bool


class Replayed(TypedDict):
    id: str
    schedule_id: str
    status: str
    attempt: int


class Discarded(TypedDict):
    id: str
    status: str


class Preview(TypedDict):
    occurrences: list[TimePair]
    description: str


class Every(TypedDict):
    number: int
    unit: str  # second, minute, hour, day, week, month, year


class Timing(TypedDict):
    """When it fires, canonically: one of ``at``, ``interval``, ``cron``, ``rrule`` set; times
    as instants (``…Z``)."""

    timezone: str
    at: str | None
    interval: Every | None
    cron: str | None
    rrule: str | None
    start: str | None
    end: str | None
    max_occurrences: int | None


class OAuthClientCredentials(TypedDict):
    """An HTTP target's token: OAuth 2.0 client credentials."""

    type: Literal["oauth2_client_credentials"]
    token_url: str
    client_id: str
    client_secret: str  # masked in every answer
    scopes: list[str]
    client_auth: str  # basic or body


class JsonCheck(TypedDict):
    pointer: str  # RFC 6901, e.g. /status
    equals: Any


class Expect(TypedDict):
    """What answer of an HTTP target is a success (others fail, and are retried)."""

    status: list[int | str]  # statuses and classes, e.g. [200, "3xx"]
    json: NotRequired[JsonCheck]
    body_contains: NotRequired[str]


class HttpPayload(TypedDict):
    """A webhook call (``kind`` ``http``, the default)."""

    kind: Literal["http"]
    method: str
    url: str
    headers: dict[str, str]  # secret values masked
    queryParameters: dict[str, str | list[str]]
    body: Any
    timeout_seconds: float
    calls_per_host: NotRequired[int]
    auth: NotRequired[OAuthClientCredentials]
    expect: NotRequired[Expect]


class QueuePayload(TypedDict):
    """A message on the user's SQS queue (``kind`` ``sqs``)."""

    kind: Literal["sqs"]
    queue_url: str
    body: Any  # None: the occurrence in JSON
    timeout_seconds: float
    message_group_id: NotRequired[str]  # FIFO; default: the schedule id
    message_deduplication_id: NotRequired[str]  # FIFO; default: the occurrence id
    role_arn: NotRequired[str]
    calls_per_host: NotRequired[int]


class TopicPayload(TypedDict):
    """A publish to the user's SNS topic (``kind`` ``sns``)."""

    kind: Literal["sns"]
    topic_arn: str
    body: Any  # None: the occurrence in JSON
    timeout_seconds: float
    message_group_id: NotRequired[str]
    message_deduplication_id: NotRequired[str]
    role_arn: NotRequired[str]
    calls_per_host: NotRequired[int]


# A schedule's delivery target, told apart by ``kind``.
Payload = HttpPayload | QueuePayload | TopicPayload


class FailureHook(TypedDict):
    url: str
    headers: dict[str, str]  # secret values masked


class Alert(TypedDict):
    late_after_seconds: int  # an occurrence not started this long after its time is late


class CalendarRule(TypedDict):
    """A schedule's ``calendar``: the tenant's calendars it excludes, and what an occurrence on
    a day off does (``skip``, ``next_business_day``, ``previous_business_day``)."""

    exclude: list[str]
    shift: str


class CalendarSummary(TypedDict):
    name: str
    description: str
    revision: int
    updated_at: str
    date_count: int
    first_date: str | None
    last_date: str | None


class Calendar(CalendarSummary):
    dates: list[str]  # YYYY-MM-DD, sorted


class CalendarList(TypedDict):
    items: list[CalendarSummary]


class Schedule(TypedDict):
    id: str
    name: str
    description: str
    schedule_description: str
    type: str
    status: str
    revision: int
    schedule: dict[str, Any]
    timing: Timing
    timezone: str
    next_schedule_time: str | None
    next_schedule_time_local: str | None
    payload: Payload
    metadata: dict[str, Any]
    tags: list[str]
    priority: int
    retry: dict[str, Any]
    misfire: dict[str, Any]
    pause_after_failures: int | None
    on_failure: FailureHook | None
    overlap: str  # "allow", "skip" or "buffer_one"
    alert: Alert | None  # occurrence.late and occurrence.missed told at on_failure
    managed_by: str | None  # what keeps it (``scheduler apply``'s label); None: by hand
    calendar: CalendarRule | None  # business days only
    runs: int
    superseded: int
    failures: int
    consecutive_failures: int
    paused_by: str | None  # "user" or "failures" while paused
    paused_at: str | None
    paused_reason: str | None
    paused_until: str | None  # while paused: when it resumes by itself
    pause_note: str | None
    pause_set_by: str | None  # the API key's name and id, "console" or "system"
    skips: list[str]  # the occurrences still to come that it skips, earliest first
    occurrences_sent: int  # sent to the executors, ahead of their time included; not runs
    last_run_at: str | None
    last_status: str | None
    created_at: str
    updated_at: str
    trace_id: str | None  # the W3C trace its calls continue (docs/tracing.md)


class Execution(TypedDict):
    occurrence_id: str
    schedule_id: str
    scheduled_time: str
    status: str
    attempts: int
    http_status: int | None
    duration_ms: float | None
    # How late the first attempt's request was sent after scheduled_time (jitter included in
    # it: jitter_ms); later attempts keep it, their delay is retry_delay_ms.
    lateness_ms: float | None
    retry_delay_ms: float | None
    jitter_ms: float | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    next_attempt_at: str | None
    manual: bool
    superseded: bool  # skipped before its call by a change, pause or delete: not a run


class Attempt(TypedDict):
    number: int
    status: str
    started_at: str | None
    finished_at: str
    duration_ms: float | None
    http_status: int | None
    error: str | None
    response_status_line: str | None
    response_excerpt: str | None
    response_truncated: bool


class SchedulePage(TypedDict):
    items: list[Schedule]
    next_cursor: str | None


class ExecutionPage(TypedDict):
    items: list[Execution]
    next_cursor: str | None
    schedule_status: str  # deleted once the schedule is
    paused_by: str | None
    paused_at: str | None
    paused_reason: str | None


class ChangeActor(TypedDict):
    kind: str  # api_key, console or system
    key_id: str | None
    name: str | None


class FieldChange(TypedDict):
    path: str  # payload.url, schedule.cron, state …
    old: Any
    new: Any
    secret: bool  # masked both sides: it changed, its value is never shown


class Change(TypedDict):
    at: str
    action: str  # create, replace, patch, pause, resume, skip, delete, automatic_pause, replay
    revision: int | None
    actor: ChangeActor
    fields: list[FieldChange]


class ChangePage(TypedDict):
    items: list[Change]
    next_cursor: str | None
    schedule_status: str  # deleted once the schedule is


class DeadLetterPage(TypedDict):
    items: list[DeadLetter]
    next_cursor: str | None


class Occurrence(Execution):
    """One occurrence's record with the attempts it keeps, oldest first."""

    attempt_log: list[Attempt]


class SigningSecret(TypedDict):
    id: str
    created_at: str | None
    state: str
    retires_at: str | None
    current_from: str | None


class SigningSecretList(TypedDict):
    items: list[SigningSecret]


class Rotation(TypedDict):
    id: str
    secret: str
    created_at: str
    current_from: str | None
    items: list[SigningSecret]
