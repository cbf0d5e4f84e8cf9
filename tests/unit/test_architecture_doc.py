"""docs/architecture.md names code that exists: every file it names or links, every
``module.name`` it names, each defined in the file its link points to."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

# A dotted name whose first part is one of the repository's packages names code.
PACKAGES = frozenset(path.parent.name for path in ROOT.glob("*/__init__.py"))
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
CODE = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def named_code(text: str) -> list[str]:
    """The dotted names in backquotes whose first part is a package of the repository."""
    return [
        name for name in CODE.findall(text) if DOTTED.match(name) and name.split(".")[0] in PACKAGES
    ]


def named_files(text: str) -> list[str]:
    """The ``.py`` paths in backquotes, relative to the repository (a pattern such as
    ``shared/notations/<name>.py`` aside: its section's test reads it)."""
    return [name for name in CODE.findall(text) if name.endswith(".py") and "<" not in name]


def section(title: str) -> str:
    """The text of the section headed ``## {title}``."""
    text = DOC.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def links(text: str) -> list[tuple[str, str]]:
    """``(label, target)`` of the links to files of the repository (not to the web)."""
    return [
        (label, target.partition("#")[0])
        for label, target in LINK.findall(text)
        if not target.startswith(("http://", "https://", "#", "mailto:"))
    ]


def resolve(name: str) -> tuple[Any, ModuleType]:
    """What ``name`` names (a module, or an attribute of one, nested), and its module."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        found: Any = module
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found, module
    raise ModuleNotFoundError(name)


def defined_in(name: str) -> Path:
    """The file that defines what ``name`` names (for a value without source: its module's)."""
    found, module = resolve(name)
    try:
        source = inspect.getsourcefile(inspect.unwrap(found) if callable(found) else found)
    except TypeError:
        source = None
    return Path(source or str(module.__file__)).resolve()


def test_every_named_file_exists() -> None:
    text = DOC.read_text()
    missing = [name for name in named_files(text) if not (ROOT / name).is_file()]
    missing += [target for _, target in links(text) if not (DOC.parent / target).resolve().exists()]
    assert missing == []


def test_every_named_function_class_and_module_exists() -> None:
    names = named_code(DOC.read_text())
    # The document walks the code: far more names than a parse gone wrong would find.
    assert len(set(names)) > 50
    missing = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name}: {exc}")
    assert missing == []


def test_each_linked_name_is_defined_in_the_file_it_links() -> None:
    elsewhere = []
    for label, target in links(DOC.read_text()):
        name = label.strip("`")
        if not (label.startswith("`") and DOTTED.match(name) and target.endswith(".py")):
            continue
        linked = (DOC.parent / target).resolve()
        found = defined_in(name)
        if found != linked:
            elsewhere.append(f"{name} is in {found.relative_to(ROOT)}, linked to {target}")
    assert elsewhere == []


def test_the_checks_catch_a_name_that_moved_or_went() -> None:
    with pytest.raises(AttributeError):
        resolve("shared.ports.NoSuchPort")
    with pytest.raises(AttributeError):
        resolve("shared.no_such_module.anything")
    # Imported into the worker, defined in shared/messages.py.
    assert defined_in("processor_worker.worker.decode_mutation") == ROOT / "shared" / "messages.py"


def test_adding_a_notation_is_a_short_list_of_files_true_to_the_code() -> None:
    from shared.notations import NOTATIONS

    text = section("Adding a notation")
    steps = re.findall(r"^\d+\. (.+?)(?=^\d+\. |^$)", text, re.M | re.S)
    assert 3 <= len(steps) <= 5, steps
    # The first step is the notation's module: each registered notation is one.
    [pattern] = [name for name in CODE.findall(steps[0]) if "<name>" in name]
    for notation in NOTATIONS:
        assert (ROOT / pattern.replace("<name>", notation.name)).is_file(), notation.name
        assert resolve(f"shared.notations.{notation.name}.NOTATION")[0] is notation
    # Each other step links the files it changes, and they exist.
    for step in steps[1:]:
        linked = [DOC.parent / target for _, target in links(step)]
        assert linked, step
        assert [path for path in linked if not path.resolve().exists()] == []
    # The list of what reads the registry names code that does.
    for label, target in links(text.partition("\n1. ")[0]):
        source = (DOC.parent / target).resolve().read_text()
        if target.endswith(".py") and "notations/" not in target:
            assert "NOTATIONS" in source or "notation_of" in source, label


def backend_steps(text: str) -> str:
    """The document's "Adding a store backend" list."""
    start = text.index("**Adding a store backend**")
    return text[start : text.index("\n\n", start)]


@pytest.mark.parametrize("backend", ["sqlite", "mongo"])
def test_adding_a_store_backend_names_every_module_of_each_backend(backend: str) -> None:
    # The list is the whole of a backend: a module added to one, or one that went, shows here.
    package = ROOT / "shared" / "adapters" / backend
    modules = {
        path.relative_to(ROOT).as_posix()
        for path in package.glob("*.py")
        if path.name != "__init__.py"
    }
    named = {name for name in named_files(backend_steps(DOC.read_text())) if f"/{backend}/" in name}
    assert named == modules


def test_adding_a_store_backend_names_the_primitives_the_shared_code_needs() -> None:
    # Each abstract method of the shared store code is one a new backend must give.
    from shared.adapters.guarded import GuardedWrites
    from shared.adapters.reads import Reads

    steps = backend_steps(DOC.read_text())
    needed = GuardedWrites.__abstractmethods__ | Reads.__abstractmethods__
    assert {name for name in needed if f"`{name}`" not in steps} == set()
