"""The store's rules (``shared.store_rules``) as SQL, for the SQLite store.

A condition becomes a ``WHERE`` clause; a guarded write (``shared.guards.Write``) an ``UPDATE``
of the row its key finds where the guard holds, the ``INSERT`` of the row it makes, or one
statement for many rows (an upsert, or an ``UPDATE … FROM`` a list of values). Columns and
values follow ``shared.adapters.sqlite.codec``. The statements are made once per rule, at
import; a call only binds its parameters.

Missing values: SQLite's ``NULL`` makes a comparison neither true nor false, which ``WHERE``
treats as false, as ``shared.guards.holds`` does; only a negation differs, so a ``NOT`` takes a
``NULL`` for false first. An equality with a parameter is ``IS`` (true of two ``NULL``s); with
a literal it is ``=``, which a partial index's ``WHERE`` is stated in.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from shared.adapters.records import TABLES, Kind
from shared.adapters.sqlite.codec import column, entry_to_column, to_column
from shared.guards import (
    ALWAYS,
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
    param_fields,
)
from shared.store_queries import Query

# How a statement names a parameter: ``:name``, ``v.name`` (a row of values), ``excluded.col``.
Naming = Callable[[str], str]


class Rendering:
    """The SQL of one table's conditions and changes, parameters named by ``param``, columns of
    the stored row prefixed by ``prefix`` (``"executions."`` beside another table)."""

    def __init__(self, table: str, param: Naming, prefix: str = "") -> None:
        self.kinds = TABLES[table]
        self.param = param
        self.prefix = prefix

    def column(self, field: str) -> str:
        return self.prefix + column(field)

    def operand(self, field: str, operand: Operand) -> str:
        if isinstance(operand, Param):
            return self.param(operand.name)
        if isinstance(operand, Field):
            return self.column(operand.name)
        return literal(to_column(self.kinds[field], operand))

    def condition(self, condition: Condition) -> str:
        if isinstance(condition, Comparison):
            left = self.column(condition.field)
            operand = condition.operand
            if operand is None:
                return f"{left} IS {'' if condition.op == '=' else 'NOT '}NULL"
            right = self.operand(condition.field, operand)
            op = condition.op
            if op in ("=", "!=") and (op == "!=" or isinstance(operand, Param | Field)):
                op = "IS" if op == "=" else "IS NOT"
            return f"{left} {op} {right}"
        if isinstance(condition, OneOf):
            kind = self.kinds[condition.field]
            values = [
                literal(to_column(kind, value)) for value in condition.values if value is not None
            ]
            listed = f"{self.column(condition.field)} IN ({', '.join(values)})"
            if None in condition.values:
                return f"({self.column(condition.field)} IS NULL OR {listed})"
            return listed
        if isinstance(condition, Match):
            stored, given = self.column(condition.field), self.param(condition.operand.name)
            if condition.how == "item":
                return f"EXISTS (SELECT 1 FROM json_each({stored}) WHERE value = {given})"
            if condition.how == "prefix":
                return f"substr({stored}, 1, length({given})) = {given}"
            return f"instr({stored}, {given}) > 0"
        if isinstance(condition, Given):
            return f"coalesce({self.param(condition.param.name)}, 0) != 0"
        if isinstance(condition, After):
            stored = ", ".join(map(self.column, condition.fields))
            given = ", ".join(self.param(value.name) for value in condition.values)
            return f"({stored}) {'<' if condition.descending else '>'} ({given})"
        if isinstance(condition, All):
            return (
                "(" + " AND ".join(map(self.condition, condition.parts)) + ")"
                if condition.parts
                else "1"
            )
        if isinstance(condition, AnyOf):
            return "(" + " OR ".join(map(self.condition, condition.parts)) + ")"
        if isinstance(condition, Not):
            return f"NOT coalesce({self.condition(condition.part)}, 0)"
        raise TypeError(f"not a condition: {condition!r}")

    def assignment(self, change: Change) -> str:
        target = column(change.field)
        current = self.column(change.field)
        if isinstance(change, Set):
            value = change.value
            if isinstance(value, Unless):
                kept = self.condition(value.condition)
                new = self.operand(change.field, value.value)
                return f"{target} = CASE WHEN coalesce({kept}, 0) THEN {current} ELSE {new} END"
            return f"{target} = {self.operand(change.field, value)}"
        if isinstance(change, Inc):
            return f"{target} = {current} + {self.operand(change.field, change.by)}"
        stored = f"coalesce({current}, '[]')"
        kept = (
            f"CASE WHEN json_array_length({stored}) >= {change.keep}"
            f" THEN json_remove({current}, '$[0]') ELSE {stored} END"
        )
        return f"{target} = json_insert({kept}, '$[#]', json({self.param(change.entry.name)}))"


def literal(value: Any) -> str:
    """A value written into a statement: the rules' own constants only, never a caller's."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def where(table: str, condition: Condition, prefix: str = "") -> str:
    """A condition on ``table``'s rows, its parameters named ``:name``."""
    return Rendering(table, _named, prefix).condition(condition)


