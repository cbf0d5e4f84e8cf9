"""``scheduler schedules …`` (``schedules changes ID``: the change history), ``scheduler
executions …`` and ``scheduler dead-letters …``: the API from a terminal.

``scheduler_client`` calling a running API (``--url``, ``SCHEDULER_API_URL``), printing readable
tables or, with ``--json``, the API's answers as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, TypeVar

from scheduler_cli import bulk
from scheduler_client import ApiError, ConnectionFailed, SchedulerClient
from shared.ports.keys import NO_KEY
from shared.schedule_listing import SORTS
from shared.targets import summary

T = TypeVar("T")


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


SCHEDULE_COLUMNS = (
    ("id", "ID"),
    ("name", "NAME"),
    ("status", "STATUS"),
    ("paused_by", "PAUSED BY"),
    ("next_schedule_time", "NEXT (UTC)"),
    ("runs", "RUNS"),
    ("failures", "FAILURES"),
    ("last_status", "LAST"),
    ("target", "TARGET"),
)
EXECUTION_COLUMNS = (
    ("scheduled_time", "SCHEDULED (UTC)"),
    ("status", "STATUS"),
    ("attempts", "ATTEMPTS"),
    ("http_status", "HTTP"),
    ("lateness_ms", "LATE (ms)"),
    ("retry_delay_ms", "RETRIED AFTER (ms)"),
    ("duration_ms", "TOOK (ms)"),
    ("error", "ERROR"),
)

ATTEMPT_COLUMNS = (
    ("number", "#"),
    ("started_at", "STARTED (UTC)"),
    ("status", "STATUS"),
    ("http_status", "HTTP"),
    ("duration_ms", "TOOK (ms)"),
    ("error", "ERROR"),
    ("answer", "ANSWER"),
)
# How much of an answer's body a table shows (all of it with --json).
ANSWER_WIDTH = 60

CHANGE_COLUMNS = (
    ("at", "TIME (UTC)"),
    ("actor", "ACTOR"),
    ("action", "ACTION"),
    ("revision", "REVISION"),
    ("fields", "FIELDS"),
)
# How much of a field's old or new value the table of changes shows (all of it with --json).
VALUE_WIDTH = 40

DEAD_LETTER_COLUMNS = (
    ("id", "OCCURRENCE"),
    ("failed_at", "FAILED (UTC)"),
    ("attempts", "ATTEMPTS"),
    ("http_status", "HTTP"),
    ("error", "ERROR"),
)


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


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    schedules = commands.add_parser("schedules", help="list, show and change schedules via the API")
    actions = schedules.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="schedules, one per line")
    listing.add_argument("--status", choices=["active", "paused", "completed"])
    listing.add_argument("--name", help="name prefix")
    listing.add_argument("--tag")
    listing.add_argument(
        "--search", help="a text to find in names, tags and URL hosts (letter case ignored)"
    )
    listing.add_argument(
        "--sort",
        choices=list(SORTS),
        help="the order (id): by name, next fire or creation; -name, -next, -created the other "
        "way round (write --sort=-name)",
    )
    listing.add_argument("--limit", type=int, default=50, help="schedules per page (50)")
    paging(listing)
    client_options(listing)
    create = actions.add_parser(
        "create", help="create (or, with --id, create or replace) from a JSON file"
    )
    create.add_argument(
        "-f", "--file", required=True, type=Path, help="the request body; - for stdin"
    )
    create.add_argument("--id", help="PUT to this id instead of POST")
    client_options(create)
    update = actions.add_parser(
        "update", help="change some fields: a JSON merge patch from a file (PATCH)"
    )
    update.add_argument("id")
    update.add_argument(
        "-f", "--file", required=True, type=Path, help="the changes as JSON; - for stdin"
    )
    client_options(update)
    backfill = actions.add_parser(
        "backfill", help="run the occurrences of a past range that did not run"
    )
    backfill.add_argument("id")
    backfill.add_argument("--from", dest="start", required=True, help="ISO instant, included")
    backfill.add_argument("--to", dest="end", required=True, help="ISO instant, excluded")
    backfill.add_argument(
        "--policy",
        choices=["fire_all", "fire_once"],
        default="fire_all",
        help="run each occurrence, or only the latest",
    )
    client_options(backfill)
    pause = actions.add_parser("pause", help="stop firing until resumed, or until --until")
    pause.add_argument("id")
    pause.add_argument(
        "--until",
        help="ISO instant to come: it resumes by itself then, the misfire policy applied to "
        "what the pause missed",
    )
    pause.add_argument("--note", help="why, shown with the pause")
    client_options(pause)
    skip = actions.add_parser("skip", help="skip the next N occurrences, or the one at a time")
    skip.add_argument("id")
    skipped = skip.add_mutually_exclusive_group(required=True)
    skipped.add_argument("--count", type=int, help="how many of the next occurrences")
    skipped.add_argument("--at", help="the ISO instant of one occurrence to come")
    client_options(skip)
    unskip = actions.add_parser("unskip", help="undo the skips still to come (or --at one)")
    unskip.add_argument("id")
    unskip.add_argument("--at", help="undo only the skip of this occurrence")
    client_options(unskip)
    changes = actions.add_parser(
        "changes", help="a schedule's change history: who changed what, newest first"
    )
    changes.add_argument("id")
    changes.add_argument("--limit", type=int, default=20, help="changes per page (20)")
    paging(changes)
    client_options(changes)
    for action, text in (
        ("get", "one schedule"),
        ("resume", "fire again from now on"),
        ("trigger", "one extra run now"),
        ("delete", "stop for good"),
    ):
        parser = actions.add_parser(action, help=text)
        parser.add_argument("id")
        client_options(parser)
    bulk.add_command(actions, client_options)
    dead_letters = commands.add_parser(
        "dead-letters", help="occurrences that failed for good: list, replay, discard"
    )
    letters = dead_letters.add_subparsers(dest="action", required=True)
    listing = letters.add_parser("list", help="dead letters, the latest failure first")
    listing.add_argument("--limit", type=int, default=50)
    client_options(listing)
    for action, text in (
        ("replay", "fire it again, with the same occurrence id"),
        ("discard", "take it off the list for good"),
    ):
        parser = letters.add_parser(action, help=text)
        parser.add_argument("id", help="the occurrence id, as listed")
        client_options(parser)
    executions = commands.add_parser(
        "executions",
        help="a schedule's run history via the API; with an occurrence id, its every attempt",
    )
    executions.add_argument("id")
    executions.add_argument(
        "occurrence", nargs="?", help="an occurrence id from the history: its attempts"
    )
    executions.add_argument(
        "--status",
        choices=["running", "retrying", "succeeded", "failed", "skipped"],
        help="only the records in this status (skipped: the superseded ones too)",
    )
    executions.add_argument("--limit", type=int, default=20, help="runs per page (20)")
    paging(executions)
    client_options(executions)


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


def run(args: argparse.Namespace, environ: dict[str, str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.command == "schedules" and args.action == "bulk":
        result = call_api(args, environ, lambda client: bulk.run(client, args, out, sys.stdin))
        return 1 if result is None else result
    trace = {name: environ.get(name.upper()) for name in ("traceparent", "tracestate")}
    called = call_api(args, environ, lambda client: _request(client, args, trace))
    if called is None:
        return 1
    answer, rows, columns = called
    if args.json:
        out.write(json.dumps(answer, indent=2) + "\n")
    elif rows is not None:
        table(rows, columns, out)
    elif args.command == "schedules" and args.action in ("pause", "resume"):
        out.write(state_line(answer) + "\n")
    elif args.command == "schedules" and args.action in ("skip", "unskip"):
        out.write(skips_line(answer) + "\n")
    else:
        for key, value in answer.items():
            out.write(f"{key + ':':<26} {shown(key, value)}\n")
    more = answer.get("next_cursor") if isinstance(answer, dict) else None
    if more:
        print(
            f"{len(rows or [])} shown; there are more: add --cursor {more} for the next page, "
            "or --all for every page",
            file=sys.stderr,
        )
    return 0


def _request(
    client: SchedulerClient, args: argparse.Namespace, trace: dict[str, str | None]
) -> tuple[Any, list[dict[str, Any]] | None, Sequence[tuple[str, str]]]:
    """``trace``: the W3C trace context a create, replace or update continues, from the
    ``TRACEPARENT`` and ``TRACESTATE`` variables (OpenTelemetry's carriers for processes)."""
    if args.command == "executions" and args.occurrence:
        answer: Any = client.execution(args.id, args.occurrence)
        return answer, [_attempt_row(item) for item in answer["attempt_log"]], ATTEMPT_COLUMNS
    if args.command == "executions":

        def history(cursor: str | None) -> Any:
            return client.executions_page(
                args.id, status=args.status, limit=args.limit, cursor=cursor
            )

        answer = _pages(history, args)
        return answer, answer["items"], EXECUTION_COLUMNS
    action = args.action
    if args.command == "dead-letters":
        if action == "list":
            answer = client.dead_letters_page(limit=args.limit)
            return answer, answer["items"], DEAD_LETTER_COLUMNS
        if action == "replay":
            return client.replay(args.id), None, ()
        return client.discard(args.id), None, ()
    if action == "list":

        def schedules(cursor: str | None) -> Any:
            return client.list_page(
                status=args.status,
                name=args.name,
                tag=args.tag,
                search=args.search,
                sort=args.sort,
                limit=args.limit,
                cursor=cursor,
            )

        answer = _pages(schedules, args)
        rows = [{**item, "target": summary(item["payload"])} for item in answer["items"]]
        return answer, rows, SCHEDULE_COLUMNS
    if action == "changes":

        def changes(cursor: str | None) -> Any:
            return client.changes_page(args.id, limit=args.limit, cursor=cursor)

        answer = _pages(changes, args)
        return answer, [_change_row(item) for item in answer["items"]], CHANGE_COLUMNS
    if action == "create":
        body = _body_file(args.file)
        if args.id:
            return client.replace(args.id, body, **trace), None, ()
        return client.create(body, **trace), None, ()
    if action == "backfill":
        return client.backfill(args.id, args.start, args.end, policy=args.policy), None, ()
    if action == "update":
        return client.update(args.id, _body_file(args.file), **trace), None, ()
    if action == "pause":
        return client.pause(args.id, until=args.until, note=args.note), None, ()
    if action == "skip":
        return client.skip(args.id, count=args.count, at=args.at), None, ()
    if action == "unskip":
        return client.undo_skips(args.id, at=args.at), None, ()
    by_id: dict[str, Callable[[str], Any]] = {
        "get": client.get,
        "resume": client.resume,
        "trigger": client.trigger,
        "delete": client.delete,
    }
    return by_id[action](args.id), None, ()


def _pages(page: Callable[[str | None], Any], args: argparse.Namespace) -> dict[str, Any]:
    """One page from ``--cursor`` (or the first), or with ``--all`` every page as one."""
    answer: dict[str, Any] = page(args.cursor)
    items = list(answer["items"])
    while args.all and answer.get("next_cursor"):
        answer = page(answer["next_cursor"])
        items.extend(answer["items"])
    return {**answer, "items": items}


def state_line(schedule: dict[str, Any]) -> str:
    """A paused or resumed schedule in one line: its id, name, status, and who paused it (and
    with which key), until when and why, or when it fires next."""
    named = _named(schedule)
    if schedule.get("status") == "paused":
        line = f"{named}: paused by {schedule.get('paused_by') or 'user'}"
        set_by = schedule.get("pause_set_by")
        if set_by and set_by != NO_KEY:
            line += f" ({set_by})"
        if schedule.get("paused_until"):
            line += f" until {schedule['paused_until']}"
        return line + (f": {schedule['pause_note']}" if schedule.get("pause_note") else "")
    upcoming = shown("next_schedule_time", schedule.get("next_schedule_time"))
    return f"{named}: {schedule.get('status')}, fires next at {upcoming}"


def _named(schedule: dict[str, Any]) -> str:
    return f"{schedule['id']} ({schedule['name']})" if schedule.get("name") else schedule["id"]


def skips_line(schedule: dict[str, Any]) -> str:
    """A schedule's skips still to come in one line."""
    named = _named(schedule)
    skips = schedule.get("skips") or []
    if not skips:
        return f"{named}: skips nothing"
    return f"{named}: skips {len(skips)}: {', '.join(skips)}"


def _body_file(path: Path) -> Any:
    """The JSON of ``path`` (``-``: standard input), or ``ValueError`` naming the file and
    where its JSON breaks."""
    name = "standard input" if str(path) == "-" else str(path)
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as error:
        raise ValueError(f"{name}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{name}: not JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None


def _attempt_row(attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempt with what the webhook answered on one line: status line, then the start of
    its body."""
    parts = [attempt.get("response_status_line"), attempt.get("response_excerpt")]
    answer = " ".join(" ".join(str(part).split()) for part in parts if part)
    if len(answer) > ANSWER_WIDTH:
        answer = answer[: ANSWER_WIDTH - 1] + "…"
    return {**attempt, "answer": answer or None}


def _change_row(change: dict[str, Any]) -> dict[str, Any]:
    """A change on one line: who made it (the key's name and id, ``console: …``, ``system``),
    and each field as ``path: old -> new`` (a secret's: ``path: changed (secret)``)."""
    actor = change["actor"]
    who = actor.get("name") or "-"
    if actor.get("key_id"):
        who = f"{who} ({actor['key_id']})"
    if actor["kind"] == "console":
        who = f"console: {who}"
    parts = []
    for item in change["fields"]:
        if item["secret"]:
            parts.append(f"{item['path']}: changed (secret)")
        else:
            old, new = (_value(item["old"]), _value(item["new"]))
            parts.append(f"{item['path']}: {old} -> {new}")
    return {**change, "actor": who, "fields": "; ".join(parts) or None}


def _value(value: Any) -> str:
    text = shown("", value)
    return text if len(text) <= VALUE_WIDTH else text[: VALUE_WIDTH - 1] + "…"
