"""JSON values as the domain holds them at its edges, and the comparisons JSON means."""

from __future__ import annotations

from typing import Any

JSON = Any


def optional_int(value: JSON) -> int | None:
    """A stored whole number, or None (booleans are not numbers)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def json_equal(left: JSON, right: JSON) -> bool:
    """Equality as JSON means it: ``1`` equals ``1.0``, ``true`` is not ``1``, objects compare
    member by member whatever their order. Iterative: no recursion limit."""
    pairs: list[tuple[JSON, JSON]] = [(left, right)]
    while pairs:
        a, b = pairs.pop()
        if isinstance(a, bool) or isinstance(b, bool):
            if not (isinstance(a, bool) and isinstance(b, bool) and a == b):
                return False
        elif isinstance(a, int | float) and isinstance(b, int | float):
            if a != b:
                return False
        elif isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            pairs.extend((a[name], b[name]) for name in a)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b, strict=True))
        elif type(a) is not type(b) or a != b:
            return False
    return True