def _named(name: str) -> str:
    return f":{name}"


class Params:
    """A rule's parameters as SQLite binds them: each written down as the field it goes with
    (``Append`` entries as JSON text)."""

    def __init__(self, rule: Write | Remove | Condition, table: str) -> None:
        kinds = TABLES[table]
        self.kinds = {
            name: Kind.VALUE if field is None else kinds[field]
            for name, field in param_fields(rule).items()
        }
        self.entries = (
            {change.entry.name for change in rule.changes if isinstance(change, Append)}
            if isinstance(rule, Write)
            else set()
        )

    def named(self, values: Mapping[str, Any]) -> dict[str, Any]:
        bound = {name: to_column(kind, values[name]) for name, kind in self.kinds.items()}
        for name in self.entries:
            bound[name] = json.dumps(entry_to_column(values[name]))
        return bound

    def row(self, names: Sequence[str], values: Mapping[str, Any]) -> list[Any]:
        bound = self.named(values)
        return [bound[name] for name in names]


class Statements:
    """The statements of one guarded write (or a removal)."""

    def __init__(self, rule: Write | Remove) -> None:
        self.rule = rule
        self.table = rule.table
        self.params = Params(rule, rule.table)
        key = " AND ".join(f"{column(name)} = :{name}" for name in rule.key)
        guard = where(rule.table, rule.guard)
        if isinstance(rule, Remove):
            self.remove = f"DELETE FROM {rule.table} WHERE {key} AND {guard}"
            return
        rendering = Rendering(rule.table, _named)
        sets = ", ".join(map(rendering.assignment, rule.changes))
        self.update = f"UPDATE {rule.table} SET {sets} WHERE {key} AND {guard}"
        self.created = rule.new_record() if rule.makes_record else {}
        if self.created:
            names, values = self._values(rendering)
            self.insert = (
                f"INSERT INTO {rule.table} ({names}) VALUES ({values})"
                f" ON CONFLICT ({', '.join(map(column, rule.key))}) DO NOTHING"
            )

    def _values(self, rendering: Rendering) -> tuple[str, str]:
        names = ", ".join(column(field) for field in self.created)
        values = ", ".join(
            rendering.operand(field, operand) for field, operand in self.created.items()
        )
        return names, values

    def upsert(self, rows: int, returning: Iterable[str]) -> tuple[str, list[str]]:
        """An insert of ``rows`` rows at once, each one that exists taking the write where the
        guard holds; and the parameters of a row, in order."""
        assert isinstance(self.rule, Write)
        order = [operand.name for operand in self.created.values() if isinstance(operand, Param)]
        inserted = {
            operand.name: column(field)
            for field, operand in self.created.items()
            if isinstance(operand, Param)
        }
        if not set(self.params.kinds) <= set(inserted):
            raise ValueError(f"an upsert takes only parameters it inserts: {self.rule}")
        values = Rendering(self.table, lambda _: "?")
        row = "(" + ", ".join(values.operand(f, o) for f, o in self.created.items()) + ")"
        excluded = Rendering(
            self.table, lambda name: f"excluded.{inserted[name]}", f"{self.table}."
        )
        sets = ", ".join(map(excluded.assignment, self.rule.changes))
        statement = (
            f"INSERT INTO {self.table} ({', '.join(map(column, self.created))})"
            f" VALUES {', '.join([row] * rows)}"
            f" ON CONFLICT ({', '.join(map(column, self.rule.key))}) DO UPDATE SET {sets}"
            f" WHERE {excluded.condition(self.rule.guard)}"
            f" RETURNING {', '.join(returning)}"
        )
        return statement, order

    def update_many(self, rows: int, returning: Iterable[str] = ()) -> tuple[str, list[str]]:
        """The write of ``rows`` rows, each found by its key, in one ``UPDATE … FROM``; and the
        parameters of a row, in order."""
        assert isinstance(self.rule, Write)
        order = sorted(set(self.rule.key) | set(self.params.kinds) | self.params.entries)
        prefixed = Rendering(self.table, lambda name: f"v.{name}", f"{self.table}.")
        sets = ", ".join(map(prefixed.assignment, self.rule.changes))
        found = " AND ".join(f"{self.table}.{column(name)} = v.{name}" for name in self.rule.key)
        marks = "(" + ", ".join("?" * len(order)) + ")"
        back = f" RETURNING {', '.join(returning)}" if returning else ""
        statement = (
            f"WITH v({', '.join(order)}) AS (VALUES {', '.join([marks] * rows)})"
            f" UPDATE {self.table} SET {sets} FROM v"
            f" WHERE {found} AND {prefixed.condition(self.rule.guard)}{back}"
        )
        return statement, order


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# Keys a read names at most (SQLite's bound parameters).
KEYS_PER_READ = 500


