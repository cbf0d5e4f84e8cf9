"""The language the store's rules are stated in (``shared.store_rules``): conditions on a stored
record's fields, and the guarded writes that change a record where a condition holds.

A rule is a value, stated once: each backend translates it thinly (``shared.adapters.sqlite.sql``
into SQL, ``shared.adapters.mongo.filters`` into filters and updates) and ``holds`` evaluates a
condition in Python, on a record's stored fields (``shared.adapters.records``). The three agree
on missing values: a comparison with a missing value is false, and so its negation true
(``tests/unit/test_guards.py`` runs each rule in all three over the same records).

    revision = Field("revision")
    newer = revision < Param("revision")     # a Comparison
    (newer & ~(status == "deleted")) | ...   # All, Not, AnyOf
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class Condition:
    """What a stored record's fields must be for a rule to apply to it."""

    def __and__(self, other: Condition) -> Condition:
        return All((*_parts(self, All), *_parts(other, All)))

    def __or__(self, other: Condition) -> Condition:
        return AnyOf((*_parts(self, AnyOf), *_parts(other, AnyOf)))

    def __invert__(self) -> Condition:
        return Not(self)


def _parts(condition: Condition, kind: type[All] | type[AnyOf]) -> tuple[Condition, ...]:
    return condition.parts if isinstance(condition, kind) else (condition,)


@dataclass(frozen=True)
class Param:
    """A value the caller gives when the rule is applied, by name."""

    name: str


@dataclass(frozen=True, eq=False)
class Field:
    """A stored field of the record, by its name in ``shared.adapters.records``."""

    name: str

    def __eq__(self, operand: object) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, "=", _operand(operand))

    def __ne__(self, operand: object) -> Comparison:  # type: ignore[override]
        return Comparison(self.name, "!=", _operand(operand))

    def __lt__(self, operand: object) -> Comparison:
        return Comparison(self.name, "<", _operand(operand))

    def __le__(self, operand: object) -> Comparison:
        return Comparison(self.name, "<=", _operand(operand))

    def __gt__(self, operand: object) -> Comparison:
        return Comparison(self.name, ">", _operand(operand))

    def __ge__(self, operand: object) -> Comparison:
        return Comparison(self.name, ">=", _operand(operand))

    __hash__ = None  # type: ignore[assignment]

    def one_of(self, *values: Any) -> OneOf:
        return OneOf(self.name, tuple(values))

    def starts_with(self, text: Param) -> Match:
        return Match(self.name, "prefix", text)

    def contains(self, text: Param) -> Match:
        return Match(self.name, "part", text)

    def has(self, item: Param) -> Match:
        """A list field that has ``item``."""
        return Match(self.name, "item", item)


# What a field is compared with or set to: a literal (``()`` an empty list), a parameter, or
# another field.
Operand = Param | Field | str | int | float | bool | tuple[()] | None


def _operand(value: object) -> Operand:
    if value is None or value == () or isinstance(value, Param | Field | str | int | float | bool):
        return value
    raise TypeError(f"not an operand of a rule: {value!r}")


@dataclass(frozen=True)
class Comparison(Condition):
    """``field <op> operand``; ``op`` is one of ``= != < <= > >=``."""

    field: str
    op: str
    operand: Operand


@dataclass(frozen=True)
class OneOf(Condition):
    field: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class Match(Condition):
    """A text field that starts with (``how="prefix"``) or contains (``"part"``) a text, or a
    list field that has an item (``"item"``)."""

    field: str
    how: str
    operand: Param


@dataclass(frozen=True)
class Given(Condition):
    """A parameter the caller gives true: what holds of the record for some callers only (a
    manual run may begin what a scheduled delivery may not)."""

    param: Param


@dataclass(frozen=True)
class After(Condition):
    """A keyset: the record comes after ``values`` in the order of ``fields`` (with
    ``descending``, before): the first field beyond its value, or equal and the next beyond."""

    fields: tuple[str, ...]
    values: tuple[Param, ...]
    descending: bool = False


@dataclass(frozen=True)
class All(Condition):
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class AnyOf(Condition):
    parts: tuple[Condition, ...]


@dataclass(frozen=True)
class Not(Condition):
    part: Condition


# What holds of every record.
ALWAYS = All(())


