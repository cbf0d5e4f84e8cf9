"""The layers of docs/architecture.md, read from the imports of every module: ``shared/`` (the
domain, the ports and their adapters) imports none of the components; each component (the API
and the three workers) imports only itself and ``shared/``, never another (what two of them use
belongs in ``shared/``); the client imports nothing of the server. Only the CLI, which starts
them, imports the components."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The repository's own packages; any other import is a library's.
PACKAGES = frozenset(path.parent.name for path in ROOT.glob("*/__init__.py"))
COMPONENTS = ("scheduler_service", "processor_worker", "polling_worker", "execution_worker")
ALLOWED = {
    "shared": {"shared"},
    **{component: {component, "shared"} for component in COMPONENTS},
    "scheduler_client": {"scheduler_client"},
}


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, at any depth (under ``TYPE_CHECKING`` too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # Relative imports would hide a package: none is written here.
            assert node.level == 0, f"{path}: relative import"
            names.add(node.module or "")
    return names


def crossings(package: str) -> list[str]:
    """``module: imported`` for each import of another package of the repository than
    ``package`` may import."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in sorted(imported(path)):
            top = name.split(".")[0]
            if top in PACKAGES and top not in ALLOWED[package]:
                found.append(f"{path.relative_to(ROOT)}: {name}")
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_each_package_imports_only_its_own_layers(package: str) -> None:
    assert crossings(package) == []


def test_the_walk_sees_what_a_module_imports() -> None:
    assert set(ALLOWED) <= PACKAGES
    # The poller's alerts use the notifier and the tenants' signers of shared/, under a
    # parenthesized import; the executor's observer imports one under TYPE_CHECKING.
    alerts = imported(ROOT / "polling_worker" / "alerts.py")
    assert {"shared.notifying", "shared.tenant_signers"} <= alerts
    assert "execution_worker.settler" in imported(ROOT / "execution_worker" / "observer.py")
    # The CLI starts every component: its imports cross, and the walk says so.
    cli = {name.split(".")[0] for name in imported(ROOT / "scheduler_cli" / "components.py")}
    assert set(COMPONENTS) - {"scheduler_service"} <= cli
