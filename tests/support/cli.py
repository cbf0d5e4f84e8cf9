"""The ``scheduler`` command line run in the test's own process."""

from __future__ import annotations

import pytest

from scheduler_cli.main import main


def run(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``scheduler *argv``: its exit code and what it printed (out, err)."""
    code = main(list(argv))
    captured = capfd.readouterr()
    return code, captured.out, captured.err
