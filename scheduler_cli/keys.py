"""``scheduler keys create|list|revoke``: API keys kept (hashed) in the store.

A key is shown once, when it is created; the store keeps only its SHA-256. Keys can also be
given in ``SCHEDULER_API_KEYS`` (``tenant:sha256:<hex>``): ``create --print-only`` makes a key
and prints that line without storing anything.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from scheduler_service.auth import hash_key, new_api_key
from shared.backends import open_backends
from shared.ports import ApiKey, SystemClock
from shared.settings import TENANT_NAME, Settings


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = commands.add_parser("keys", help="API keys: create, list, revoke (in the store)")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="a new key for a tenant, shown once")
    create.add_argument("tenant")
    create.add_argument("--name", default="", help="what the key is for")
    create.add_argument(
        "--print-only",
        action="store_true",
        help="store nothing; print the key and its SCHEDULER_API_KEYS entry",
    )
    listing = actions.add_parser("list", help="stored keys (their ids, never the keys)")
    listing.add_argument("--tenant")
    revoke = actions.add_parser("revoke", help="delete a stored key by its id")
    revoke.add_argument("key_id")


def run(args: argparse.Namespace, settings: Settings, out: TextIO = sys.stdout) -> int:
    if args.action == "create" and not TENANT_NAME.match(args.tenant):
        print("scheduler keys: a tenant is 1-64 letters, digits, . _ ~ -", file=sys.stderr)
        return 2
    if args.action == "create" and args.print_only:
        key = new_api_key()
        out.write(f"key: {key}\nSCHEDULER_API_KEYS entry: {args.tenant}:sha256:{hash_key(key)}\n")
        return 0
    backends = open_backends(settings)
    try:
        store = backends.store
        if args.action == "create":
            key = new_api_key()
            record = ApiKey(hash_key(key), args.tenant, args.name, SystemClock().now())
            store.add_api_key(record)
            out.write(f"key: {key}\nid: {record.key_id}  (the key is not shown again)\n")
            return 0
        if args.action == "list":
            for record in store.list_api_keys(args.tenant):
                stamp = record.created_at.isoformat(timespec="seconds")
                out.write(f"{record.key_id}  {record.tenant}  {stamp}  {record.name}\n")
            return 0
        removed = store.delete_api_key(args.key_id.strip().lower())
        if not removed:
            print(f"scheduler keys: no key with id {args.key_id!r}", file=sys.stderr)
            return 1
        out.write(f"revoked {removed} key(s)\n")
        return 0
    finally:
        backends.close()
