"""The console's schedule form: its inputs ↔ the API's request body.

Each input is named by the API field it fills (``schedule.cron``, ``payload.url``), so the
API's validation errors, which name fields the same way, are shown beside their inputs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler_service.patching import stored_body
from scheduler_service.schemas import METHODS, SEED_FIELDS
from shared.model import MisfirePolicy, Schedule, Unit
from shared.redaction import MASK

NOTATIONS = {
    "cron": "Cron line",
    "interval": "Every N units",
    "rrule": "RRULE (RFC 5545)",
    "at": "Once, at a time",
    "blueprint": "Start date, time of day, repeat interval",
}
UNITS = [unit.value for unit in Unit]
POLICIES = [policy.value for policy in MisfirePolicy]
HTTP_METHODS = list(METHODS)

# The inputs of each notation; the others are left out of the body.
NOTATION_INPUTS = {
    "cron": ("schedule.cron",),
    "interval": ("schedule.interval.number", "schedule.interval.unit"),
    "rrule": ("schedule.rrule",),
    "at": ("schedule.at",),
    "blueprint": (
        "schedule.start_date",
        "schedule.end_date",
        "schedule.timeZone",
        "schedule.time_of_day",
        "schedule.am_pm",
        "schedule.repeat_interval.number",
        "schedule.repeat_interval.unit",
    ),
}
CANONICAL_INPUTS = (
    "schedule.timezone",
    "schedule.start",
    "schedule.end",
    "schedule.max_occurrences",
)
OTHER_INPUTS = (
    "id",
    "name",
    "description",
    "tags",
    "priority",
    "payload.method",
    "payload.url",
    "payload.headers",
    "payload.body",
    "payload.timeout_seconds",
    "retry.max_attempts",
    "misfire.policy",
)
INPUTS = frozenset(
    [
        *OTHER_INPUTS,
        *CANONICAL_INPUTS,
        *(name for names in NOTATION_INPUTS.values() for name in names),
    ]
)
JSON_INPUTS = ("payload.headers", "payload.body")
NUMBER_INPUTS = frozenset(
    {
        "priority",
        "payload.timeout_seconds",
        "retry.max_attempts",
        "schedule.max_occurrences",
        "schedule.interval.number",
        "schedule.repeat_interval.number",
    }
)

DEFAULTS = {
    "notation": "cron",
    "schedule.cron": "*/5 * * * *",
    "schedule.timezone": "UTC",
    "schedule.interval.unit": "minute",
    "schedule.repeat_interval.unit": "day",
    "payload.method": "POST",
    "payload.headers": "{}",
    "priority": "5",
    "retry.max_attempts": "5",
    "misfire.policy": "fire_once",
}


def _put(document: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        document = document.setdefault(part, {})
    document[last] = value


def _number(text: str) -> Any:
    """``"5"`` → 5, ``"2.5"`` → 2.5; anything else is passed on for the API to name."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def schedule_part(values: Mapping[str, str]) -> dict[str, Any]:
    """The ``schedule`` object the form describes."""
    notation = values.get("notation", "cron")
    names = NOTATION_INPUTS.get(notation, ())
    if notation != "blueprint":
        names = (*names, *CANONICAL_INPUTS)
    document: dict[str, Any] = {}
    for name in names:
        text = values.get(name, "").strip()
        if text:
            _put(document, name, _number(text) if name in NUMBER_INPUTS else text)
    schedule: dict[str, Any] = document.get("schedule", {})
    return schedule


def request_body(
    values: Mapping[str, str], stored: Schedule | None = None
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The API body the form describes, and the errors found before the API sees it (JSON that
    does not parse). Editing starts from the stored definition, so what the form does not show
    (query parameters, metadata, backoff) is kept, and masked secrets are put back."""
    body: dict[str, Any] = stored_body(stored.live_definition) if stored is not None else {}
    errors: list[dict[str, str]] = []
    body["schedule"] = schedule_part(values)
    for name in OTHER_INPUTS:
        text = values.get(name, "").strip()
        if name == "id" and (stored is not None or not text):
            continue
        if name == "tags":
            body["tags"] = [tag.strip() for tag in text.split(",") if tag.strip()]
        elif name in JSON_INPUTS:
            if not text:
                _put(body, name, {} if name == "payload.headers" else None)
                continue
            try:
                _put(body, name, json.loads(text))
            except ValueError as exc:
                errors.append({"field": name, "message": f"not valid JSON: {exc}"})
        elif name in NUMBER_INPUTS:
            if text:
                _put(body, name, _number(text))
        else:
            _put(body, name, text)
    if stored is not None:
        _unmask(body, stored)
    return body, errors


def _unmask(body: dict[str, Any], stored: Schedule) -> None:
    """Masked values sent back unchanged stand for the stored secrets."""
    payload = stored.live_definition.payload
    headers = body.get("payload", {}).get("headers")
    if isinstance(headers, dict):
        for name, value in headers.items():
            if value == MASK and name in payload.headers:
                headers[name] = payload.headers[name]
    if MASK in str(body.get("payload", {}).get("url", "")):
        body["payload"]["url"] = payload.url


def form_values(view: Mapping[str, Any]) -> dict[str, str]:
    """The form's inputs for a stored schedule, from its (masked) view."""
    raw = view["schedule"]
    notation = "blueprint" if any(name in raw for name in SEED_FIELDS) else "cron"
    for candidate in ("cron", "interval", "rrule", "at"):
        if candidate in raw:
            notation = candidate
    values = {"notation": notation}

    def flatten(document: Mapping[str, Any], prefix: str) -> None:
        for key, value in document.items():
            if isinstance(value, Mapping):
                flatten(value, f"{prefix}.{key}")
            elif value is not None:
                values[f"{prefix}.{key}"] = str(value)

    flatten(raw, "schedule")
    payload = view["payload"]
    values.update(
        {
            "name": view["name"],
            "description": view["description"],
            "tags": ", ".join(view["tags"]),
            "priority": str(view["priority"]),
            "payload.method": payload["method"],
            "payload.url": payload["url"],
            "payload.headers": json.dumps(payload["headers"]),
            "payload.body": "" if payload["body"] is None else json.dumps(payload["body"]),
            "payload.timeout_seconds": str(payload["timeout_seconds"]),
            "retry.max_attempts": str(view["retry"]["max_attempts"]),
            "misfire.policy": view["misfire"]["policy"],
        }
    )
    return values


def place_errors(
    errors: Iterable[Mapping[str, str]], inputs: Iterable[str] = INPUTS
) -> dict[str, list[str]]:
    """Each error under the input it names, or the nearest input that encloses it; one about
    the schedule as a whole under the notation picker; the rest under ``""`` (above the form)."""
    known = set(inputs)
    placed: dict[str, list[str]] = {}
    for error in errors:
        field = error.get("field", "")
        target = field
        while target and target not in known:
            target = target.rpartition(".")[0]
        if not target:
            target = _first_input_under(field)
        placed.setdefault(target, []).append(error.get("message", ""))
    return placed


def _first_input_under(field: str) -> str:
    if field == "schedule" or field.startswith("schedule."):
        return "notation"
    return ""
