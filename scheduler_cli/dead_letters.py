"""``scheduler dead-letters list|replay|discard``: the occurrences that failed for good, through
the API."""

from __future__ import annotations

import argparse
from typing import Any

from scheduler_cli.operator import Shown, Trace, client_options, command_group
from scheduler_client import SchedulerClient

DEAD_LETTER_COLUMNS = (
    ("id", "OCCURRENCE"),
    ("failed_at", "FAILED (UTC)"),
    ("attempts", "ATTEMPTS"),
    ("http_status", "HTTP"),
    ("error", "ERROR"),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    letters = command_group(
        commands, "dead-letters", help="occurrences that failed for good: list, replay, discard"
    )
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


def request(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    if args.action == "list":
        answer: Any = client.dead_letters_page(limit=args.limit)
        return Shown(answer, answer["items"], DEAD_LETTER_COLUMNS)
    if args.action == "replay":
        return Shown(client.replay(args.id))
    return Shown(client.discard(args.id))
