"""Schedules kept in YAML files, as ``scheduler apply`` reads them and ``scheduler export``
writes them (docs/apply.md).

A file::

    managed_by: github.com/acme/schedules   # optional: the label of every schedule here
    schedules:
      - id: nightly-invoices                 # the stable id: PUT /schedule/{id}
        name: nightly invoices
        schedule: {cron: "0 2 * * *", timezone: Europe/Paris}
        payload:
          url: https://billing.example.com/run
          headers: {Authorization: !env BILLING_TOKEN}

Each schedule is the body of ``PUT /schedule/{id}``. ``!env NAME`` is the value of the
environment variable ``NAME`` when the file is read (a secret kept out of the repository); an
exported secret is masked (``********``), which an apply reads as "keep the stored one".

Read with PyYAML's safe loader (plus ``!env``); every error names the file, the line and the
field.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from shared.definition_rules import MANAGED_BY, MANAGED_BY_RULE
from shared.formats import SCHEDULE_ID, SCHEDULE_ID_RULE

SUFFIXES = (".yaml", ".yml")
TOP_LEVEL = ("managed_by", "schedules")


class ManifestError(ValueError):
    """A file that cannot be applied: ``str`` names the file, the line and the field."""


@dataclass(frozen=True)
class Entry:
    """One schedule of a file: its body (``id`` included), and where it stands, to name the
    line of a field the API refuses."""

    schedule_id: str
    body: dict[str, Any]
    path: Path
    node: yaml.MappingNode

    def where(self, field: str) -> str:
        """``file:line: field`` of ``field`` (dotted, as the API names it), or of the nearest
        enclosing member the file has."""
        return f"{self.path}:{_line_of(self.node, field.split('.'))}: {field}"


@dataclass(frozen=True)
class Manifest:
    """The schedules of one or more files, and the label they share (``None``: none)."""

    managed_by: str | None
    entries: tuple[Entry, ...]


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, and ``!env NAME``."""


def _from_environment(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    name = loader.construct_scalar(node)
    value = os.environ.get(str(name))
    if value is None:
        raise ManifestError(
            f"{node.start_mark.name}:{node.start_mark.line + 1}: !env {name}: "
            "the environment has no such variable"
        )
    return value


_Loader.add_constructor("!env", _from_environment)


def files_of(paths: Iterable[Path]) -> list[Path]:
    """The files ``-f`` names: a file as it is, a folder's ``*.yaml`` and ``*.yml`` (not its
    subfolders), in name order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise ManifestError(f"{path}: no such file or folder")
    if not found:
        raise ManifestError(f"no .yaml file in {', '.join(str(p) for p in paths)}")
    return found


def load(paths: Sequence[Path]) -> Manifest:
    """The schedules of the files ``paths`` name (``files_of``), or ``ManifestError``."""
    labels: dict[str | None, Path] = {}
    entries: list[Entry] = []
    seen: dict[str, Entry] = {}
    for path in files_of(paths):
        label, found = _load_file(path)
        labels.setdefault(label, path)
        for entry in found:
            if entry.schedule_id in seen:
                first = seen[entry.schedule_id]
                raise ManifestError(
                    f"{entry.where('id')}: {entry.schedule_id!r} is also at "
                    f"{first.where('id').rsplit(': ', 1)[0]}"
                )
            seen[entry.schedule_id] = entry
            entries.append(entry)
    if len(labels) > 1:
        named = ", ".join(f"{label!r} ({path})" for label, path in labels.items())
        raise ManifestError(f"the files disagree on managed_by: {named}")
    return Manifest(next(iter(labels), None), tuple(entries))


def _load_file(path: Path) -> tuple[str | None, list[Entry]]:
    text = path.read_text(encoding="utf-8")
    loader = _Loader(text)
    loader.name = str(path)
    try:
        root = loader.get_single_node()
        document = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ManifestError(f"{path}:{line}: not YAML: {exc.problem or exc}") from None
    finally:
        loader.dispose()
    if not isinstance(document, dict) or not isinstance(root, yaml.MappingNode):
        raise ManifestError(f"{path}:1: a mapping with schedules: [...] (and managed_by)")
    for key, _ in root.value:
        if key.value not in TOP_LEVEL:
            raise ManifestError(
                f"{path}:{key.start_mark.line + 1}: {key.value}: unknown; a file has "
                f"{' and '.join(TOP_LEVEL)}"
            )
    label = document.get("managed_by")
    if label is not None and (not isinstance(label, str) or not MANAGED_BY.match(label)):
        raise ManifestError(
            f"{path}:{_line_of(root, ['managed_by'])}: managed_by: {MANAGED_BY_RULE}"
        )
    schedules = document.get("schedules")
    nodes = (_member(root, "schedules") or (0, root))[1]
    if not isinstance(schedules, list) or not isinstance(nodes, yaml.SequenceNode):
        raise ManifestError(f"{path}:{_line_of(root, ['schedules'])}: schedules: a list")
    return label, [
        _entry(path, index, body, node, label)
        for index, (body, node) in enumerate(zip(schedules, nodes.value, strict=True))
    ]


def _entry(path: Path, index: int, body: Any, node: yaml.Node, label: str | None) -> Entry:
    where = f"{path}:{node.start_mark.line + 1}: schedules[{index}]"
    if not isinstance(body, dict) or not isinstance(node, yaml.MappingNode):
        raise ManifestError(f"{where}: a mapping, the body of PUT /schedule/{{id}}")
    schedule_id = body.get("id")
    if not isinstance(schedule_id, str) or not SCHEDULE_ID.match(schedule_id):
        raise ManifestError(f"{where}.id: required, the schedule's stable id: {SCHEDULE_ID_RULE}")
    if label is not None:
        own = body.setdefault("managed_by", label)
        if own != label:
            raise ManifestError(
                f"{path}:{_line_of(node, ['managed_by'])}: managed_by: {own!r} in a file "
                f"managed by {label!r}"
            )
    return Entry(schedule_id, body, path, node)


def _member(node: yaml.Node, name: str) -> tuple[int, yaml.Node] | None:
    """The member ``name`` of a mapping (or item of a sequence) and the line it starts on: its
    key's, for a mapping."""
    members: list[tuple[int, yaml.Node]] = []
    if isinstance(node, yaml.MappingNode):
        members = [(key.start_mark.line, value) for key, value in node.value if key.value == name]
    elif isinstance(node, yaml.SequenceNode) and name.isdigit() and int(name) < len(node.value):
        item = node.value[int(name)]
        members = [(item.start_mark.line, item)]
    return members[0] if members else None


def _line_of(node: yaml.Node, path: Sequence[str]) -> int:
    """The line of the member at ``path`` below ``node``, or of the nearest one above it."""
    line = int(node.start_mark.line)
    for name in path:
        found = _member(node, name)
        if found is None:
            break
        line, node = found
    return line + 1


def dump(managed_by: str | None, bodies: Iterable[Mapping[str, Any]]) -> str:
    """The YAML of a file of ``bodies`` (``export``): ``load`` reads it back as they are."""
    document: dict[str, Any] = {}
    if managed_by is not None:
        document["managed_by"] = managed_by
    document["schedules"] = [
        {name: value for name, value in body.items() if managed_by is None or name != "managed_by"}
        for body in bodies
    ]
    text: str = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
    return text
