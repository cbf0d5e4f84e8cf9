"""``scheduler apply -f FILE|FOLDER`` and ``scheduler export``: schedules kept in files
(``scheduler_cli.manifests``), applied through the API (docs/apply.md).

An apply first asks the API what each schedule of the files would change
(``POST /schedule/{id}/diff``: create, update with the field paths, or unchanged; the API reads
the body exactly as a ``PUT`` would, so a bad field is refused here, before anything is
applied); with ``--prune``, the tenant's schedules labelled with the files' ``managed_by``
that the files no longer hold are deleted. It shows that plan, asks (or takes ``--yes``), then
sends a ``PUT /schedule/{id}`` for each create and update and a ``DELETE`` for each prune.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from scheduler_cli.manifests import Manifest, ManifestError, dump, load
from scheduler_cli.operator import call_api, client_options
from scheduler_client import InvalidRequest, Schedule, SchedulerClient

SIGNS = {"create": "+", "update": "~", "unchanged": "=", "delete": "-"}
DONE = {"create": "created", "update": "updated", "delete": "deleted"}


@dataclass
class Plan:
    """What an apply would do, schedule by schedule, in the files' order (deletions last)."""

    steps: list[tuple[str, str, list[str]]] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for step in self.steps if step[0] == action)

    @property
    def changes(self) -> bool:
        return any(action != "unchanged" for action, _, _ in self.steps)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    apply = commands.add_parser(
        "apply",
        help="create, update (and with --prune delete) schedules to match YAML files",
        description="Make the tenant's schedules match the files: shows the plan (create, "
        "update with the fields it changes, unchanged; with --prune, delete), asks, then "
        "applies it through the API. See docs/apply.md.",
    )
    apply.add_argument(
        "-f",
        "--file",
        dest="files",
        action="append",
        type=Path,
        required=True,
        help="a YAML file, or a folder of them (*.yaml, *.yml); may be repeated",
    )
    apply.add_argument(
        "--prune",
        action="store_true",
        help="also delete the schedules labelled with the files' managed_by that they no "
        "longer hold",
    )
    apply.add_argument("--yes", action="store_true", help="apply without asking")
    apply.add_argument("--dry-run", action="store_true", help="show the plan, change nothing")
    client_options(apply, json_answer=False)
    export = commands.add_parser(
        "export",
        help="write the tenant's schedules as a file scheduler apply reads",
        description="Writes the schedules of the API key's tenant that match every selector "
        "given, in the format scheduler apply reads (secrets masked: an apply keeps the stored "
        "ones). Applying the output changes nothing.",
    )
    export.add_argument("--tag", help="schedules with this tag")
    export.add_argument("--name-prefix", help="schedules whose name starts with this")
    export.add_argument(
        "--managed-by",
        help="schedules with this label (written as the file's managed_by)",
    )
    export.add_argument("-o", "--output", type=Path, help="the file to write (standard output)")
    client_options(export, json_answer=False)


def run(
    args: argparse.Namespace,
    environ: dict[str, str],
    out: TextIO | None = None,
    ask: Callable[[str], str] = input,
) -> int:
    out = out or sys.stdout
    if args.command == "export":
        return _export(args, environ, out)
    try:
        manifest = load(args.files)
    except (ManifestError, OSError, UnicodeDecodeError) as exc:
        print(f"scheduler apply: {exc}", file=sys.stderr)
        return 1
    if args.prune and manifest.managed_by is None:
        print(
            "scheduler apply: --prune needs managed_by at the top of the files: it deletes only "
            "the schedules of that label",
            file=sys.stderr,
        )
        return 2
    answer = call_api(args, environ, lambda client: _apply(client, manifest, args, out, ask))
    return 1 if answer is None else answer


def _apply(
    client: SchedulerClient,
    manifest: Manifest,
    args: argparse.Namespace,
    out: TextIO,
    ask: Callable[[str], str],
) -> int:
    plan = Plan()
    refused = False
    for entry in manifest.entries:
        try:
            diff = client.diff(entry.schedule_id, entry.body)
        except InvalidRequest as error:
            refused = True
            for item in error.errors:
                print(f"{entry.where(item.field)}: {item.message}", file=sys.stderr)
            continue
        plan.steps.append((diff["action"], entry.schedule_id, diff["changes"]))
    if refused:
        print("scheduler apply: nothing applied (fix the fields above)", file=sys.stderr)
        return 1
    if args.prune:
        kept = {entry.schedule_id for entry in manifest.entries}
        plan.steps += [
            ("delete", schedule["id"], [])
            for schedule in _managed(client, manifest.managed_by)
            if schedule["id"] not in kept
        ]
    _show(plan, out)
    if not plan.changes or args.dry_run:
        return 0
    if not args.yes:
        try:
            reply = ask("Apply these changes? [y/N] ")
        except EOFError:
            reply = ""
        if reply.strip().lower() not in ("y", "yes"):
            print("Nothing applied.", file=out)
            return 1
    bodies = {entry.schedule_id: entry.body for entry in manifest.entries}
    for action, schedule_id, _ in plan.steps:
        if action in ("create", "update"):
            client.replace(schedule_id, bodies[schedule_id])
        elif action == "delete":
            client.delete(schedule_id)
        if action in DONE:
            print(f"{DONE[action]} {schedule_id}", file=out)
    return 0


def _show(plan: Plan, out: TextIO) -> None:
    for action, schedule_id, changes in plan.steps:
        detail = f" ({', '.join(changes)})" if changes else ""
        print(f"{SIGNS[action]} {action:<9} {schedule_id}{detail}", file=out)
    counts = ", ".join(
        f"{plan.count(action)} {name}"
        for action, name in (
            ("create", "to create"),
            ("update", "to update"),
            ("delete", "to delete"),
            ("unchanged", "unchanged"),
        )
    )
    print(f"Plan: {counts}.", file=out)


def _managed(client: SchedulerClient, label: str | None) -> Iterator[Schedule]:
    """The tenant's schedules labelled ``label`` (every schedule is read: the API has no
    filter by label yet)."""
    return (schedule for schedule in client.list() if schedule.get("managed_by") == label)


def _export(args: argparse.Namespace, environ: dict[str, str], out: TextIO) -> int:
    # The API's schema, imported here: the other commands start without the service's code.
    from scheduler_service.requests.schedule import ScheduleBodySchema

    # The members of a schedule as the API shows it that a body sends back: those the body of
    # a PUT declares (the others are its state: status, runs, next time …).
    body_fields = tuple(ScheduleBodySchema().fields)

    def schedules(client: SchedulerClient) -> list[dict[str, Any]]:
        found = client.list(tag=args.tag, name=args.name_prefix)
        return [
            {name: schedule[name] for name in body_fields if name in schedule}  # type: ignore[literal-required]
            for schedule in found
            if args.managed_by is None or schedule.get("managed_by") == args.managed_by
        ]

    bodies = call_api(args, environ, schedules)
    if bodies is None:
        return 1
    text = dump(args.managed_by, bodies)
    if args.output is None:
        out.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"{len(bodies)} schedules written to {args.output}", file=sys.stderr)
    return 0
