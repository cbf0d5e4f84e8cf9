"""``scheduler keys create|list|revoke``: API keys kept (hashed) in the store.

A key is shown once, when it is created; the store keeps only its SHA-256. Keys can also be
given in ``SCHEDULER_API_KEYS`` (``tenant/role:sha256:<hex>``): ``create --print-only`` makes a
key and prints that line without storing anything. Each key has a role (``--role``): ``read``,
``write`` or ``admin`` (``scheduler_service.roles``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from scheduler_cli.operator import command_group
from shared.ports import ApiKey, Role, SystemClock

if TYPE_CHECKING:
    from shared.settings import Settings


def keys_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """The settings of the store the keys are in: ``SCHEDULER_STORE_URL``, or else the
    database of ``scheduler dev`` in ``--data-dir``, found as ``scheduler dev`` finds it."""
    from shared.settings import PREFIX, Settings

    if PREFIX + "STORE_URL" in environ:
        return Settings.from_env(environ)
    url = f"sqlite:///{(Path(args.data_dir) / 'scheduler.db').resolve()}"
    return Settings.from_env(environ, store_url=url, queue_url=url)


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actions = command_group(
        commands,
        "keys",
        help="API keys: create, list, revoke (in the store)",
        description="Keys are kept in the store of SCHEDULER_STORE_URL; without it, in the "
        "database scheduler dev keeps in --data-dir (scheduler-data, from the folder it was "
        "started in). A database that does not exist is never created.",
    )
    create = actions.add_parser("create", help="a new key for a tenant, shown once")
    create.add_argument("tenant")
    create.add_argument("--name", default="", help="what the key is for")
    create.add_argument(
        "--role",
        choices=[role.value for role in Role],
        default=Role.ADMIN.value,
        help="read: reads only; write: also changes schedules and runs; admin (the default, "
        "as every key before roles): also signing secrets",
    )
    create.add_argument(
        "--print-only",
        action="store_true",
        help="store nothing; print the key and its SCHEDULER_API_KEYS entry",
    )
    listing = actions.add_parser("list", help="stored keys (their ids, never the keys)")
    listing.add_argument("--tenant")
    revoke = actions.add_parser("revoke", help="delete a stored key by its id")
    revoke.add_argument("key_id")
    for parser in (create, listing, revoke):
        parser.add_argument(
            "--data-dir",
            default="scheduler-data",
            help="scheduler dev's data folder, when SCHEDULER_STORE_URL is not set",
        )


def run(args: argparse.Namespace, settings: Settings, out: TextIO | None = None) -> int:
    # The store's code, imported here: the other commands start without it.
    from scheduler_service.auth import hash_key, new_api_key
    from shared.adapters.sqlite.db import sqlite_path
    from shared.backends import opened_store
    from shared.settings import TENANT_NAME

    out = out or sys.stdout
    if args.action == "create" and not TENANT_NAME.match(args.tenant):
        print("scheduler keys: a tenant is 1-64 letters, digits, . _ ~ -", file=sys.stderr)
        return 2
    if args.action == "create" and args.print_only:
        key = new_api_key()
        entry = f"{args.tenant}/{args.role}:sha256:{hash_key(key)}"
        out.write(f"key: {key}\nrole: {args.role}\nSCHEDULER_API_KEYS entry: {entry}\n")
        return 0
    if settings.store_url.startswith("sqlite:"):
        database = sqlite_path(settings.store_url).resolve()
        if not database.is_file():
            # A new empty database would hold a key no running API reads.
            print(
                f"scheduler keys: no database at {database}. Run this in the folder scheduler "
                "dev was started from, pass --data-dir, or set SCHEDULER_STORE_URL to the "
                "API's store.",
                file=sys.stderr,
            )
            return 2
    with opened_store(settings) as store:
        if args.action == "create":
            key = new_api_key()
            record = ApiKey(
                hash_key(key), args.tenant, args.name, SystemClock().now(), Role(args.role)
            )
            store.add_api_key(record)
            out.write(
                f"key: {key}\nid: {record.key_id}  role: {record.role.value}"
                "  (the key is not shown again)\n"
            )
            return 0
        if args.action == "list":
            for record in store.list_api_keys(args.tenant):
                stamp = record.created_at.isoformat(timespec="seconds")
                out.write(
                    f"{record.key_id}  {record.tenant}  {record.role.value:<5}  {stamp}"
                    f"  {record.name}\n"
                )
            return 0
        removed = store.delete_api_key(args.key_id.strip().lower())
        if not removed:
            print(f"scheduler keys: no key with id {args.key_id!r}", file=sys.stderr)
            return 1
        out.write(f"revoked {removed} key(s)\n")
        return 0
