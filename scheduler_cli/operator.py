"""``scheduler schedules …``, ``scheduler executions …`` and ``scheduler dead-letters …``: the
API from a terminal.

A thin HTTP client of a running API (``--url``, ``SCHEDULER_API_URL``), printing readable tables
or, with ``--json``, the API's answers as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from scheduler_client import api_base

API_PREFIX = "/scheduler-service/v1"


class ApiError(Exception):
    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        self.status = status
        self.problem = problem
        super().__init__(status)

    def describe(self) -> str:
        title = self.problem.get("title", "error")
        lines = [f"{self.status} {title}: {self.problem.get('detail', '')}".rstrip(": ")]
        for error in self.problem.get("errors") or []:
            lines.append(f"  {error.get('field')}: {error.get('message')}")
        return "\n".join(lines)


class Client:
    def __init__(self, base_url: str, api_key: str | None, timeout: float = 10.0) -> None:
        self.base_url = api_base(base_url)
        self.api_key = api_key
        self.timeout = timeout

    def call(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        url = f"{self.base_url}{API_PREFIX}{path}"
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            with error:
                raw = error.read()
            try:
                problem = json.loads(raw) if raw else {}
            except ValueError:
                problem = {"detail": raw.decode(errors="replace")[:200]}
            raise ApiError(error.code, problem if isinstance(problem, dict) else {}) from None


def shown(key: str, value: Any) -> str:
    """A value as a person reads it: ``-`` for none, milliseconds to one decimal."""
    if value is None:
        return "-"
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

DEAD_LETTER_COLUMNS = (
    ("id", "OCCURRENCE"),
    ("failed_at", "FAILED (UTC)"),
    ("attempts", "ATTEMPTS"),
    ("http_status", "HTTP"),
    ("error", "ERROR"),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    def client_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--url",
            help="where the API listens, as scheduler dev prints it or without its path or "
            "http:// (SCHEDULER_API_URL; http://127.0.0.1:8080)",
        )
        parser.add_argument("--api-key", help="API key (SCHEDULER_API_KEY); none for scheduler dev")
        parser.add_argument("--json", action="store_true", help="print the API's JSON answer")

    schedules = commands.add_parser("schedules", help="list, show and change schedules via the API")
    actions = schedules.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="schedules, one per line")
    listing.add_argument("--status", choices=["active", "paused", "completed"])
    listing.add_argument("--name", help="name prefix")
    listing.add_argument("--tag")
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
    for action, text in (
        ("get", "one schedule"),
        ("pause", "stop firing until resumed"),
        ("resume", "fire again from now on"),
        ("trigger", "one extra run now"),
        ("delete", "stop for good"),
    ):
        parser = actions.add_parser(action, help=text)
        parser.add_argument("id")
        client_options(parser)
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


def run(args: argparse.Namespace, environ: dict[str, str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    client = Client(
        args.url or environ.get("SCHEDULER_API_URL", "http://127.0.0.1:8080"),
        args.api_key or environ.get("SCHEDULER_API_KEY"),
    )
    try:
        answer, rows, columns = _request(client, args)
    except ApiError as error:
        print(error.describe(), file=sys.stderr)
        return 1
    except urllib.error.URLError as error:
        print(f"cannot reach {client.base_url}: {error.reason}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        print(f"scheduler: {error}", file=sys.stderr)
        return 1
    if args.json:
        out.write(json.dumps(answer, indent=2) + "\n")
    elif rows is not None:
        table(rows, columns, out)
    elif args.command == "schedules" and args.action in ("pause", "resume"):
        out.write(state_line(answer) + "\n")
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
    client: Client, args: argparse.Namespace
) -> tuple[Any, list[dict[str, Any]] | None, Sequence[tuple[str, str]]]:
    if args.command == "executions" and args.occurrence:
        path = f"/schedule/{_quote(args.id)}/executions/{_quote(args.occurrence)}"
        answer = client.call("GET", path)
        return answer, [_attempt_row(item) for item in answer["attempt_log"]], ATTEMPT_COLUMNS
    if args.command == "executions":
        query = {"limit": args.limit, "status": args.status}
        answer = _pages(client, f"/schedule/{_quote(args.id)}/executions", query, args)
        return answer, answer["items"], EXECUTION_COLUMNS
    action = args.action
    if args.command == "dead-letters":
        if action == "list":
            answer = client.call("GET", "/dead-letters", query={"limit": args.limit})
            return answer, answer["items"], DEAD_LETTER_COLUMNS
        path = f"/dead-letters/{_quote(args.id)}"
        if action == "replay":
            return client.call("POST", f"{path}/replay"), None, ()
        return client.call("DELETE", path), None, ()
    if action == "list":
        query = {"status": args.status, "name": args.name, "tag": args.tag, "limit": args.limit}
        answer = _pages(client, "/schedules", query, args)
        return answer, answer["items"], SCHEDULE_COLUMNS
    if action == "create":
        body = _body_file(args.file)
        if args.id:
            return client.call("PUT", f"/schedule/{_quote(args.id)}", body), None, ()
        return client.call("POST", "/schedule", body), None, ()
    path = f"/schedule/{_quote(args.id)}"
    if action == "backfill":
        body = {"from": args.start, "to": args.end, "policy": args.policy}
        return client.call("POST", f"{path}/backfill", body), None, ()
    if action == "update":
        return client.call("PATCH", path, _body_file(args.file)), None, ()
    if action == "get":
        return client.call("GET", path), None, ()
    if action == "delete":
        return client.call("DELETE", path), None, ()
    return client.call("POST", f"{path}/{action}"), None, ()


def _pages(
    client: Client, path: str, query: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """One page from ``--cursor`` (or the first), or with ``--all`` every page as one."""
    answer: dict[str, Any] = client.call("GET", path, query={**query, "cursor": args.cursor})
    items = list(answer["items"])
    while args.all and answer.get("next_cursor"):
        answer = client.call("GET", path, query={**query, "cursor": answer["next_cursor"]})
        items.extend(answer["items"])
    return {**answer, "items": items}


def state_line(schedule: dict[str, Any]) -> str:
    """A paused or resumed schedule in one line: its id, name, status, and who paused it or
    when it fires next."""
    named = f"{schedule['id']} ({schedule['name']})" if schedule.get("name") else schedule["id"]
    if schedule.get("status") == "paused":
        return f"{named}: paused by {schedule.get('paused_by') or 'user'}"
    upcoming = shown("next_schedule_time", schedule.get("next_schedule_time"))
    return f"{named}: {schedule.get('status')}, fires next at {upcoming}"


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


def _quote(schedule_id: str) -> str:
    return urllib.parse.quote(schedule_id, safe="")
