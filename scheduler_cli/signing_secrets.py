"""``scheduler signing-secrets list|rotate``: the tenant's webhook signing secrets, through a
running API (``--url``, ``--api-key``: the key's tenant is the one listed and rotated).

``list`` shows each secret's id, state and creation time, never the secret; ``rotate`` prints
the new secret, this once (``shared.signing``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from scheduler_cli.operator import call_api, client_options, table
from scheduler_client import SchedulerClient

SECRET_COLUMNS = (
    ("id", "ID"),
    ("state", "STATE"),
    ("created_at", "CREATED (UTC)"),
    ("retires_at", "RETIRES (UTC)"),
    ("current_from", "CURRENT FROM (UTC)"),
)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "signing-secrets",
        help="the secrets that sign your webhooks via the API: list, rotate",
        description="The tenant of the API key (or scheduler dev's one tenant): its signing "
        "secrets, by id, state and creation time. A rotation prints the new secret once.",
    )
    actions = parser.add_subparsers(dest="action", required=True)
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


def run(args: argparse.Namespace, environ: dict[str, str], out: TextIO | None = None) -> int:
    out = out or sys.stdout

    def request(client: SchedulerClient) -> Any:
        if args.action == "list":
            return {"items": client.signing_secrets()}
        return client.rotate_signing_secret(overlap_seconds=args.overlap_seconds)

    answer = call_api(args, environ, request)
    if answer is None:
        return 1
    if args.json:
        out.write(json.dumps(answer, indent=2) + "\n")
        return 0
    if args.action == "rotate":
        out.write(f"secret: {answer['secret']}  (shown this once: give it to your receivers)\n")
        out.write(f"id: {answer['id']}\n")
        ends = answer["current_from"]
        out.write(
            f"the secrets before sign beside it until {ends}\n"
            if ends
            else "the secrets before are retired\n"
        )
    table(answer["items"], SECRET_COLUMNS, out)
    if not answer["items"]:
        print("no secret signs: webhooks go unsigned", file=sys.stderr)
    return 0
