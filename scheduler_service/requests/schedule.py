"""Marshmallow schemas: a request body becomes a ``ScheduleDefinition``; nothing else sees JSON.

Two shapes of the ``schedule`` object are accepted:
- the blueprint's: ``start_date`` (MM/DD/YYYY), ``end_date``, ``timeZone``, ``time_of_day``,
  ``am_pm``, ``repeat_interval {number, unit}`` — no ``repeat_interval`` means once;
- the canonical one: exactly one of ``at``, ``interval``, ``cron``, ``rrule``, with ``timezone``,
  ``start``, ``end``, ``max_occurrences``.
"""

from __future__ import annotations

import functools
import json
import re
import zoneinfo
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import current_app, has_app_context
from marshmallow import (
    EXCLUDE,
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from shared.errors import InvalidInput
from shared.model import (
    Every,
    FailureHook,
    Misfire,
    MisfirePolicy,
    Payload,
    RetryPolicy,
    ScheduleDefinition,
    Timing,
    Unit,
)
from shared.timeutil import UTC, load_zone, parse_iso, utc_ms

# \Z, not $: "$" also matches before a final newline.
SCHEDULE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]{0,127}\Z")


class OneOfAnyCase(validate.OneOf):
    """``OneOf`` in any letter case; the OpenAPI enum lists each choice once (upper case), so
    generated clients get no duplicate values."""

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or value.upper() not in self.choices:
            raise ValidationError(self._format_error(value))
        return value


HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "idempotency-key",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
SEED_FIELDS = ("start_date", "end_date", "timeZone", "time_of_day", "am_pm", "repeat_interval")
CANONICAL_FORMS = ("at", "interval", "cron", "rrule")
SEED_NAMES = {
    "timezone": "timeZone",
    "at": "start_date",
    "interval": "repeat_interval",
    "start": "start_date",
    "end": "end_date",
}


# Times a schedule may name. Past 9000 a local time with its zone's offset no longer fits in a
# datetime; before 1970 nothing can be scheduled. A schedule without an end simply omits it.
FIRST_YEAR, LAST_YEAR = 1970, 9000


def _year_in_range(year: int) -> None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValidationError(
            f"the year must be between {FIRST_YEAR} and {LAST_YEAR} (for no end, leave it out)"
        )


# What an ISO-8601 date-time may hold: ASCII digits, separators, a designator; nothing after
# (Python's parser would let a trailing NUL through).
ISO_TEXT = re.compile(r"\d{4}-[\d\-W]+(?:[T ][\d:.,+\-]*[Zz]?)?", re.ASCII)


class DateTimeText(fields.String):
    """An ISO-8601 date-time, loaded as a ``datetime``: naive for a wall time in the schedule's
    timezone, aware for an instant. A ``String`` to marshmallow and to the OpenAPI document."""

    # marshmallow types a String's value as str; this one turns the text into a datetime.
    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> datetime:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            if not ISO_TEXT.fullmatch(text):
                raise ValueError(text)
            moment = parse_iso(text)
        except ValueError:
            raise ValidationError(
                "not an ISO-8601 date-time (e.g. 2026-12-01T09:00:00 for local time in the "
                "schedule's timezone, or 2026-12-01T09:00:00Z)"
            ) from None
        _year_in_range(moment.year)
        return moment


class InstantText(DateTimeText):
    """An ISO-8601 date-time with its offset, loaded as an aware UTC ``datetime`` (to the
    millisecond, as every store keeps it)."""

    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> datetime:
        moment = super()._deserialize(value, attr, data, **kwargs)
        if moment.tzinfo is None:
            raise ValidationError("an instant with its offset, e.g. 2026-05-01T09:00:00Z")
        return utc_ms(moment.astimezone(UTC))


@functools.cache
def region_zones() -> frozenset[str]:
    """The IANA zone names a schedule may use: the tz database's zones and links, without the
    files that are not zones of a region (``localtime``, ``posixrules``, ``Factory``) nor the
    ``posix/`` and ``right/`` (leap-second) copies."""
    return frozenset(
        name
        for name in zoneinfo.available_timezones()
        if name not in {"localtime", "posixrules", "Factory"}
        and not name.startswith(("posix/", "right/"))
    )


