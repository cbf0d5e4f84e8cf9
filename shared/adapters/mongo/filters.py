"""The store's rules (``shared.store_rules``) as MongoDB filters and updates.

A condition becomes a filter: its tests on a field merged in one ``{field: {...}}``, a negation
a ``$nor`` entry, a disjunction an ``$or`` inside ``$and`` (nx-27017 0.8.1, a wire server we test
against, ignores an ``$or`` beside an ``$and`` that holds one, and misses explicit nulls inside
``$and``: so tests stay at the top). A comparison of two fields is an ``$expr``, with both
required present, as ``shared.guards.holds`` has it. Values follow
``shared.adapters.mongo.documents``.

A guarded write becomes its cases (``write_cases``): a filter with no ``$or`` and an update
each, in order. MongoDB would take an ``$or`` in an update's filter, and an update pipeline for a
change that depends on the stored value (``Unless``); nx-27017 0.8.1 applies an update whose
filter has ``$or`` to a document with another ``_id``, and has no pipelines, so each case is a
guarded update of its own: as atomic, one command more only when the first case refuses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING

from shared.adapters.mongo.documents import Document, key_of, to_field
from shared.adapters.records import TABLES, Kind
from shared.guards import (
    After,
    All,
    AnyOf,
    Append,
    Change,
    Comparison,
    Condition,
    Field,
    Given,
    Inc,
    Match,
    Not,
    OneOf,
    Operand,
    Param,
    Remove,
    Set,
    Unless,
    Write,
    cases,
)
from shared.store_queries import Query

_OPERATORS = {"=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte"}
_NEGATED = {"=": "$ne", "!=": "$eq"}


class Filters:
    """The filters and updates of one collection's rules, with their parameters' values."""

    def __init__(self, table: str, params: Mapping[str, Any]) -> None:
        self.kinds = TABLES[table]
        self.params = params

    def value(self, field: str, operand: Operand) -> Any:
        raw = self.params[operand.name] if isinstance(operand, Param) else operand
        return to_field(self.kinds.get(field, Kind.VALUE), raw)

    def filter(self, condition: Condition) -> Document:
        selector: Document = {}
        self._into(selector, condition)
        return selector

    def _into(self, selector: Document, condition: Condition) -> None:
        if isinstance(condition, All):
            for part in condition.parts:
                self._into(selector, part)
        elif isinstance(condition, Comparison) and isinstance(condition.operand, Field):
            left, right = condition.field, condition.operand.name
            compared = {_OPERATORS[condition.op]: [f"${left}", f"${right}"]}
            if "$expr" in selector:
                selector.setdefault("$and", []).append({"$expr": compared})
            else:
                selector["$expr"] = compared
            for present in (left, right):
                self._test(selector, present, "$ne", None)
        elif isinstance(condition, Comparison):
            self._test(
                selector,
                condition.field,
                _OPERATORS[condition.op],
                self.value(condition.field, condition.operand),
            )
        elif isinstance(condition, OneOf):
            kind = self.kinds.get(condition.field, Kind.VALUE)
            values = [to_field(kind, value) for value in condition.values]
            self._test(selector, condition.field, "$in", values)
        elif isinstance(condition, Match):
            given = self.params[condition.operand.name]
            if condition.how == "item":
                # $in rather than an equality: the same on MongoDB, and nx-27017 0.8.1 answers
                # nothing to an equality on an array field once it is indexed.
                self._test(selector, condition.field, "$in", [given])
            else:
                anchor = "^" if condition.how == "prefix" else ""
                self._test(selector, condition.field, "$regex", anchor + re.escape(given))
        elif isinstance(condition, After):
            self._after(selector, condition)
        elif isinstance(condition, Given):
            self._given(selector, condition.param, True)
        elif isinstance(condition, Not) and isinstance(condition.part, Given):
            self._given(selector, condition.part.param, False)
        elif isinstance(condition, Not) and _simple(condition.part):
            part = condition.part
            assert isinstance(part, Comparison)
            self._test(
                selector, part.field, _NEGATED[part.op], self.value(part.field, part.operand)
            )
        elif isinstance(condition, Not):
            selector.setdefault("$nor", []).append(self.filter(condition.part))
        elif isinstance(condition, AnyOf):
            either = [self.filter(part) for part in condition.parts]
            selector.setdefault("$and", []).append({"$or": either})
        else:
            raise TypeError(f"not a condition: {condition!r}")

    def _given(self, selector: Document, param: Param, wanted: bool) -> None:
        """A caller's parameter is known as the filter is made: a case that does not hold for
        it matches no document (each has an ``_id``)."""
        if bool(self.params[param.name]) is not wanted:
            selector.setdefault("$and", []).append({"_id": {"$exists": False}})

    def _after(self, selector: Document, after: After) -> None:
        beyond = "$lt" if after.descending else "$gt"
        pairs = list(zip(after.fields, after.values, strict=True))
        values = [self.value(name, value) for name, value in pairs]
        if len(values) == 1:
            self._test(selector, after.fields[0], beyond, values[0])
            return
        # The first field beyond its value, or equal and the next beyond.
        either = [
            {**dict(zip(after.fields[:i], values[:i], strict=True)), after.fields[i]: {beyond: v}}
            for i, v in enumerate(values)
        ]
        selector.setdefault("$and", []).append({"$or": either})

    @staticmethod
    def _test(selector: Document, field: str, operator: str, value: Any) -> None:
        if field not in selector:
            selector[field] = value if operator == "$eq" else {operator: value}
            return
        tests = selector[field]
        if not (isinstance(tests, dict) and tests and all(name[:1] == "$" for name in tests)):
            tests = {"$eq": tests}  # an equality, and now another test of the same field
        tests[operator] = value
        selector[field] = tests

    def update(self, changes: tuple[Change, ...]) -> Document:
        update: Document = {}
        for change in changes:
            if isinstance(change, Set):
                assert not isinstance(change.value, Unless), "split by write_cases first"
                update.setdefault("$set", {})[change.field] = self.value(change.field, change.value)
            elif isinstance(change, Inc):
                update.setdefault("$inc", {})[change.field] = self.value(change.field, change.by)
            elif isinstance(change, Append):
                entry = to_field(Kind.ATTEMPTS, [self.params[change.entry.name]])
                pushed = {"$each": entry, "$slice": -change.keep}
                update.setdefault("$push", {})[change.field] = pushed
        return update

    def created(self, write: Write) -> Document:
        """The fields a write gives a record it makes that its first case does not set."""
        changed = {change.field for change in write.changes}
        made = {
            name: operand for name, operand in write.new_record().items() if name not in changed
        }
        return {name: self.value(name, operand) for name, operand in made.items()}


def _simple(condition: Condition) -> bool:
    return (
        isinstance(condition, Comparison)
        and condition.op in _NEGATED
        and not isinstance(condition.operand, Field)
    )


@dataclass(frozen=True)
class Case:
    """One guarded update of a write: where ``guard`` holds, ``changes`` apply."""

    guard: Condition
    changes: tuple[Change, ...]


def write_cases(write: Write) -> list[Case]:
    """The write's cases, in order: each case of its guard; each split where an ``Unless``
    keeps a field's value (first where it does not, so that a first case made into an upsert
    makes the record with every change)."""
    kept = [
        change
        for change in write.changes
        if isinstance(change, Set) and isinstance(change.value, Unless)
    ]
    found: list[Case] = []
    for guard in cases(write.guard):
        variants = [Case(guard, write.changes)]
        for change in kept:
            assert isinstance(change.value, Unless)
            keeps = change.value.condition
            set_ = Set(change.field, change.value.value)
            variants = [
                split
                for variant in variants
                for split in (
                    Case(variant.guard & ~keeps, _replaced(variant.changes, change, set_)),
                    Case(variant.guard & keeps, _replaced(variant.changes, change, None)),
                )
            ]
        found += variants
    return found


def _replaced(changes: tuple[Change, ...], old: Change, new: Change | None) -> tuple[Change, ...]:
    """``changes`` with ``old`` replaced by ``new``, or left out for ``None``."""
    replaced = (new if change is old else change for change in changes)
    return tuple(change for change in replaced if change is not None)


def keyed(write: Write | Remove, params: Mapping[str, Any]) -> Document:
    """The filter of the record a write's key finds: its ``_id``."""
    tenant, name = (params[field] for field in write.key)
    return {"_id": key_of(tenant, name)}


def find_of(query: Query) -> tuple[Document, list[tuple[str, int]]]:
    """A listing's filter and sort."""
    direction = DESCENDING if query.descending else ASCENDING
    selector = Filters(query.table, query.params).filter(query.condition)
    return selector, [(name, direction) for name in query.order]
