"""The fields of the API's answers, and how the OpenAPI document shows them: every instant one
format, ``2026-05-01T07:00:00.000Z`` (``Instant``), ``format: date-time`` in the document
(``document_fields``), and a local time the same with its offset (``LocalTime``); figures in
milliseconds to a tenth; enums as components; who paused a schedule, when and why. ``shown``,
``nullable`` and ``one_of`` declare a field of an answer: every answer holds each of its fields
(``required``), ``null`` where a nullable one has no value."""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import Any, TypeVar

from marshmallow import INCLUDE, Schema, fields, validate
from marshmallow.utils import get_value

from shared.model import PausedBy
from shared.timeutil import iso_local, iso_z, load_zone

# A field of an answer, as ``shown`` and ``nullable`` take and give it.
F = TypeVar("F", bound=fields.Field[Any])


def shown(field: F, description: str | None = None) -> F:
    """``field``, which every answer holds (``required``); ``description``: what the OpenAPI
    document says of it."""
    field.required = True
    if description is not None:
        field.metadata = {**field.metadata, "description": description}
    return field


def nullable(field: F, description: str | None = None) -> F:
    """``field``, which every answer holds, ``null`` where it has no value."""
    field.allow_none = True
    return shown(field, description)


def one_of(
    values: type[Enum] | Iterable[str], description: str | None = None, **options: Any
) -> fields.String:
    """A string every answer holds, one of ``values`` (an enum's values, or strings): an enum in
    the document."""
    if isinstance(values, type) and issubclass(values, Enum):
        choices = [member.value for member in values]
    else:
        choices = list(values)
    return shown(fields.String(validate=validate.OneOf(choices), **options), description)


class Open(Schema):
    class Meta:
        unknown = INCLUDE


class Instant(fields.String):
    """An instant, as ISO-8601 UTC to the millisecond (``2026-05-01T07:00:00.000Z``)."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else iso_z(value)


class Milliseconds(fields.Float):
    """A figure in milliseconds, to a tenth (``2.5``): no float noise."""

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> float | None:
        return None if value is None else round(float(value), 1)


class Choice(fields.String):
    """One of the values of the enum schema ``component`` of the document, or ``null`` where
    ``allow_none``: documented as a reference to it, so that a generated client has one type
    for it wherever it appears (not an enum per field, nor one per field and null)."""

    def __init__(self, *, component: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.component = component


# The enums ``Choice`` fields name, as the document's components.
ENUMS: dict[str, list[str]] = {"PausedBy": [who.value for who in PausedBy]}


def document_fields(api: Any) -> None:
    """Teach the API's OpenAPI document the fields of this module: instants are
    ``format: date-time``, a ``Choice`` refers to its enum component, and a nullable reference
    is ``{allOf: [$ref], nullable: true}`` (apispec's ``anyOf`` with a nullable object makes a
    generated client invent a class for the null)."""
    for field in (Instant, LocalTime):
        api.register_field(field, "string", "date-time")
    for name, values in ENUMS.items():
        api.spec.components.schema(name, {"type": "string", "enum": values})

    def reference(converter: Any, field: Any, ret: dict[str, Any], **_: Any) -> dict[str, Any]:
        if isinstance(field, Choice):
            ret.pop("type", None)
            return {"allOf": [{"$ref": f"#/components/schemas/{field.component}"}]}
        match ret.get("anyOf"):
            case [{"type": "object", "nullable": True}, {"$ref": str()} as target] | [
                {"$ref": str()} as target,
                {"type": "object", "nullable": True},
            ]:
                del ret["anyOf"]
                return {"allOf": [target], "nullable": True}
        return {}

    api.ma_plugin.converter.add_attribute_function(reference)


class Again(fields.String):
    """What the dumped object holds in ``source``, shown again under this field's name (as
    ``attribute`` would, but marshmallow lets no two fields share an ``attribute``)."""

    def __init__(self, *, source: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return get_value(obj, self.source)


class LocalTime(Again):
    """The instant the dumped object holds in ``source``, as the wall time with its offset in
    the zone it names in ``zone`` (``2026-05-01T09:00:00.000+02:00``)."""

    def __init__(self, *, source: str, zone: str, **kwargs: Any) -> None:
        super().__init__(source=source, **kwargs)
        self.zone = zone

    def _serialize(self, value: Any, attr: str | None, obj: Any, **kwargs: Any) -> str | None:
        return None if value is None else iso_local(value, load_zone(get_value(obj, self.zone)))


def pause_fields() -> tuple[Choice, Instant, fields.String]:
    """Who paused a schedule, when and why (``paused_by``, ``paused_at``, ``paused_reason``): on
    the schedule and on its run history, each read from the ``pause`` (``views.PauseView``) of
    what is dumped."""
    return (
        nullable(
            Choice(component="PausedBy", attribute="pause.paused_by"),
            "while paused: user (the pause endpoint) or failures (it paused itself, "
            "pause_after_failures); null otherwise",
        ),
        nullable(Instant(attribute="pause.paused_at"), "while paused: since when"),
        nullable(fields.String(attribute="pause.paused_reason"), "while paused: why, in words"),
    )
