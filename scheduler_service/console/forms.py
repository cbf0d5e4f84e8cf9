"""The console's schedule form: its inputs ↔ the API's request body, every field of it.

Each input is named by the API field it fills (``schedule.cron``, ``payload.url``), so the
API's validation errors, which name fields the same way, are shown beside their inputs. Dates
and times use the browser's pickers: an instant is a local wall time in the schedule's zone
(``datetime-local``), the blueprint's dates are ``MM/DD/YYYY`` in the body and ``YYYY-MM-DD`` in
the form, its time of day 24-hour. Time zones are picked from the zones the service knows.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pendulum

from scheduler_service.console import target_form
from shared.definition_rules import METHODS
from shared.model import MisfirePolicy, OverlapPolicy, Schedule, Unit
from shared.notations import NOTATIONS, Member, MemberKind, Notation
from shared.recurrence.business import Shift
from shared.timeutil import load_zone, parse_iso

UNITS = [unit.value for unit in Unit]
POLICIES = [policy.value for policy in MisfirePolicy]
OVERLAPS = [policy.value for policy in OverlapPolicy]
SHIFTS = [shift.value for shift in Shift]
HTTP_METHODS = list(METHODS)


def member_inputs(member: Member) -> tuple[str, ...]:
    """The inputs of a member of the ``schedule`` object: an interval's number and unit, else
    one."""
    name = f"schedule.{member.name}"
    if member.kind is MemberKind.INTERVAL:
        return (f"{name}.number", f"{name}.unit")
    return (name,)


def rows(notation: Notation) -> list[tuple[Member, ...]]:
    """How the form lays out a notation's members: an interval on a row of its own (number,
    unit), the others two by two."""
    laid: list[tuple[Member, ...]] = []
    pending: list[Member] = []
    for member in _console_members(notation):
        if member.kind is MemberKind.INTERVAL:
            laid.extend([tuple(pending)] if pending else [])
            laid.append((member,))
            pending = []
        else:
            pending.append(member)
            if len(pending) == 2:
                laid.append(tuple(pending))
                pending = []
    return laid + ([tuple(pending)] if pending else [])


def _console_members(notation: Notation) -> list[Member]:
    return [member for member in notation.members if member.in_console]


def _of_kind(*kinds: MemberKind) -> tuple[str, ...]:
    return tuple(
        f"schedule.{member.name}"
        for notation in NOTATIONS
        for member in _console_members(notation)
        if member.kind in kinds
    )


# The inputs of each notation; the others are left out of the body.
NOTATION_INPUTS = {
    notation.name: (
        *(name for member in _console_members(notation) for name in member_inputs(member)),
        *(("schedule.fire_if_past",) if notation.console_fire_if_past else ()),
    )
    for notation in NOTATIONS
}
BOUNDED = frozenset(notation.name for notation in NOTATIONS if notation.bounded)
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
    *target_form.INPUTS,
    "retry.max_attempts",
    "retry.backoff_seconds",
    "retry.max_backoff_seconds",
    "misfire.policy",
    "misfire.grace_seconds",
    "jitter_seconds",
    "overlap",
    "calendar.exclude",
    "calendar.shift",
    "pause_after_failures",
    "on_failure.url",
    "on_failure.headers",
    "alert.late_after_seconds",
    "metadata",
    "managed_by",
)
INPUTS = frozenset(
    [
        *OTHER_INPUTS,
        *CANONICAL_INPUTS,
        *(name for names in NOTATION_INPUTS.values() for name in names),
    ]
)
JSON_INPUTS = target_form.JSON_INPUTS | {"on_failure.headers", "metadata"}
NUMBER_INPUTS = frozenset(
    {
        "priority",
        "payload.timeout_seconds",
        "payload.calls_per_host",
        "retry.max_attempts",
        "retry.backoff_seconds",
        "retry.max_backoff_seconds",
        "misfire.grace_seconds",
        "jitter_seconds",
        "pause_after_failures",
        "alert.late_after_seconds",
        "schedule.max_occurrences",
        *(f"{name}.number" for name in _of_kind(MemberKind.INTERVAL)),
    }
)
# Left empty, these are null (never, however late, the executor's setting); other inputs left
# empty are left out of the body, so the API's default applies.
NULLABLE_INPUTS = frozenset(
    {
        "payload.calls_per_host",
        "misfire.grace_seconds",
        "pause_after_failures",
        "payload.body",
        "alert.late_after_seconds",
    }
)
INSTANT_INPUTS = (*_of_kind(MemberKind.DATE_TIME), "schedule.start", "schedule.end")
DATE_INPUTS = _of_kind(MemberKind.DATE)
# Checkboxes: ticked, the body says true; not, it leaves the field out.
BOOLEAN_INPUTS = frozenset({"schedule.fire_if_past"})

DEFAULTS = {
    "notation": "cron",
    "schedule.cron": "*/5 * * * *",
    "schedule.timezone": "UTC",
    "schedule.timeZone": "UTC",
    "schedule.interval.unit": "minute",
    "schedule.repeat_interval.unit": "day",
    "payload.kind": "http",
    "payload.method": "POST",
    "payload.headers": "{}",
    "payload.queryParameters": "{}",
    "payload.timeout_seconds": "10",
    "metadata": "{}",
    "priority": "5",
    "retry.max_attempts": "5",
    "retry.backoff_seconds": "1",
    "retry.max_backoff_seconds": "300",
    "misfire.policy": "fire_once",
    "jitter_seconds": "0",
    "overlap": "allow",
}
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_SEED_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})$")


ZONE_NAMES = frozenset(pendulum.timezones())


@functools.cache
def time_zones() -> dict[str, list[str]]:
    """The zones the service knows, by region (``Europe``; ``Other`` for ``UTC`` and such)."""
    regions: dict[str, list[str]] = {}
    for name in sorted(ZONE_NAMES):
        region = name.partition("/")[0] if "/" in name else "Other"
        regions.setdefault(region, []).append(name)
    return regions


def template_choices() -> dict[str, Any]:
    """What the form's template offers, the same on every form (as
    ``presenting.TEMPLATE_HELPERS`` is what every page's template uses): the notations, the
    rows and inputs of their members, the choices of each select, the target kinds and the time
    zones."""
    return {
        "notations": NOTATIONS,
        "rows": rows,
        "member_inputs": member_inputs,
        "units": UNITS,
        "policies": POLICIES,
        "overlaps": OVERLAPS,
        "shifts": SHIFTS,
        "methods": HTTP_METHODS,
        "kinds": target_form.KIND_LABELS,
        "zones": time_zones(),
        "zone_names": ZONE_NAMES,
    }


def _put(document: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        inner = document.get(part)
        if not isinstance(inner, dict):
            inner = document[part] = {}  # e.g. an on_failure stored as null
        document = inner
    document[last] = value


def _drop(document: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        inner = document.get(part)
        if not isinstance(inner, dict):
            return
        document = inner
    document.pop(last, None)


def _number(text: str) -> Any:
    """``"5"`` → 5, ``"2.5"`` → 2.5; anything else is passed on for the API to name."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _body_text(name: str, text: str) -> Any:
    """A schedule input's value as the body carries it."""
    if name in NUMBER_INPUTS:
        return _number(text)
    if name in BOOLEAN_INPUTS:
        return text.lower() in ("true", "on", "yes")
    iso = _ISO_DATE.match(text)
    if name in DATE_INPUTS and iso:
        return f"{iso[2]}/{iso[3]}/{iso[1]}"
    return text


