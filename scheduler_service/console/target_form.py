"""The schedule form's delivery target: which inputs each kind of ``payload`` has, and how
the ones that are not a plain value (the OAuth token, the answer checks) become the body's
members and back.

The form shows the inputs of the chosen kind only (``console.js``); the body takes only
those, so an ``sqs`` payload never carries the ``url`` of the ``http`` one the form also
holds. A kind other than the stored payload's starts the payload afresh, as a ``PATCH`` naming
another kind does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from shared.targets.http import HTTP, OAUTH_CLIENT_CREDENTIALS
from shared.targets.sns import SNS
from shared.targets.sqs import SQS

KINDS = (HTTP, SQS, SNS)
KIND_LABELS = {HTTP: "HTTP call", SQS: "SQS message", SNS: "SNS publish"}
# Inputs of every kind.
COMMON_INPUTS = ("payload.body", "payload.timeout_seconds", "payload.calls_per_host")
AUTH_INPUTS = (
    "payload.auth.token_url",
    "payload.auth.client_id",
    "payload.auth.client_secret",
    "payload.auth.scopes",
)
EXPECT_INPUTS = (
    "payload.expect.status",
    "payload.expect.json.pointer",
    "payload.expect.json.equals",
    "payload.expect.body_contains",
)
MESSAGE_INPUTS = (
    "payload.message_group_id",
    "payload.message_deduplication_id",
    "payload.role_arn",
)
KIND_INPUTS = {
    HTTP: (
        "payload.method",
        "payload.url",
        "payload.queryParameters",
        "payload.headers",
        *AUTH_INPUTS,
        *EXPECT_INPUTS,
    ),
    SQS: ("payload.queue_url", *MESSAGE_INPUTS),
    SNS: ("payload.topic_arn", *MESSAGE_INPUTS),
}
# Every target input, each once, in the form's order.
INPUTS = tuple(
    dict.fromkeys(
        [
            "payload.kind",
            *(name for names in KIND_INPUTS.values() for name in names),
            *COMMON_INPUTS,
        ]
    )
)
# Inputs whose value is JSON.
JSON_INPUTS = frozenset(
    {"payload.queryParameters", "payload.headers", "payload.body", "payload.expect.json.equals"}
)
_SEPARATORS = re.compile(r"[\s,]+")


def chosen_kind(values: Mapping[str, str], stored: Mapping[str, Any] | None) -> str:
    """The kind the form asks for (the stored payload's when it names none)."""
    kind = values.get("payload.kind", "").strip()
    if kind:
        return kind
    return str((stored or {}).get("kind", HTTP))


def takes(name: str, kind: str) -> bool:
    """Whether the body takes input ``name`` for a payload of ``kind``."""
    if not name.startswith("payload.") or name in COMMON_INPUTS:
        return True
    return name in KIND_INPUTS.get(kind, ())


def start_payload(body: dict[str, Any], kind: str) -> None:
    """The body's payload, of ``kind``: the stored one's members if it is of that kind, else
    none yet."""
    stored = body.get("payload")
    if not isinstance(stored, dict) or stored.get("kind", HTTP) != kind:
        stored = {}
    body["payload"] = {**stored, "kind": kind}


def listed(text: str) -> list[str]:
    """``"a b, c"`` → ``["a", "b", "c"]``: OAuth scopes."""
    return [item for item in _SEPARATORS.split(text) if item]


def statuses(text: str) -> list[int | str]:
    """``"2xx, 304"`` → ``["2xx", 304]``; the API names what is not a status."""
    return [int(item) if item.isdigit() else item for item in listed(text)]


def finish_payload(body: dict[str, Any]) -> None:
    """``auth`` with its type, or none when no input of it was filled in; ``expect`` without
    its empty parts, or none (a JSON check with an input of it filled in is kept, for the API
    to name what it lacks)."""
    payload = body["payload"]
    auth = payload.get("auth")
    if isinstance(auth, dict):
        if any(auth.get(name.rpartition(".")[2]) for name in AUTH_INPUTS):
            payload["auth"] = {**auth, "type": OAUTH_CLIENT_CREDENTIALS}
        else:
            payload.pop("auth")
    expect = payload.get("expect")
    if isinstance(expect, dict):
        check = expect.get("json")
        if isinstance(check, dict) and not check:
            expect.pop("json")
        if not expect:
            payload.pop("expect")


def form_values(payload: Mapping[str, Any], number: Any) -> dict[str, str]:
    """The target's inputs for a stored (masked) payload; ``number`` shows a number."""
    kind = payload.get("kind", HTTP)
    values = {
        "payload.kind": kind,
        "payload.body": "" if payload.get("body") is None else json.dumps(payload["body"]),
        "payload.timeout_seconds": number(payload["timeout_seconds"]),
        "payload.calls_per_host": number(payload.get("calls_per_host")),
    }
    if kind == HTTP:
        values.update(
            {
                "payload.method": payload["method"],
                "payload.url": payload["url"],
                "payload.queryParameters": json.dumps(payload["queryParameters"]),
                "payload.headers": json.dumps(payload["headers"]),
            }
        )
        auth = payload.get("auth") or {}
        for name in ("token_url", "client_id", "client_secret"):
            values[f"payload.auth.{name}"] = str(auth.get(name, ""))
        values["payload.auth.scopes"] = " ".join(auth.get("scopes", []))
        expect = payload.get("expect") or {}
        check = expect.get("json") or {}
        values["payload.expect.status"] = ", ".join(str(item) for item in expect.get("status", []))
        values["payload.expect.json.pointer"] = check.get("pointer", "")
        values["payload.expect.json.equals"] = json.dumps(check["equals"]) if check else ""
        values["payload.expect.body_contains"] = expect.get("body_contains") or ""
        return values
    values["payload.queue_url" if kind == SQS else "payload.topic_arn"] = payload.get(
        "queue_url" if kind == SQS else "topic_arn", ""
    )
    for name in MESSAGE_INPUTS:
        values[name] = payload.get(name.partition(".")[2]) or ""
    return values
