"""``scheduler signing-secrets list|rotate``: the tenant's webhook signing secrets, through a
running API (``--url``, ``--api-key``: the key's tenant is the one listed and rotated).

``list`` shows each secret's id, state and creation time, never the secret; ``rotate`` prints
the new secret, this once (``shared.signing``).
"""

from __future__ import annotations

import argparse
from typing import Any

from scheduler_cli.operator import Shown, Trace, client_options, command_group
from scheduler_client import SchedulerClient

SECRET_COLUMNS = (
    ("id", "ID"),
    ("state", "STATE"),
    ("created_at", "CREATED (UTC)"),
    ("retires_at", "RETIRES (UTC)"),
    ("current_from", "CURRENT FROM (UTC)"),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions = command_group(
        commands,
        "signing-secrets",
        help="the secrets that sign your webhooks via the API: list, rotate",
        description="The tenant of the API key (or scheduler dev's one tenant): its signing "
        "secrets, by id, state and creation time. A rotation prints the new secret once.",
    )
    client_options(actions.add_parser("list", help="ids, states, creation times; no secret"))
    rotate = actions.add_parser(
        "rotate", help="a new secret, shown once; the ones before sign beside it a while"
    )
    rotate.add_argument(
        "--overlap-seconds",
        type=int,
        help="how long the secrets before keep signing (the server's default: 86400); 0: "
        "they retire at once",
    )
    client_options(rotate)


def request(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    answer: Any
    rotated: list[str] = []
    if args.action == "list":
        answer = {"items": client.signing_secrets()}
    else:
        answer = client.rotate_signing_secret(overlap_seconds=args.overlap_seconds)
        ends = answer["current_from"]
        rotated = [
            f"secret: {answer['secret']}  (shown this once: give it to your receivers)",
            f"id: {answer['id']}",
            f"the secrets before sign beside it until {ends}"
            if ends
            else "the secrets before are retired",
        ]
    unsigned = None if answer["items"] else "no secret signs: webhooks go unsigned"
    return Shown(answer, answer["items"], SECRET_COLUMNS, before=rotated, note=unsigned)
