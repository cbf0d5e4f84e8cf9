"""What the commands that call a running API share (``scheduler schedules …``,
``executions …``, ``dead-letters …``, ``apply``, ``signing-secrets``, ``calendars``): the client
of ``--url`` and ``--api-key`` (``SCHEDULER_API_URL``, ``SCHEDULER_API_KEY``), paging, errors,
readable tables, and how an answer is printed (``answer_command``); the commands of each group
are in its own module (``schedules``, ``executions``, ``dead_letters``).

``scheduler_client`` calling a running API, printing readable tables or, with ``--json``, the
API's answers as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar

from scheduler_client import ApiError, ConnectionFailed, SchedulerClient

T = TypeVar("T")
# The W3C trace context a create, replace or update continues, from the ``TRACEPARENT`` and
# ``TRACESTATE`` variables (OpenTelemetry's carriers for processes).
Trace = dict[str, str | None]


def describe(error: ApiError) -> str:
    """An error answer as the terminal shows it: status, title and detail, then each bad
    field on a line of its own."""
    lines = [f"{error.status} {error.title or 'error'}: {error.detail or ''}".rstrip(": ")]
    lines.extend(f"  {item.field}: {item.message}" for item in error.errors)
    return "\n".join(lines)


def shown(key: str, value: Any) -> str:
    """A value as a person reads it: ``-`` for none, milliseconds to one decimal, a priority
    with what it does (docs/architecture.md, "Priority under a backlog")."""
    if value is None:
        return "-"
    if key == "priority":
        return f"{value} (of 0 to 9: the higher goes first when more is due than can fire at once)"
    if key.endswith("_ms") and isinstance(value, int | float):
        return f"{value:,.1f}"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def table(rows: list[dict[str, Any]], columns: Sequence[tuple[str, str]], out: TextIO) -> None:
    """Columns as (key, heading), each value ``shown``."""
    cells = [[heading for _, heading in columns]] + [
        [shown(key, row.get(key)) for key, _ in columns] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    for line in cells:
        out.write(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
        out.write("\n")


def command_group(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    description: str | None = None,
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """``scheduler NAME ACTION …``: a command of several actions, the one given in
    ``args.action``; its actions are added to what this returns."""
    group = commands.add_parser(name, help=help, description=description)
    return group.add_subparsers(dest="action", required=True)


def client_options(parser: argparse.ArgumentParser, *, json_answer: bool = True) -> None:
    parser.add_argument(
        "--url",
        help="where the API listens, as scheduler dev prints it or without its path or "
        "http:// (SCHEDULER_API_URL; http://127.0.0.1:8080)",
    )
    parser.add_argument("--api-key", help="API key (SCHEDULER_API_KEY); none for scheduler dev")
    if json_answer:
        parser.add_argument("--json", action="store_true", help="print the API's JSON answer")


def client_of(args: argparse.Namespace, environ: dict[str, str]) -> SchedulerClient:
    """The client of ``--url`` and ``--api-key`` (or their variables). No retries: a person at
    a terminal sees a failure at once and decides."""
    return SchedulerClient(
        args.url or environ.get("SCHEDULER_API_URL", "http://127.0.0.1:8080"),
        args.api_key or environ.get("SCHEDULER_API_KEY") or None,
        retries=0,
    )


def paging(parser: argparse.ArgumentParser) -> None:
    pages = parser.add_mutually_exclusive_group()
    pages.add_argument("--cursor", help="the page after the one that printed this cursor")
    pages.add_argument("--all", action="store_true", help="every page, one after the other")


def call_api(
    args: argparse.Namespace, environ: dict[str, str], request: Callable[[SchedulerClient], T]
) -> T | None:
    """``request`` made with the client of ``args``; ``None`` once its failure is printed (an
    error answer, no answer, a file that cannot be read)."""
    client = client_of(args, environ)
    try:
        return request(client)
    except ApiError as error:
        print(describe(error), file=sys.stderr)
    except ConnectionFailed as error:
        print(f"cannot reach {client.base_url}: {error.reason}", file=sys.stderr)
    except (OSError, ValueError) as error:
        print(f"scheduler: {error}", file=sys.stderr)
    finally:
        client.close()
    return None


@dataclass(frozen=True)
class Shown:
    """A command's answer and how the terminal shows it without ``--json``: a table of
    ``rows`` in ``columns``, or one ``line``, or else the answer's fields one per line; with
    the lines ``before`` and ``after`` it, and a ``note`` on stderr."""

    answer: Any
    rows: list[dict[str, Any]] | None = None
    columns: Sequence[tuple[str, str]] = ()
    line: str | None = None
    before: Sequence[str] = ()
    after: Sequence[str] = ()
    note: str | None = None


# What a command of a group asks the API, and how its answer is shown.
Request = Callable[[SchedulerClient, argparse.Namespace, Trace], Shown]


def answer_command(
    args: argparse.Namespace,
    environ: dict[str, str],
    request: Request,
    out: TextIO | None = None,
) -> int:
    """Print what ``request`` answers (``--json``: the API's JSON), and on stderr how to get
    the next page if there is one; 1 once a failure is printed."""
    out = out or sys.stdout
    trace = {name: environ.get(name.upper()) for name in ("traceparent", "tracestate")}
    called = call_api(args, environ, lambda client: request(client, args, trace))
    if called is None:
        return 1
    answer = called.answer
    if args.json:
        out.write(json.dumps(answer, indent=2) + "\n")
    else:
        _show(called, out)
    more = answer.get("next_cursor") if isinstance(answer, dict) else None
    if more:
        print(
            f"{len(called.rows or [])} shown; there are more: add --cursor {more} for the next "
            "page, or --all for every page",
            file=sys.stderr,
        )
    return 0


def _show(called: Shown, out: TextIO) -> None:
    out.writelines(f"{line}\n" for line in called.before)
    if called.rows is not None:
        table(called.rows, called.columns, out)
    elif called.line is not None:
        out.write(called.line + "\n")
    else:
        for key, value in called.answer.items():
            out.write(f"{key + ':':<26} {shown(key, value)}\n")
    out.writelines(f"{line}\n" for line in called.after)
    if called.note:
        print(called.note, file=sys.stderr)


def pages(page: Callable[[str | None], Any], args: argparse.Namespace) -> dict[str, Any]:
    """One page from ``--cursor`` (or the first), or with ``--all`` every page as one."""
    answer: dict[str, Any] = page(args.cursor)
    items = list(answer["items"])
    while args.all and answer.get("next_cursor"):
        answer = page(answer["next_cursor"])
        items.extend(answer["items"])
    return {**answer, "items": items}
