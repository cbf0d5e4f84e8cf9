"""docs/configuration.md names every setting, with its real default."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields
from pathlib import Path

from shared.settings import PREFIX, Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def rows() -> dict[str, str]:
    """Each documented variable → the default column of its row."""
    documented: dict[str, str] = {}
    for line in DOC.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`SCHEDULER_"):
            continue
        names = re.findall(r"`(SCHEDULER_[A-Z_]+)`", cells[0])
        defaults = [part.strip() for part in cells[1].split(",")] if len(names) > 1 else [cells[1]]
        for name, default in zip(names, defaults, strict=False):
            documented[name] = default
    return documented


def test_every_setting_is_documented_and_nothing_else() -> None:
    settings = {PREFIX + spec.name.upper() for spec in fields(Settings)}
    assert set(rows()) == settings


def test_documented_defaults_are_the_real_ones() -> None:
    documented = rows()
    for spec in fields(Settings):
        if spec.default is MISSING:
            continue
        value = spec.default
        shown = documented[PREFIX + spec.name.upper()].strip("`")
        if isinstance(value, tuple):
            expected = ", ".join(value) if value else "(none)"
        elif value == "":
            expected = "(none)"
        elif isinstance(value, float) and value.is_integer():
            expected = str(int(value))
        else:
            expected = str(value)
        assert shown == expected, spec.name