def _zone_name(value: str) -> None:
    if value not in region_zones():
        raise ValidationError(
            f"unknown time zone {value[:64]!r}: give an IANA name such as 'Europe/Paris' or 'UTC'"
        )
    try:
        load_zone(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class UnitName(fields.String):
    """A unit of time in any letter case, singular or plural, loaded as a ``Unit``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> Unit:
        try:
            return Unit.parse(super()._deserialize(value, attr, data, **kwargs))
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


class WholeNumber(fields.Integer):
    """A JSON integer: not a string of digits, not a float, and not ``true``/``false``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, bool):
            raise self.make_error("invalid")
        number: int = super()._deserialize(value, attr, data, **kwargs)
        return number


class JsonNumber(fields.Float):
    """A JSON number: not a string of digits, and not ``true``/``false``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.make_error("invalid")
        try:
            number: float = super()._deserialize(value, attr, data, **kwargs)
        except OverflowError:
            raise self.make_error("too_large") from None
        return number


# The most occurrences a schedule may be limited to: far beyond any real need, and small enough
# for every store to keep as a 64-bit integer.
MAX_OCCURRENCES = 1_000_000_000


class IntervalSchema(Schema):
    class Meta:
        unknown = RAISE

    number = WholeNumber(
        required=True,
        validate=validate.Range(min=1, max=1_000_000, error="must be a whole number from 1"),
    )
    unit = UnitName(required=True)


class ScheduleSpecSchema(Schema):
    """The ``schedule`` object, in either shape (see the module docstring)."""

    class Meta:
        unknown = RAISE

    # The blueprint's shape.
    start_date = fields.String(metadata={"description": "MM/DD/YYYY, local date of the first run"})
    end_date = fields.String(metadata={"description": "MM/DD/YYYY, last local date (inclusive)"})
    timeZone = fields.String(validate=_zone_name)
    time_of_day = fields.String(metadata={"description": "hh:mm, with am_pm, or HH:MM (24 h)"})
    am_pm = fields.String(validate=OneOfAnyCase(["AM", "PM"]))
    repeat_interval = fields.Nested(IntervalSchema)
    # The canonical shape.
    timezone = fields.String(validate=_zone_name, metadata={"description": "IANA zone"})
    at = DateTimeText(metadata={"description": "one time, ISO-8601"})
    interval = fields.Nested(IntervalSchema)
    cron = fields.String(validate=validate.Length(min=1, max=200))
    rrule = fields.String(validate=validate.Length(min=1, max=2000))
    start = DateTimeText()
    end = DateTimeText()
    max_occurrences = WholeNumber(
        validate=validate.Range(
            min=1, max=MAX_OCCURRENCES, error=f"a whole number from 1 to {MAX_OCCURRENCES:,}"
        )
    )
    # Either shape: what a one-time schedule whose time has passed does.
    fire_if_past = fields.Boolean(
        truthy={True},
        falsy={False},
        metadata={
            "description": "a one-time schedule (at, an EventBridge at(…), or start_date "
            "without repeat_interval) whose time has already passed fires once, at once; "
            "without it, a time more than SCHEDULER_MISFIRE_THRESHOLD_SECONDS (5) in the past "
            "is a 400 naming it"
        },
    )

    @validates_schema
    def one_shape(self, data: dict[str, Any], **_: Any) -> None:
        seed = [name for name in SEED_FIELDS if name in data]
        forms = [name for name in CANONICAL_FORMS if name in data]
        one_time = (
            "at" in data
            or str(data.get("cron", "")).strip().lower().startswith("at(")
            or (seed and "repeat_interval" not in data)
        )
        if "fire_if_past" in data and not one_time:
            raise ValidationError(
                "only for a one-time schedule (at, an EventBridge at(…), or start_date without "
                "repeat_interval)",
                "fire_if_past",
            )
        if seed:
            mixed = [
                name
                for name in ("timezone", "start", "end", "max_occurrences", *CANONICAL_FORMS)
                if name in data
            ]
            if mixed:
                raise ValidationError(
                    f"cannot be combined with the start_date/time_of_day form ({', '.join(seed)})",
                    mixed[0],
                )
            missing = [
                name for name in ("start_date", "timeZone", "time_of_day") if name not in data
            ]
            if missing:
                raise ValidationError(
                    {name: ["Missing data for required field."] for name in missing}
                )
            return
        if len(forms) != 1:
            message = (
                f"give exactly one of {', '.join(CANONICAL_FORMS)} (got {', '.join(forms)})"
                if forms
                else f"give one of {', '.join(CANONICAL_FORMS)}, or start_date + time_of_day"
            )
            raise ValidationError(message, forms[1] if len(forms) > 1 else "_schema")

    @post_load
    def to_timing(self, data: dict[str, Any], **_: Any) -> tuple[Timing, dict[str, str]]:
        """The domain timing, and how its fields are named in the body (for error messages)."""
        if "start_date" in data:
            return seed_timing(data), SEED_NAMES
        interval = data.get("interval")
        timing = Timing(
            timezone=data.get("timezone", "UTC"),
            at=data.get("at"),
            interval=Every(interval["number"], interval["unit"]) if interval else None,
            cron=data.get("cron"),
            rrule=data.get("rrule"),
            start=data.get("start"),
            end=data.get("end"),
            max_occurrences=data.get("max_occurrences"),
        )
        return timing, {}


def _seed_date(value: str, name: str) -> date:
    try:
        day = datetime.strptime(value.strip(), "%m/%d/%Y").date()
    except ValueError:
        raise ValidationError("a date as MM/DD/YYYY, e.g. 05/02/2024", name) from None
    try:
        _year_in_range(day.year)
    except ValidationError as exc:
        raise ValidationError(exc.messages, name) from None
    return day


def _seed_time(value: str, am_pm: str | None) -> time:
    text = value.strip()
    try:
        if am_pm:
            return datetime.strptime(f"{text} {am_pm.upper()}", "%I:%M %p").time()
        return datetime.strptime(text, "%H:%M").time()
    except ValueError:
        expected = "hh:mm from 01:00 to 12:59 with am_pm" if am_pm else "HH:MM (24 h) or add am_pm"
        raise ValidationError(
            f"not a time of day: {value!r}; expected {expected}", "time_of_day"
        ) from None


def seed_timing(data: dict[str, Any]) -> Timing:
    """The blueprint's form: start at ``start_date`` + ``time_of_day`` local, repeat from there,
    stop after the end of ``end_date`` local; no ``repeat_interval`` means once."""
    errors: dict[str, Any] = {}

    def read(parse: Callable[..., Any], *args: Any) -> Any:
        try:
            return parse(*args)
        except ValidationError as exc:
            errors[exc.field_name] = exc.messages
            return None

    start_day = read(_seed_date, data["start_date"], "start_date")
    at_time = read(_seed_time, data["time_of_day"], data.get("am_pm"))
    end_day = read(_seed_date, data["end_date"], "end_date") if "end_date" in data else None
    if start_day is not None and end_day is not None and end_day < start_day:
        errors["end_date"] = ["end_date is before start_date"]
    if errors:
        raise ValidationError(errors)
    anchor = datetime.combine(start_day, at_time)
    end = None
    if end_day is not None:
        end = datetime.combine(end_day + timedelta(days=1), time()) - timedelta(milliseconds=1)
    interval = data.get("repeat_interval")
    if interval is None:
        return Timing(timezone=data["timeZone"], at=anchor, end=end)
    return Timing(
        timezone=data["timeZone"],
        interval=Every(interval["number"], interval["unit"]),
        start=anchor,
        end=end,
    )


# The widest jitter window: with the default look-ahead (300 s) an occurrence is still sent
# within SQS's longest delay (900 s) of its firing.
MAX_JITTER_SECONDS = 600

# The most failed occurrences in a row a schedule may wait for before it pauses itself.
MAX_PAUSE_AFTER_FAILURES = 1000

# Limits of the call a schedule makes; each excess is a 400 naming the field.
MAX_URL_LENGTH = 2048
MAX_HEADERS = 50
MAX_HEADER_VALUE_LENGTH = 8192
MAX_QUERY_PARAMETERS = 100
MAX_QUERY_VALUE_LENGTH = 2048
MAX_METADATA_BYTES = 16 * 1024
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _http_url(value: str) -> None:
    if _CONTROL.search(value) or " " in value:
        raise ValidationError("the URL has spaces or control characters; percent-encode them")
    try:
        parts = urlsplit(value)
        _ = parts.port  # ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise ValidationError(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValidationError("must be an http:// or https:// URL")
    if not parts.hostname:
        raise ValidationError("the URL has no host")
    if parts.username or parts.password:
        raise ValidationError("credentials in the URL are not allowed; use headers")


def _method(value: str) -> None:
    if value.upper() not in METHODS:
        raise ValidationError(f"unknown method {value!r}; use one of {', '.join(METHODS)}")


def _headers(value: dict[str, Any]) -> None:
    # Messages name a header, never its value (it may be a secret).
    if len(value) > MAX_HEADERS:
        raise ValidationError(f"at most {MAX_HEADERS} headers")
    for name, header in value.items():
        if not HEADER_NAME.match(name):
            raise ValidationError(f"invalid header name {name[:64]!r}")
        if name.lower() in RESERVED_HEADERS:
            raise ValidationError(f"header {name!r} is set by the scheduler")
        if not isinstance(header, str) or _CONTROL.search(header):
            raise ValidationError(f"header {name!r} must be a single-line string")
        if len(header) > MAX_HEADER_VALUE_LENGTH:
            raise ValidationError(
                f"header {name!r} is longer than {MAX_HEADER_VALUE_LENGTH} characters"
            )
        try:
            header.encode("latin-1")
        except UnicodeEncodeError:
            raise ValidationError(
                f"header {name!r} has characters HTTP headers cannot carry (use ASCII)"
            ) from None


def _query(value: dict[str, Any]) -> None:
    if len(value) > MAX_QUERY_PARAMETERS:
        raise ValidationError(f"at most {MAX_QUERY_PARAMETERS} query parameters")
    for name, item in value.items():
        if len(name) > 256:
            raise ValidationError("a query parameter name is longer than 256 characters")
        items = item if isinstance(item, list) else [item]
        if len(items) > MAX_QUERY_PARAMETERS:
            raise ValidationError(f"query parameter {name!r} has too many values")
        for element in items:
            if not isinstance(element, str | int | float | bool) or element is None:
                raise ValidationError(f"query parameter {name!r} must be a string or number")
            if len(str(element)) > MAX_QUERY_VALUE_LENGTH:
                raise ValidationError(f"query parameter {name!r} has a value over 2048 chars")


def _metadata(value: dict[str, Any]) -> None:
    size = len(json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if size > MAX_METADATA_BYTES:
        raise ValidationError(f"at most {MAX_METADATA_BYTES} bytes of JSON (got {size})")


class PayloadSchema(Schema):
    class Meta:
        unknown = RAISE

    method = fields.String(required=True, validate=_method)
    url = fields.String(
        required=True, validate=[validate.Length(min=1, max=MAX_URL_LENGTH), _http_url]
    )
    headers = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=_headers
    )
    queryParameters = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=_query
    )
    body = fields.Raw(allow_none=True, load_default=None)
    timeout_seconds = JsonNumber(
        load_default=10.0, validate=validate.Range(min=0.001, max=300, min_inclusive=True)
    )
    calls_per_host = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=validate.Range(1, 1000),
        metadata={
            "description": "At most this many calls in flight to the URL's host "
            "(default: the executor's SCHEDULER_EXECUTOR_CALLS_PER_HOST)."
        },
    )

    @post_load
    def to_payload(self, data: dict[str, Any], **_: Any) -> Payload:
        query = {
            name: [str(v) for v in value] if isinstance(value, list) else str(value)
            for name, value in data["queryParameters"].items()
        }
        return Payload(
            method=data["method"].upper(),
            url=data["url"],
            headers=dict(data["headers"]),
            query=query,
            body=data["body"],
            timeout_seconds=data["timeout_seconds"],
            calls_per_host=data["calls_per_host"],
        )


class FailureHookSchema(Schema):
    class Meta:
        unknown = RAISE

    url = fields.String(
        required=True, validate=[validate.Length(min=1, max=MAX_URL_LENGTH), _http_url]
    )
    headers = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=_headers
    )

    @post_load
    def to_hook(self, data: dict[str, Any], **_: Any) -> FailureHook:
        return FailureHook(url=data["url"], headers=dict(data["headers"]))


class FailureHookField(fields.Field[FailureHook]):
    """``on_failure``: a URL, or ``{"url": …, "headers": {…}}``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> FailureHook:
        if isinstance(value, str):
            value = {"url": value}
        if not isinstance(value, dict):
            raise ValidationError('a URL, or an object {"url": …, "headers": {…}}')
        hook: FailureHook = FailureHookSchema().load(value)
        return hook


