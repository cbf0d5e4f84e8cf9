"""The ``schedule`` object of a body, loaded as a ``Timing``: its members are those of the
notations of ``shared.notations`` (each read by its ``MemberKind``), in one of two shapes:

- a notation that carries its own zone and bounds (not ``bounded``: the blueprint's
  ``start_date`` + ``time_of_day`` form), alone;
- exactly one of the others (``at``, ``interval``, ``cron``, ``rrule``), with ``timezone``,
  ``start``, ``end``, ``max_occurrences``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import (
    ValidationError,
    fields,
    post_load,
    validate,
    validates_schema,
)

from scheduler_service.requests.fields import (
    DateTimeText,
    OneOfAnyCase,
    Strict,
    UnitName,
    WholeNumber,
    zone_name,
)
from shared.definition_rules import MAX_OCCURRENCES
from shared.notations import NOTATIONS, InvalidMembers, Member, MemberKind
from shared.timing import Timing


class IntervalSchema(Strict):
    number = WholeNumber(
        required=True,
        validate=validate.Range(min=1, max=1_000_000, error="must be a whole number from 1"),
    )
    unit = UnitName(required=True)


class _ScheduleSpec(Strict):
    """The rules of the ``schedule`` object; ``ScheduleSpecSchema`` adds its fields."""

    @validates_schema
    def one_shape(self, data: dict[str, Any], **_: Any) -> None:
        present = [n for n in NOTATIONS if any(m.name in data for m in n.members)]
        unbounded = [n for n in present if not n.bounded]
        forms = [n.form for n in present if n.bounded]
        if "fire_if_past" in data and not any(n.is_one_time(data) for n in present):
            raise ValidationError(f"only for a one-time schedule ({ONE_TIME})", "fire_if_past")
        if unbounded:
            alone = unbounded[0]
            given = [m.name for m in alone.members if m.name in data]
            others = [n.form for n in NOTATIONS if n is not alone]
            mixed = [name for name in (*BOUNDS, *others) if name in data]
            if mixed:
                raise ValidationError(
                    f"cannot be combined with the {alone.called} form ({', '.join(given)})",
                    mixed[0],
                )
            missing = [name for name in (alone.form, *alone.required) if name not in data]
            if missing:
                raise ValidationError(
                    {name: ["Missing data for required field."] for name in missing}
                )
            return
        if len(forms) != 1:
            canonical = ", ".join(n.form for n in NOTATIONS if n.bounded)
            alternatives = "".join(f", or {n.given_as}" for n in NOTATIONS if not n.bounded)
            message = (
                f"give exactly one of {canonical} (got {', '.join(forms)})"
                if forms
                else f"give one of {canonical}{alternatives}"
            )
            raise ValidationError(message, forms[1] if len(forms) > 1 else "_schema")

    @post_load
    def to_timing(self, data: dict[str, Any], **_: Any) -> tuple[Timing, Mapping[str, str]]:
        """The domain timing, and how its fields are named in the body (for error messages)."""
        [notation] = [n for n in NOTATIONS if n.form in data]
        try:
            return notation.timing(data), notation.names
        except InvalidMembers as exc:
            raise ValidationError(exc.messages) from None


def _member_field(member: Member) -> fields.Field[Any]:
    """How the API reads a member of the ``schedule`` object, by its kind."""
    metadata = {"description": member.description} if member.description else {}
    if member.kind is MemberKind.TEXT:
        return fields.String(
            validate=validate.Length(min=1, max=member.max_length), metadata=metadata
        )
    if member.kind is MemberKind.DATE_TIME:
        return DateTimeText(metadata=metadata)
    if member.kind is MemberKind.INTERVAL:
        return fields.Nested(IntervalSchema, metadata=metadata)
    if member.kind is MemberKind.ZONE:
        return fields.String(validate=zone_name, metadata=metadata)
    if member.kind is MemberKind.CHOICE:
        return fields.String(validate=OneOfAnyCase(list(member.choices)), metadata=metadata)
    return fields.String(metadata=metadata)  # DATE, TIME_OF_DAY: read by their notation


def _members(bounded: bool) -> dict[str, fields.Field[Any]]:
    return {
        member.name: _member_field(member)
        for notation in NOTATIONS
        if notation.bounded is bounded
        for member in notation.members
    }


# The bounds that go with a bounded notation.
BOUNDS = ("timezone", "start", "end", "max_occurrences")
# What fire_if_past is for, as its errors and the document say.
_ONE_TIME = [n.one_time_words for n in NOTATIONS if n.one_time_words]
ONE_TIME = ", ".join(_ONE_TIME[:-1]) + ", or " + _ONE_TIME[-1]

# The ``schedule`` object: the members of each notation that carries its own zone and bounds,
# then ``timezone``, each other notation's, the bounds and ``fire_if_past``.
ScheduleSpecSchema = type(
    "ScheduleSpecSchema",
    (_ScheduleSpec,),
    {
        "__module__": __name__,
        **_members(bounded=False),
        "timezone": fields.String(validate=zone_name, metadata={"description": "IANA zone"}),
        **_members(bounded=True),
        "start": DateTimeText(),
        "end": DateTimeText(),
        "max_occurrences": WholeNumber(
            validate=validate.Range(
                min=1, max=MAX_OCCURRENCES, error=f"a whole number from 1 to {MAX_OCCURRENCES:,}"
            )
        ),
        # Either shape: what a one-time schedule whose time has passed does.
        "fire_if_past": fields.Boolean(
            truthy={True},
            falsy={False},
            metadata={
                "description": f"a one-time schedule ({ONE_TIME}) whose time has already passed "
                "fires once, at once; without it, a time more than "
                "SCHEDULER_MISFIRE_THRESHOLD_SECONDS (5) in the past is a 400 naming it"
            },
        ),
    },
)