def schedule_part(values: Mapping[str, str]) -> dict[str, Any]:
    """The ``schedule`` object the form describes."""
    notation = values.get("notation", "cron")
    names = NOTATION_INPUTS.get(notation, ())
    if notation in BOUNDED:
        names = (*names, *CANONICAL_INPUTS)
    document: dict[str, Any] = {}
    for name in names:
        text = values.get(name, "").strip()
        value = _body_text(name, text) if text else None
        if value not in (None, False):
            _put(document, name, value)
    schedule: dict[str, Any] = document.get("schedule", {})
    return schedule


def request_body(
    values: Mapping[str, str], stored: Schedule | None = None
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The API body the form describes, and the errors found before the API sees it (JSON that
    does not parse). Editing starts from the stored definition, so what no input shows (the
    ``type``), or an input the request leaves out, is kept; an input sent empty is the API's
    default. Masked values sent back as shown keep the stored secrets (the service's
    ``keep_secrets``)."""
    body: dict[str, Any] = stored.live_definition.body() if stored is not None else {}
    errors: list[dict[str, str]] = []
    body["schedule"] = schedule_part(values)
    kind = target_form.chosen_kind(values, body.get("payload"))
    target_form.start_payload(body, kind)
    for name in OTHER_INPUTS:
        if name not in values or name == "payload.kind" or not target_form.takes(name, kind):
            continue  # not sent, or not of this kind: as stored (or the API's default)
        text = values[name].strip()
        if name == "id" and (stored is not None or not text):
            continue
        if name == "tags":
            body["tags"] = [tag.strip() for tag in text.split(",") if tag.strip()]
        elif name == "calendar.exclude":
            names = [item.strip() for item in text.split(",") if item.strip()]
            shift = values.get("calendar.shift", "").strip() or Shift.SKIP.value
            body["calendar"] = {"exclude": names, "shift": shift} if names else None
        elif name == "calendar.shift":
            continue  # with calendar.exclude
        elif name == "payload.auth.scopes" and text:
            _put(body, name, target_form.listed(text))
        elif name == "payload.expect.status" and text:
            _put(body, name, target_form.statuses(text))
        elif not text and name in NULLABLE_INPUTS:
            _put(body, name, None)
        elif not text:
            _drop(body, name)
        elif name in JSON_INPUTS:
            try:
                _put(body, name, json.loads(text))
            except ValueError as exc:
                errors.append({"field": name, "message": f"not valid JSON: {exc}"})
        elif name in NUMBER_INPUTS:
            _put(body, name, _number(text))
        else:
            _put(body, name, text)
    target_form.finish_payload(body)
    hook = body.get("on_failure")
    if isinstance(hook, dict) and "url" not in hook:
        body["on_failure"] = None  # no URL: no hook (headers alone say nothing)
    alert = body.get("alert")
    if isinstance(alert, dict) and alert.get("late_after_seconds") is None:
        body["alert"] = None  # left empty: not reported
    return body, errors


def _wall_time(text: str, zone: str) -> str:
    """A stored instant as the ``datetime-local`` input shows it: the wall time in ``zone``
    (an instant written with an offset is the same instant there)."""
    try:
        moment = parse_iso(text)
        if moment.tzinfo is not None:
            moment = moment.astimezone(load_zone(zone)).replace(tzinfo=None)
    except ValueError:
        return text
    return moment.isoformat(timespec="milliseconds" if moment.microsecond else "seconds")


def _clock_24h(text: str, am_pm: str | None) -> str:
    match = _CLOCK.match(text.strip())
    if not match or not am_pm:
        return text
    hour = int(match[1]) % 12 + (12 if am_pm.strip().upper() == "PM" else 0)
    return f"{hour:02d}:{match[2]}"


def _seed_date(text: str) -> str:
    match = _SEED_DATE.match(text.strip())
    return f"{match[3]}-{int(match[1]):02d}-{int(match[2]):02d}" if match else text


def form_values(view: Mapping[str, Any]) -> dict[str, str]:
    """The form's inputs for a stored schedule, from its (masked) view."""
    raw = view["schedule"]
    notation = next((each.name for each in NOTATIONS if each.form in raw), "cron")
    values = {"notation": notation}

    def flatten(document: Mapping[str, Any], prefix: str) -> None:
        for key, value in document.items():
            if isinstance(value, Mapping):
                flatten(value, f"{prefix}.{key}")
            elif value is not None:
                values[f"{prefix}.{key}"] = str(value)

    flatten(raw, "schedule")
    zone = view["timezone"]
    for name in INSTANT_INPUTS:
        if name in values:
            values[name] = _wall_time(values[name], zone)
    for name in DATE_INPUTS:
        if name in values:
            values[name] = _seed_date(values[name])
    if "schedule.time_of_day" in values:
        values["schedule.time_of_day"] = _clock_24h(
            values["schedule.time_of_day"], values.pop("schedule.am_pm", None)
        )
    hook = view["on_failure"] or {}
    calendar = view["calendar"] or {}

    def number(value: Any) -> str:
        return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    values.update(
        {
            "name": view["name"],
            "description": view["description"],
            "tags": ", ".join(view["tags"]),
            "priority": str(view["priority"]),
            **target_form.form_values(view["payload"], number),
            "retry.max_attempts": str(view["retry"]["max_attempts"]),
            "retry.backoff_seconds": number(view["retry"]["backoff_seconds"]),
            "retry.max_backoff_seconds": number(view["retry"]["max_backoff_seconds"]),
            "misfire.policy": view["misfire"]["policy"],
            "misfire.grace_seconds": number(view["misfire"]["grace_seconds"]),
            "jitter_seconds": number(view["jitter_seconds"]),
            "overlap": view["overlap"],
            "calendar.exclude": ", ".join(calendar.get("exclude", [])),
            "calendar.shift": calendar.get("shift", Shift.SKIP.value),
            "pause_after_failures": number(view["pause_after_failures"]),
            "on_failure.url": hook.get("url", ""),
            "on_failure.headers": json.dumps(hook["headers"]) if hook.get("headers") else "",
            "alert.late_after_seconds": number((view["alert"] or {}).get("late_after_seconds")),
            "metadata": json.dumps(view["metadata"]),
            "managed_by": view["managed_by"] or "",
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
    if field == "on_failure" or field.startswith("on_failure."):
        return "on_failure.url"
    if field == "alert":
        return "alert.late_after_seconds"
    return ""
