"""The README's prose names the notations the registry has: a notation added to
``shared.notations.NOTATIONS`` (or one dropped) and not described in the README fails here."""

from __future__ import annotations

import re
from pathlib import Path

from shared.notations import NOTATIONS

README = Path(__file__).resolve().parents[2] / "README.md"


def prose() -> str:
    """The README with its lines joined, so that a sentence can be read across line breaks."""
    return " ".join(README.read_text().split())


def named_in(sentence: str) -> list[str]:
    """The members a sentence names in backticks."""
    return re.findall(r"`([a-z_][A-Za-z_]*)`", sentence)


def test_the_canonical_schedule_names_each_bounded_notation_in_the_registry_order() -> None:
    found = re.search(r"a canonical `schedule` with exactly one of (.*?), plus `timezone`", prose())
    assert found, "the README's sentence on the canonical schedule is gone"
    # Each form is followed by what it takes in parentheses; what is inside them is not a form.
    forms = named_in(re.sub(r"\((?:[^()]|\([^()]*\))*\)", "", found.group(1)))
    assert forms == [notation.form for notation in NOTATIONS if notation.bounded]


def test_the_blueprint_paragraph_describes_each_member_of_the_unbounded_notations() -> None:
    text = prose()
    for notation in NOTATIONS:
        if notation.bounded:
            continue
        found = re.search(rf"`{notation.form}` and .*?Beside it", text)
        assert found, f"the README does not describe the {notation.name} form"
        assert {member.name for member in notation.members} <= set(named_in(found.group(0)))


def test_patch_names_every_form_that_replaces_the_stored_timing() -> None:
    found = re.search(r"A `schedule` that names its form \(([^)]*)\)", prose())
    assert found, "the README's sentence on PATCH and forms is gone"
    assert named_in(found.group(1)) == [notation.form for notation in NOTATIONS]