def rows_in(
    connection: sqlite3.Connection, select: str, keys: Sequence[Any], *params: Any
) -> list[sqlite3.Row]:
    """The rows of ``<select> IN (<keys>)``, ``KEYS_PER_READ`` keys a statement: ``select``
    ends with the column the keys are of, ``params`` bind its placeholders."""
    found: list[sqlite3.Row] = []
    for chunk in chunks(keys, KEYS_PER_READ):
        marks = ", ".join("?" * len(chunk))
        found += connection.execute(f"{select} IN ({marks})", [*params, *chunk]).fetchall()
    return found


class Folded:
    """Writes that always apply (``ALWAYS``) to many records in one ``UPDATE … FROM``, each
    record once with its writes folded (``shared.guards.folded``): for each field, a column of
    the values says whether the field is set (1), raised (0) or left as it is (``NULL``)."""

    def __init__(self, writes: Sequence[Write]) -> None:
        first = writes[0]
        assert all(write.guard == ALWAYS for write in writes), "only writes that always apply"
        self.table, self.key = first.table, first.key
        self.kinds = TABLES[first.table]
        self.fields = sorted({change.field for write in writes for change in write.changes})
        self.order = [
            *self.key,
            *(f"{name}{suffix}" for name in self.fields for suffix in ("__set", "")),
        ]

    def statement(self, rows: int) -> str:
        table = self.table
        sets = []
        for name in self.fields:
            stored = f"{table}.{column(name)}"
            sets.append(
                f"{column(name)} = CASE WHEN v.{name}__set IS NULL THEN {stored}"
                f" WHEN v.{name}__set THEN v.{name} ELSE {stored} + v.{name} END"
            )
        found = " AND ".join(f"{table}.{column(name)} = v.{name}" for name in self.key)
        marks = "(" + ", ".join("?" * len(self.order)) + ")"
        return (
            f"WITH v({', '.join(self.order)}) AS (VALUES {', '.join([marks] * rows)})"
            f" UPDATE {table} SET {', '.join(sets)} FROM v WHERE {found}"
        )

    def row(self, key: Sequence[Any], changed: Mapping[str, tuple[bool, Any]]) -> list[Any]:
        values = list(key)
        for name in self.fields:
            if name not in changed:
                values += [None, None]
                continue
            is_set, value = changed[name]
            values += [int(is_set), to_column(self.kinds[name], value) if is_set else value]
        return values


def ordered(order: Sequence[tuple[str, bool]]) -> str:
    """An ``ORDER BY`` of stored fields, each with whether it descends."""
    return ", ".join(f"{column(name)}{' DESC' if descending else ''}" for name, descending in order)


def select(query: Query) -> tuple[str, dict[str, Any]]:
    """A listing's statement and its parameters."""
    direction = " DESC" if query.descending else ""
    order = ", ".join(f"{column(name)}{direction}" for name in query.order)
    statement = (
        f"SELECT * FROM {query.table} WHERE {where(query.table, query.condition)}"
        f" ORDER BY {order} LIMIT {int(query.limit)}"
    )
    return statement, Params(query.condition, query.table).named(query.params)


def count(query: Query) -> tuple[str, dict[str, Any]]:
    """A statement counting what a listing selects, and its parameters."""
    statement = f"SELECT count(*) FROM {query.table} WHERE {where(query.table, query.condition)}"
    return statement, Params(query.condition, query.table).named(query.params)
