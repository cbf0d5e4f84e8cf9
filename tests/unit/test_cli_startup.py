"""The ``scheduler`` command starts without the server's code: a command that calls a running
API (``scheduler schedules list``, ``--help``) imports the CLI and ``scheduler_client``, not the
Flask app, the workers, aiohttp or the store and queue adapters, which cost it most of two
seconds of CPU before each command (BENCHMARKS.md, section "The CLI's start")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# The server's packages and the libraries only they need.
SERVER_PACKAGES = {
    "scheduler_service",
    "processor_worker",
    "polling_worker",
    "execution_worker",
    "flask",
    "werkzeug",
    "marshmallow",
    "aiohttp",
    "uvicorn",
    "gunicorn",
    "pymongo",
    "boto3",
    "botocore",
}
# Parse the command line as the console script does, then list what was imported.
PROGRAM = """
import json, sys
from scheduler_cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["schedules", "list", "--help"], ["executions", "list", "--help"]],
    ids=" ".join,
)
def test_a_client_command_imports_none_of_the_servers_code(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "usage: scheduler" in done.stdout  # the help, printed before the modules' list
    modules = json.loads(done.stdout.splitlines()[-1])
    assert sorted({name for name in modules if name.split(".")[0] in SERVER_PACKAGES}) == []