class RetrySchema(Schema):
    class Meta:
        unknown = RAISE

    max_attempts = WholeNumber(load_default=5, validate=validate.Range(1, 100))
    backoff_seconds = JsonNumber(load_default=1.0, validate=validate.Range(0.01, 3600))
    max_backoff_seconds = JsonNumber(load_default=300.0, validate=validate.Range(0.01, 43200))

    @post_load
    def to_policy(self, data: dict[str, Any], **_: Any) -> RetryPolicy:
        return RetryPolicy(**data)


class MisfireSchema(Schema):
    class Meta:
        unknown = RAISE

    policy = fields.String(
        load_default="fire_once", validate=validate.OneOf([p.value for p in MisfirePolicy])
    )
    grace_seconds = JsonNumber(allow_none=True, load_default=None, validate=validate.Range(0))

    @post_load
    def to_misfire(self, data: dict[str, Any], **_: Any) -> Misfire:
        return Misfire(MisfirePolicy(data["policy"]), data["grace_seconds"])


def named_as_sent(
    fields: Mapping[str, list[str]], names: Mapping[str, str]
) -> dict[str, list[str]]:
    """The domain's errors, which name a schedule's fields canonically (``schedule.start``), with
    the names the body gave them (``schedule.start_date``: ``names``, from ``to_timing``)."""
    renamed: dict[str, list[str]] = {}
    for name, messages in fields.items():
        part, _, field = name.partition(".")
        if part == "schedule" and field in names:
            name = f"schedule.{names[field]}"
        renamed[name] = messages
    return renamed


