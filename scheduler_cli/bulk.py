"""``scheduler schedules bulk pause|resume|delete|patch``: act on every schedule a selector
matches (``POST /schedules/bulk``), after showing how many match and asking (unless ``--yes``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from scheduler_client import BulkSelector, SchedulerClient

# How many matched ids the question shows before asking.
SHOWN = 5


def add_command(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    client_options: Callable[[argparse.ArgumentParser], None],
) -> None:
    """``schedules bulk``, with the options of every command that calls the API."""
    bulk = actions.add_parser(
        "bulk",
        help="pause, resume, delete or patch every schedule a selector matches",
        description="Shows how many schedules match, asks, then acts on all of them (the API "
        "works a page at a time; this follows it to the end). At least one of --tag, "
        "--name-prefix, --id, --status, --search; all given must hold.",
    )
    bulk.add_argument("bulk_action", choices=["pause", "resume", "delete", "patch"])
    bulk.add_argument("--tag", help="schedules carrying this tag")
    bulk.add_argument("--name-prefix", help="schedules whose name starts with this")
    bulk.add_argument(
        "--id", dest="ids", action="append", help="this schedule (repeat for several)"
    )
    bulk.add_argument("--status", choices=["active", "paused", "completed"])
    bulk.add_argument("--search", help="as schedules list --search: in names, tags, URL hosts")
    bulk.add_argument(
        "--patch",
        help="with patch: the JSON merge patch, as JSON text or a file's path (- for stdin)",
    )
    bulk.add_argument("--dry-run", action="store_true", help="show what matches; change nothing")
    bulk.add_argument("--yes", action="store_true", help="do not ask before changing")
    client_options(bulk)


def selector_of(args: argparse.Namespace) -> BulkSelector:
    selector: BulkSelector = {}
    if args.tag is not None:
        selector["tag"] = args.tag
    if args.name_prefix is not None:
        selector["name_prefix"] = args.name_prefix
    if args.ids:
        selector["ids"] = list(args.ids)
    if args.status is not None:
        selector["status"] = args.status
    if args.search is not None:
        selector["search"] = args.search
    return selector


def patch_of(text: str | None) -> dict[str, Any] | None:
    """``--patch``: JSON text, or the path of a file holding it (``-``: stdin)."""
    if text is None:
        return None
    stripped = text.strip()
    if stripped.startswith("{"):
        source = stripped
    elif text == "-":
        source = sys.stdin.read()
    else:
        source = Path(text).read_text()
    patch = json.loads(source)
    if not isinstance(patch, dict):
        raise ValueError("--patch: a JSON object of the fields to change")
    return patch


def run(
    client: SchedulerClient,
    args: argparse.Namespace,
    out: TextIO,
    ask: TextIO,
) -> int:
    """Count, ask, act; 0 when done (or nothing matched, or a dry run), 1 when the person
    said no, 2 when some schedules failed."""
    action = args.bulk_action
    if action == "patch" and args.patch is None:
        raise ValueError("bulk patch needs --patch: the fields to change")
    if action != "patch" and args.patch is not None:
        raise ValueError("--patch goes with bulk patch only")
    selector = selector_of(args)
    patch = patch_of(args.patch)
    found = client.bulk_dry_run(action, selector, patch=patch)
    if args.json and args.dry_run:
        out.write(json.dumps(found, indent=2) + "\n")
        return 0
    matched = found["matched"]
    first = ", ".join(item["id"] for item in found["sample"][:SHOWN])
    more = ", …" if matched > SHOWN else ""
    out.write(f"{matched} schedule{'s' if matched != 1 else ''} match ({first}{more})\n")
    if args.dry_run or matched == 0:
        return 0
    if not args.yes:
        out.write(f"{action} {matched} schedule{'s' if matched != 1 else ''}? [y/N] ")
        out.flush()
        if ask.readline().strip().lower() not in ("y", "yes"):
            out.write("nothing changed\n")
            return 1
    done = client.bulk(action, selector, patch=patch)
    if args.json:
        out.write(json.dumps(done, indent=2) + "\n")
    else:
        out.write(
            f"{done['changed']} changed, {done['unchanged']} unchanged, {done['failed']} failed "
            f"({done['matched']} gone over in {done.get('parts', 1)} part"
            f"{'s' if done.get('parts', 1) != 1 else ''})\n"
        )
        for failure in done["failures"]:
            out.write(f"  {failure['id']}: {failure['reason']}\n")
    return 2 if done["failed"] else 0
