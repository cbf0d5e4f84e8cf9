"""``scheduler schedules …``: list, show, create, change and act on schedules through the API
(``schedules changes ID``: the change history; ``schedules bulk``: ``scheduler_cli.bulk``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from scheduler_cli import bulk
from scheduler_cli.operator import (
    Shown,
    Trace,
    answer_command,
    call_api,
    client_options,
    command_group,
    pages,
    paging,
    shown,
)
from scheduler_client import SchedulerClient
from shared.ports.keys import NO_KEY
from shared.schedule_listing import SORTS
from shared.targets import summary

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
CHANGE_COLUMNS = (
    ("at", "TIME (UTC)"),
    ("actor", "ACTOR"),
    ("action", "ACTION"),
    ("revision", "REVISION"),
    ("fields", "FIELDS"),
)
# How much of a field's old or new value the table of changes shows (all of it with --json).
VALUE_WIDTH = 40
# The options of ``schedules list`` that it passes on to ``SchedulerClient.list_page`` as they are.
LIST_FILTERS = ("status", "name", "tag", "search", "sort")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions = command_group(
        commands, "schedules", help="list, show and change schedules via the API"
    )
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


def run(args: argparse.Namespace, environ: dict[str, str], out: TextIO | None = None) -> int:
    if args.action == "bulk":
        writer = out or sys.stdout
        result = call_api(args, environ, lambda client: bulk.run(client, args, writer, sys.stdin))
        return 1 if result is None else result
    return answer_command(args, environ, ACTIONS[args.action], out)


def _list(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    def schedules(cursor: str | None) -> Any:
        filters = {name: getattr(args, name) for name in LIST_FILTERS}
        return client.list_page(**filters, limit=args.limit, cursor=cursor)

    answer = pages(schedules, args)
    rows = [{**item, "target": summary(item["payload"])} for item in answer["items"]]
    return Shown(answer, rows, SCHEDULE_COLUMNS)


def _changes(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    def changes(cursor: str | None) -> Any:
        return client.changes_page(args.id, limit=args.limit, cursor=cursor)

    answer = pages(changes, args)
    return Shown(answer, [_change_row(item) for item in answer["items"]], CHANGE_COLUMNS)


def _create(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    body = _body_file(args.file)
    if args.id:
        return Shown(client.replace(args.id, body, **trace))
    return Shown(client.create(body, **trace))


def _state(answer: Any) -> Shown:
    return Shown(answer, line=state_line(answer))


def _skips(answer: Any) -> Shown:
    return Shown(answer, line=skips_line(answer))


# Each action of ``schedules`` (``bulk`` aside): its call, and how its answer is shown.
ACTIONS: dict[str, Callable[[SchedulerClient, argparse.Namespace, Trace], Shown]] = {
    "list": _list,
    "changes": _changes,
    "create": _create,
    "update": lambda client, args, trace: Shown(
        client.update(args.id, _body_file(args.file), **trace)
    ),
    "backfill": lambda client, args, trace: Shown(
        client.backfill(args.id, args.start, args.end, policy=args.policy)
    ),
    "pause": lambda client, args, trace: _state(
        client.pause(args.id, until=args.until, note=args.note)
    ),
    "resume": lambda client, args, trace: _state(client.resume(args.id)),
    "skip": lambda client, args, trace: _skips(client.skip(args.id, count=args.count, at=args.at)),
    "unskip": lambda client, args, trace: _skips(client.undo_skips(args.id, at=args.at)),
    "get": lambda client, args, trace: Shown(client.get(args.id)),
    "trigger": lambda client, args, trace: Shown(client.trigger(args.id)),
    "delete": lambda client, args, trace: Shown(client.delete(args.id)),
}


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