COMPARE: Mapping[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def value_of(operand: Operand, fields: Mapping[str, Any], params: Mapping[str, Any]) -> Any:
    if isinstance(operand, Param):
        return params[operand.name]
    if isinstance(operand, Field):
        return fields.get(operand.name)
    return operand


def holds(condition: Condition, fields: Mapping[str, Any], params: Mapping[str, Any]) -> bool:
    """Whether ``condition`` holds on a record of these stored fields (a missing one is
    ``None``), with these parameters."""
    if isinstance(condition, Comparison):
        left = fields.get(condition.field)
        right = value_of(condition.operand, fields, params)
        if condition.op in ("=", "!="):
            return COMPARE[condition.op](left, right)
        return left is not None and right is not None and COMPARE[condition.op](left, right)
    if isinstance(condition, OneOf):
        return fields.get(condition.field) in condition.values
    if isinstance(condition, Match):
        return _matches(condition, fields.get(condition.field), params[condition.operand.name])
    if isinstance(condition, Given):
        return bool(params[condition.param.name])
    if isinstance(condition, After):
        stored = tuple(fields.get(name) for name in condition.fields)
        given = tuple(params[value.name] for value in condition.values)
        if None in stored or None in given:
            return False
        return stored < given if condition.descending else stored > given
    if isinstance(condition, All):
        return all(holds(part, fields, params) for part in condition.parts)
    if isinstance(condition, AnyOf):
        return any(holds(part, fields, params) for part in condition.parts)
    if isinstance(condition, Not):
        return not holds(condition.part, fields, params)
    raise TypeError(f"not a condition: {condition!r}")


def _matches(match: Match, stored: Any, given: Any) -> bool:
    if match.how == "item":
        return isinstance(stored, list | tuple) and given in stored
    if not isinstance(stored, str) or not isinstance(given, str):
        return False
    return stored.startswith(given) if match.how == "prefix" else given in stored


def cases(condition: Condition) -> list[Condition]:
    """``condition`` as the cases of which it holds where one does: conditions without
    ``AnyOf``, in order (for a backend whose guarded updates take no disjunction: one guarded
    update per case)."""
    return [All(tuple(parts)) if len(parts) != 1 else parts[0] for parts in _disjuncts(condition)]


def _disjuncts(condition: Condition) -> Iterator[list[Condition]]:
    if isinstance(condition, AnyOf):
        for part in condition.parts:
            yield from _disjuncts(part)
    elif isinstance(condition, All):
        combined: list[list[Condition]] = [[]]
        for part in condition.parts:
            combined = [done + more for done in combined for more in _disjuncts(part)]
        yield from combined
    else:
        yield [condition]


# -- changes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Unless:
    """A field's new value, unless ``condition`` holds on the stored record: then it keeps its
    value (a record made anew gets ``value``)."""

    condition: Condition
    value: Operand


@dataclass(frozen=True)
class Set:
    field: str
    value: Operand | Unless


@dataclass(frozen=True)
class Inc:
    field: str
    by: Operand


@dataclass(frozen=True)
class Append:
    """Add ``entry`` at the end of a list field, which keeps its last ``keep`` entries."""

    field: str
    entry: Param
    keep: int


Change = Set | Inc | Append


@dataclass(frozen=True)
class Write:
    """A guarded write of one record, found by its key (its ``key`` parameters, named as its
    key's fields): where ``guard`` holds on the stored record, ``changes`` apply. With
    ``created``, a record that does not exist is made, of the key's fields, ``created`` and
    ``changes`` (an ``Unless`` there gives its value, an ``Inc`` its amount)."""

    table: str
    key: tuple[str, ...]
    guard: Condition
    changes: tuple[Change, ...]
    created: tuple[tuple[str, Operand], ...] | None = None

    @property
    def makes_record(self) -> bool:
        return self.created is not None

    def new_record(self) -> dict[str, Operand]:
        """The fields of a record this write makes, as operands."""
        fields: dict[str, Operand] = {name: Param(name) for name in self.key}
        fields.update(self.created or ())
        for change in self.changes:
            if isinstance(change, Set):
                value = change.value
                fields[change.field] = value.value if isinstance(value, Unless) else value
            elif isinstance(change, Inc):
                fields[change.field] = change.by
        return fields


@dataclass(frozen=True)
class Remove:
    """Delete the record found by its key (its ``key`` parameters) where ``guard`` holds."""

    table: str
    key: tuple[str, ...]
    guard: Condition


def set_given(*fields: str) -> tuple[Set, ...]:
    """Each field set to the parameter of its own name."""
    return tuple(Set(field, Param(field)) for field in fields)


def params_of(source: object, names: Iterable[str]) -> dict[str, Any]:
    """A rule's parameters ``names``, each the attribute of the same name of ``source`` (the
    request or record the rule is applied for)."""
    return {name: getattr(source, name) for name in names}


def param_fields(rule: Write | Remove | Condition) -> dict[str, str | None]:
    """Each parameter a rule takes (but an ``Append``'s entry) and the field it goes with,
    whose kind says how a backend writes its value down (``None``: a value as it is, such as
    an item of a list field)."""
    found: dict[str, str | None] = {}

    def note(field: str | None, operand: object) -> None:
        if isinstance(operand, Unless):
            walk(operand.condition)
            operand = operand.value
        if isinstance(operand, Param):
            # The first field it goes with: the others it goes with are of the same kind.
            found.setdefault(operand.name, field)

    def walk(condition: Condition) -> None:
        if isinstance(condition, Comparison):
            note(condition.field, condition.operand)
        elif isinstance(condition, Match):
            note(None if condition.how == "item" else condition.field, condition.operand)
        elif isinstance(condition, Given):
            note(None, condition.param)
        elif isinstance(condition, After):
            for name, value in zip(condition.fields, condition.values, strict=True):
                note(name, value)
        elif isinstance(condition, All | AnyOf):
            for part in condition.parts:
                walk(part)
        elif isinstance(condition, Not):
            walk(condition.part)

    if isinstance(rule, Condition):
        walk(rule)
        return found
    for name in rule.key:
        note(name, Param(name))
    walk(rule.guard)
    if isinstance(rule, Write):
        for change in rule.changes:
            if isinstance(change, Set):
                note(change.field, change.value)
            elif isinstance(change, Inc):
                note(change.field, change.by)
        for name, operand in rule.created or ():
            note(name, operand)
    return found


def folded(
    applied: Sequence[tuple[Write, Mapping[str, Any]]],
) -> dict[str, tuple[bool, Any]]:
    """The ``Set`` and ``Inc`` changes of writes applied in turn to one record, as one: for each
    field they change, whether it is set (to the value) or raised (by the value); a ``Set``
    followed by ``Inc``s sets the sum. For a backend that writes many records in one statement,
    each record once."""
    changed: dict[str, tuple[bool, Any]] = {}
    for write, params in applied:
        for change in write.changes:
            if isinstance(change, Set) and not isinstance(change.value, Unless):
                changed[change.field] = (True, value_of(change.value, {}, params))
            elif isinstance(change, Inc):
                is_set, before = changed.get(change.field, (False, 0))
                changed[change.field] = (is_set, before + value_of(change.by, {}, params))
            else:
                raise TypeError(f"{change!r} does not fold")
    return changed