@contextmanager
def as_sent(names: Mapping[str, str]) -> Iterator[None]:
    """``InvalidInput`` raised inside, its fields named as the body named them
    (``named_as_sent``)."""
    try:
        yield
    except InvalidInput as exc:
        raise InvalidInput(named_as_sent(exc.fields, names)) from None


class DomainChecked(Schema):
    """A body whose domain checks (``ScheduleService.domain_errors``: does the timing fire, and
    not too often; is the target allowed …) run on the parts that were read even when another
    field is bad, so that one answer names every bad field. A body without field errors gets
    the same checks from the service."""

    def handle_error(self, error: ValidationError, data: Any, *, many: bool, **kwargs: Any) -> None:
        scheduler = current_app.extensions.get("scheduler") if has_app_context() else None
        if scheduler is None or not isinstance(error.messages, dict):
            return
        if isinstance(error.valid_data, dict):
            parts = dict(error.valid_data)
            names: Mapping[str, str] = {}
            if isinstance(parts.get("schedule"), tuple):
                parts["schedule"], names = parts["schedule"]
            sent = data.get("schedule") if isinstance(data, dict) else None
            parts["fire_if_past"] = isinstance(sent, dict) and sent.get("fire_if_past") is True
            found = scheduler.checks.domain_errors(parts, scheduler.clock.now(), parts.get("id"))
            for name, messages in named_as_sent(found, names).items():
                error.messages.setdefault(name, messages)


