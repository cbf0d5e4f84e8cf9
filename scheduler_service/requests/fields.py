"""The fields a request's values are read by: strict JSON numbers, ISO-8601 times, units, time
zones, choices in any case; ``domain``, which makes a check of ``shared`` a marshmallow
validator; and ``Strict``, the schema of a body or query that refuses what it does not know."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from shared.definition_rules import check_year, check_zone_name
from shared.model import Unit
from shared.timeutil import UTC, parse_iso, utc_ms


# What an ISO-8601 date-time may hold: ASCII digits, separators, a designator; nothing after
# (Python's parser would let a trailing NUL through).
class Strict(Schema):
    """A body, or a part or query of a request: a field it does not know (a typo) is a 400
    naming it, never silently ignored."""

    class Meta:
        unknown = RAISE


def domain(check: Callable[[Any], None]) -> Callable[[Any], None]:
    """A marshmallow validator that runs a domain check: its ``ValueError`` is the field's
    error."""

    def validator(value: Any) -> None:
        try:
            check(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None

    return validator


zone_name = domain(check_zone_name)
year_in_range = domain(check_year)


class OneOfAnyCase(validate.OneOf):
    """``OneOf`` in any letter case; the OpenAPI enum lists each choice once (upper case), so
    generated clients get no duplicate values."""

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or value.upper() not in self.choices:
            raise ValidationError(self._format_error(value))
        return value


class DateTimeText(fields.String):
    """An ISO-8601 date-time, loaded as a ``datetime``: naive for a wall time in the schedule's
    timezone, aware for an instant. A ``String`` to marshmallow and to the OpenAPI document."""

    # marshmallow types a String's value as str; this one turns the text into a datetime.
    def _deserialize(  # type: ignore[override]
        self, value: Any, attr: str | None, data: Any, **kwargs: Any
    ) -> datetime:
        text = super()._deserialize(value, attr, data, **kwargs)
        try:
            moment = parse_iso(text)
        except ValueError:
            raise ValidationError(
                "not an ISO-8601 date-time (e.g. 2026-12-01T09:00:00 for local time in the "
                "schedule's timezone, or 2026-12-01T09:00:00Z)"
            ) from None
        year_in_range(moment.year)
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
