"""The ``schedule`` object of a body, in either of its two shapes, loaded as a ``Timing``:

- the blueprint's: ``start_date`` (MM/DD/YYYY), ``end_date``, ``timeZone``, ``time_of_day``,
  ``am_pm``, ``repeat_interval {number, unit}`` — no ``repeat_interval`` means once;
- the canonical one: exactly one of ``at``, ``interval``, ``cron``, ``rrule``, with ``timezone``,
  ``start``, ``end``, ``max_occurrences``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any

from marshmallow import (
    RAISE,
    Schema,
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from scheduler_service.requests.fields import (
    DateTimeText,
    OneOfAnyCase,
    UnitName,
    WholeNumber,
    year_in_range,
    zone_name,
)
from shared.definition_rules import MAX_OCCURRENCES
from shared.model import Every, Timing

SEED_FIELDS = ("start_date", "end_date", "timeZone", "time_of_day", "am_pm", "repeat_interval")
CANONICAL_FORMS = ("at", "interval", "cron", "rrule")
SEED_NAMES = {
    "timezone": "timeZone",
    "at": "start_date",
    "interval": "repeat_interval",
    "start": "start_date",
    "end": "end_date",
}


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
    timeZone = fields.String(validate=zone_name)
    time_of_day = fields.String(metadata={"description": "hh:mm, with am_pm, or HH:MM (24 h)"})
    am_pm = fields.String(validate=OneOfAnyCase(["AM", "PM"]))
    repeat_interval = fields.Nested(IntervalSchema)
    # The canonical shape.
    timezone = fields.String(validate=zone_name, metadata={"description": "IANA zone"})
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
        year_in_range(day.year)
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