@dataclass(frozen=True)
class ScheduleRequest:
    """A create or replace body, loaded: the schedule's definition, the id the body names (if
    any), and how the body names its schedule's fields (``schedule.start_date`` …), for the
    errors of the domain checks."""

    schedule_id: str | None
    definition: ScheduleDefinition
    names: Mapping[str, str]
    # A one-time schedule whose time has passed fires at once rather than being refused.
    fire_if_past: bool = False


class ScheduleBodySchema(DomainChecked):
    """The body of ``POST /schedule`` and ``PUT /schedule/{id}``, loaded as a
    ``ScheduleRequest``."""

    class Meta:
        unknown = RAISE

    id = fields.String(
        validate=validate.Regexp(
            SCHEDULE_ID,
            error="1 to 128 characters: letters, digits, . _ ~ -, starting with a letter or digit",
        )
    )
    name = fields.String(load_default="", validate=validate.Length(max=200))
    description = fields.String(load_default="", validate=validate.Length(max=2000))
    type = fields.String(load_default="API", validate=OneOfAnyCase(["API"]))
    schedule = fields.Nested(ScheduleSpecSchema, required=True)
    payload = fields.Nested(PayloadSchema, required=True)
    metadata = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=_metadata
    )
    tags = fields.List(
        fields.String(validate=validate.Length(min=1, max=100)),
        load_default=list,
        validate=validate.Length(max=50),
    )
    priority = WholeNumber(load_default=5, validate=validate.Range(0, 9))
    retry = fields.Nested(RetrySchema, load_default=lambda: RetryPolicy())
    misfire = fields.Nested(MisfireSchema, load_default=lambda: Misfire())
    jitter_seconds = JsonNumber(
        load_default=0.0,
        validate=validate.Range(0, MAX_JITTER_SECONDS),
        metadata={
            "description": "spread each call over this many seconds after its time (0 to "
            f"{MAX_JITTER_SECONDS}): the same delay for an occurrence on every attempt, drawn "
            "from its id, which keeps the nominal time"
        },
    )
    on_failure = FailureHookField(
        load_default=None,
        allow_none=True,
        metadata={
            "description": "a URL, or {url, headers}: a signed JSON POST to it when an "
            "occurrence is dead-lettered or the schedule pauses itself (best effort, not "
            "retried); its URL and headers are kept secret like the payload's",
            "oneOf": [
                {"type": "string", "format": "uri"},
                {
                    "type": "object",
                    "required": ["url"],
                    "properties": {
                        "url": {"type": "string", "format": "uri"},
                        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
            ],
            "nullable": True,
        },
    )
    pause_after_failures = WholeNumber(
        load_default=None,
        allow_none=True,
        validate=validate.Range(1, MAX_PAUSE_AFTER_FAILURES),
        metadata={
            "description": "pause the schedule after this many failed occurrences in a row "
            f"(1 to {MAX_PAUSE_AFTER_FAILURES}; an occurrence fails once its retries are spent "
            "and it is dead-lettered; a success resets the count); null or absent: never. "
            "Resume restarts it."
        },
    )

    @post_load(pass_original=True)
    def to_request(
        self, body: dict[str, Any], original: dict[str, Any], **_: Any
    ) -> ScheduleRequest:
        timing, names = body["schedule"]
        definition = ScheduleDefinition(
            timing=timing,
            payload=body["payload"],
            name=body["name"],
            description=body["description"],
            type=body["type"].upper(),
            priority=body["priority"],
            retry=body["retry"],
            misfire=body["misfire"],
            tags=tuple(body["tags"]),
            metadata=body["metadata"],
            # The schedule as sent, to show it back as written.
            request={"schedule": original["schedule"]},
            jitter_seconds=body["jitter_seconds"],
            pause_after_failures=body["pause_after_failures"],
            on_failure=body["on_failure"],
        )
        fire_if_past = original["schedule"].get("fire_if_past") is True
        return ScheduleRequest(body.get("id"), definition, names, fire_if_past)


class PreviewSchema(DomainChecked):
    class Meta:
        unknown = EXCLUDE

    schedule = fields.Nested(ScheduleSpecSchema, required=True)
    count = WholeNumber(load_default=5, validate=validate.Range(1, 100))
    after = DateTimeText()
    before = DateTimeText()
    # The schedule's id, for the times of a cron line with H (which spreads by it).
    id = fields.String(validate=validate.Regexp(SCHEDULE_ID))


class BackfillSchema(Schema):
    """The body of ``POST /schedule/{id}/backfill``: a range of past time, half open."""

    class Meta:
        unknown = RAISE

    start = InstantText(
        data_key="from",
        required=True,
        metadata={"description": "first instant of the range (included), with its offset"},
    )
    end = InstantText(
        data_key="to",
        required=True,
        metadata={"description": "end of the range (excluded), not in the future"},
    )
    policy = fields.String(
        load_default=MisfirePolicy.FIRE_ALL.value,
        validate=validate.OneOf([MisfirePolicy.FIRE_ALL.value, MisfirePolicy.FIRE_ONCE.value]),
        metadata={"description": "fire_all runs each occurrence; fire_once only the latest"},
    )

    @post_load
    def to_policy(self, data: dict[str, Any], **_: Any) -> dict[str, Any]:
        return {**data, "policy": MisfirePolicy(data["policy"])}
