"""Templated payloads: ``{{ occurrence.id }}`` and its siblings filled in at each delivery.

Plain substitution, nothing more: a placeholder is ``{{``, a name of ``PLACEHOLDERS``, ``}}``,
with spaces (or none) inside the braces; no expressions, filters or loops. ``\\{{`` is a literal
``{{`` (the backslash goes; in a JSON string it is written ``"\\\\{{"``). Anything else that
opens with ``{{`` is refused when the schedule is created (``placeholder_problems``: a 400
naming the field), so a delivery never meets a name it does not know.

Scanning and rendering are linear in the text: each ``{{`` is followed by a bounded match
(``MAX_PLACEHOLDER``) and the text is walked once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from shared.jsonvalues import JSON
from shared.timeutil import iso_z

if TYPE_CHECKING:
    from shared.model import Occurrence

OPEN = "{{"
ESCAPE = "\\"
PLACEHOLDERS = (
    "occurrence.id",
    "occurrence.scheduled_time",
    "occurrence.attempt",
    "schedule.id",
    "schedule.name",
)
# The longest text between the braces a placeholder may have, spaces included.
MAX_PLACEHOLDER = 64
_INSIDE = re.compile(r"[ \t]*([A-Za-z0-9_.]+)[ \t]*\}\}")
_LISTED = ", ".join(f"{OPEN} {name} }}}}" for name in PLACEHOLDERS)


@dataclass(frozen=True)
class TemplateValues:
    """What the placeholders of one attempt are filled with."""

    occurrence_id: str
    scheduled_time: datetime
    attempt: int
    schedule_id: str
    schedule_name: str

    @classmethod
    def of(cls, occurrence: Occurrence, attempt: int, schedule_name: str) -> TemplateValues:
        return cls(
            occurrence.occurrence_id,
            occurrence.scheduled_time,
            attempt,
            occurrence.schedule_id,
            schedule_name,
        )

    def by_name(self) -> dict[str, str]:
        return {
            "occurrence.id": self.occurrence_id,
            "occurrence.scheduled_time": iso_z(self.scheduled_time),
            "occurrence.attempt": str(self.attempt),
            "schedule.id": self.schedule_id,
            "schedule.name": self.schedule_name,
        }


@dataclass(frozen=True)
class _Token:
    """``{{`` at ``start``: a placeholder ``name`` ending at ``end``, an escaped ``{{``
    (``name`` None, the backslash at ``start - 1``), or a bad one (``problem``)."""

    start: int
    end: int
    name: str | None
    problem: str | None = None


def _tokens(text: str) -> Iterator[_Token]:
    position = text.find(OPEN)
    while position >= 0:
        if position > 0 and text[position - 1] == ESCAPE:
            yield _Token(position, position + len(OPEN), None)
            position = text.find(OPEN, position + len(OPEN))
            continue
        limit = min(len(text), position + len(OPEN) + MAX_PLACEHOLDER + 2)
        match = _INSIDE.match(text, position + len(OPEN), limit)
        if match is None:
            shown = text[position : position + 24]
            yield _Token(position, position + len(OPEN), None, f"{shown!r} opens no placeholder")
            position = text.find(OPEN, position + len(OPEN))
            continue
        name = match.group(1)
        problem = None if name in PLACEHOLDERS else f"unknown placeholder {{{{ {name} }}}}"
        yield _Token(position, match.end(), name, problem)
        position = text.find(OPEN, match.end())


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a template (its first bad ``{{``), or None."""
    if OPEN not in text:
        return None
    for token in _tokens(text):
        if token.problem is not None:
            return (
                f"{token.problem}; the placeholders are {_LISTED}; write \\{{{{ for a literal {{{{"
            )
    return None


def has_template(text: str) -> bool:
    return OPEN in text


def render_text(text: str, values: Mapping[str, str], encode: Callable[[str], str] | None) -> str:
    """``text`` with each placeholder replaced by its value (passed through ``encode``, if
    given) and each ``\\{{`` by ``{{``. A name not in ``values`` (a schedule stored before
    placeholders were checked) stays as written."""
    if OPEN not in text:
        return text
    pieces: list[str] = []
    done = 0
    for token in _tokens(text):
        if token.name is None:
            if token.problem is None:
                pieces.append(text[done : token.start - 1])
                pieces.append(OPEN)
                done = token.end
            continue
        value = values.get(token.name)
        if value is None:
            continue
        pieces.append(text[done : token.start])
        pieces.append(encode(value) if encode is not None else value)
        done = token.end
    pieces.append(text[done:])
    return "".join(pieces)


def render_json(value: JSON, values: Mapping[str, str]) -> JSON:
    """A JSON value with its string values rendered (member names stay as written)."""
    if isinstance(value, str):
        return render_text(value, values, None)
    if isinstance(value, dict):
        return {name: render_json(item, values) for name, item in value.items()}
    if isinstance(value, list):
        return [render_json(item, values) for item in value]
    return value


def json_problems(value: JSON, field: str) -> dict[str, str]:
    """The bad placeholders of a JSON value's strings, each by its field
    (``payload.body.items[0].note``, as the API names it). Iterative: no recursion limit."""
    problems: dict[str, str] = {}
    stack: list[tuple[JSON, str]] = [(value, field)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                problems[path] = problem
        elif isinstance(item, dict):
            stack.extend((member, f"{path}.{name}") for name, member in item.items())
        elif isinstance(item, list):
            stack.extend((member, f"{path}[{index}]") for index, member in enumerate(item))
    return problems


def json_has_template(value: JSON) -> bool:
    """Whether any string of a JSON value holds ``{{`` (iterative)."""
    stack: list[JSON] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if OPEN in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def header_value(value: str) -> str:
    """A filled-in value made safe for a header line: control characters become spaces."""
    return "".join(" " if ord(char) < 32 or ord(char) == 127 else char for char in value)
