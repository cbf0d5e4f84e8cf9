"""What the console shows of the API's views for people: times as "in 3 min" beside the date,
a schedule's status word, its definition in words.

Times: the page gives each instant in UTC (``<time datetime="…Z">``), the date in UTC and how
far it is from now; ``static/console.js`` rewrites both in the viewer's time zone and keeps
the distance current. Without JavaScript the page stays right, in UTC.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared.model import OverlapPolicy
from shared.notations import TIMING_NOTATIONS, MemberKind, TimingNotation
from shared.targets import summary as target_summary
from shared.timeutil import parse_iso

# How much of a body the summary shows.
BODY_SHOWN = 200
# (from how far, the unit's seconds, its name): minutes up to 2 h, hours up to 2 days.
_UNITS = ((2 * 86_400, 86_400, "d"), (2 * 3_600, 3_600, "h"), (60, 60, "min"), (0, 1, "s"))


def instant(text: str | None) -> datetime | None:
    return None if not text else parse_iso(text)


def absolute(text: str | None) -> str:
    """``2026-05-01T07:00:00.000Z`` → ``2026-05-01 07:00:00 UTC``."""
    moment = instant(text)
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def wall(local: str | None) -> str:
    """A local time with its offset (``2026-05-01T09:00:00.000+02:00``) as the page writes times:
    ``2026-05-01 09:00:00 +02:00`` (``UTC`` for no offset), as console.js writes the viewer's."""
    moment = instant(local)
    if moment is None:
        return ""
    offset = moment.isoformat(timespec="seconds")[19:]
    return f"{moment:%Y-%m-%d %H:%M:%S} {'UTC' if offset in ('', '+00:00') else offset}"


def relative(text: str | None, now: datetime) -> str:
    """How far an instant is from ``now``, as console.js says it too: ``in 3 min``,
    ``5 h ago``, ``now`` (under a second); in whole units (``_UNITS``)."""
    moment = instant(text)
    if moment is None:
        return ""
    seconds = (moment - now).total_seconds()
    distance = abs(seconds)
    if distance < 1:
        return "now"
    _, size, unit = next(unit for unit in _UNITS if distance >= unit[0])
    amount = f"{int(distance // size)} {unit}"
    return f"in {amount}" if seconds > 0 else f"{amount} ago"


@dataclass(frozen=True)
class StatusWord:
    word: str
    meaning: str


_STATUS_MEANINGS = {
    "active": "fires at its times",
    "paused": "fires nothing until resumed",
    "completed": "nothing left to fire",
}


def status_word(view: Mapping[str, Any]) -> StatusWord:
    """The word a schedule's status shows as. The API's ``status`` says whether anything is
    left to fire; a schedule with nothing left whose last run failed (a one-shot whose only run
    failed) is shown as ``failed``, not ``completed``, which would read as a success."""
    status = view["status"]
    if status == "completed" and view.get("last_status") == "failed":
        return StatusWord("failed", "nothing left to fire, and its last run failed")
    return StatusWord(status, _STATUS_MEANINGS.get(status, ""))


# What a priority does (docs/architecture.md, "Priority under a backlog"), beside its value.
PRIORITY_MEANING = (
    "of 0 to 9: when more is due than can be called at once, the higher goes first, each level"
    " worth a minute of lateness; on time it changes nothing"
)


@dataclass(frozen=True)
class Row:
    """One line of a definition summary: ``kind`` is ``text``, ``code`` or ``time`` (an
    instant, shown as the other times)."""

    label: str
    value: str
    kind: str = "text"


_MISSED = {
    "fire_all": "each missed run fires, late",
    "fire_once": "one run fires for all that were missed",
    "skip": "missed runs are skipped",
}
_OVERLAP = {
    OverlapPolicy.SKIP.value: "a run due while an earlier one is in progress is skipped",
    OverlapPolicy.BUFFER_ONE.value: "a run due while an earlier one is in progress waits for "
    "it (one at most; others are skipped)",
}


def _pairs(pairs: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}: {value}" for name, value in pairs.items())


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _notation_row(notation: TimingNotation, value: Any) -> Row:
    """A timing's own notation's value, as its ``view_kind`` shows it."""
    if notation.view_kind is MemberKind.INTERVAL:
        return Row(notation.view_label, f"{value['number']} {value['unit']}")
    if notation.view_kind is MemberKind.DATE_TIME:
        return Row(notation.view_label, value, "time")
    return Row(notation.view_label, value, "code")


def when_rows(view: Mapping[str, Any]) -> list[Row]:
    timing = view["timing"]
    rows = [Row("fires", view["schedule_description"])]
    rows.extend(
        _notation_row(notation, timing[name])
        for name, notation in TIMING_NOTATIONS.items()
        if timing.get(name)
    )
    rows.append(Row("time zone", timing["timezone"]))
    for name, label in (("start", "from"), ("end", "until")):
        if timing.get(name):
            rows.append(Row(label, timing[name], "time"))
    if timing.get("max_occurrences"):
        rows.append(Row("at most", f"{timing['max_occurrences']} runs"))
    misfire = view["misfire"]
    grace = misfire.get("grace_seconds")
    # The grace is its own rule, whatever the policy: "skipped, if at most 30 s late" read as if
    # only the runs less late were skipped.
    late = (
        "a call runs however late"
        if grace is None
        else f"a call more than {_seconds(grace)} late is skipped"
    )
    rows.append(Row("missed runs", f"{_MISSED.get(misfire['policy'], misfire['policy'])}; {late}"))
    if view["jitter_seconds"]:
        rows.append(Row("jitter", f"each call up to {_seconds(view['jitter_seconds'])} late"))
    if view["overlap"] != OverlapPolicy.ALLOW.value:
        rows.append(Row("overlap", _OVERLAP[view["overlap"]]))
    calendar = view.get("calendar")
    if calendar:
        shift = _SHIFTS.get(calendar["shift"], calendar["shift"])
        names = ", ".join(calendar["exclude"])
        rows.append(Row("business days", f"not weekends nor the dates of {names}; {shift}"))
    return rows


_SHIFTS = {
    "skip": "a run on a day off is skipped",
    "next_business_day": "a run on a day off moves to the next business day, same time",
    "previous_business_day": "a run on a day off moves to the previous business day, same time",
}


def call_rows(view: Mapping[str, Any]) -> list[Row]:
    """The delivery target by its kind: an HTTP call (with its token and what answer
    succeeds), a message on an SQS queue, or a publish to an SNS topic."""
    payload = view["payload"]
    kind = payload.get("kind", "http")
    if kind == "http":
        rows = [
            Row("target", "HTTP call"),
            Row("request", f"{payload['method']} {payload['url']}", "code"),
        ]
        if payload.get("queryParameters"):
            rows.append(Row("query parameters", _pairs(payload["queryParameters"]), "code"))
        if payload.get("headers"):
            rows.append(Row("headers", _pairs(payload["headers"]), "code"))
    else:
        rows = (
            [Row("target", "SQS message"), Row("queue", payload["queue_url"], "code")]
            if kind == "sqs"
            else [Row("target", "SNS publish"), Row("topic", payload["topic_arn"], "code")]
        )
        for name, label in _MESSAGE_IDS:
            if payload.get(name):
                rows.append(Row(label, payload[name], "code"))
        if payload.get("role_arn"):
            rows.append(Row("as role", payload["role_arn"], "code"))
    if payload.get("body") is not None:
        body = json.dumps(payload["body"], ensure_ascii=False)
        shown = body if len(body) <= BODY_SHOWN else f"{body[:BODY_SHOWN]}… ({len(body)} chars)"
        rows.append(Row("body", shown, "code"))
    if payload.get("auth"):
        rows.append(Row("token", _token(payload["auth"])))
    if payload.get("expect"):
        rows.append(Row("succeeds when", _expected(payload["expect"])))
    rows.append(Row("timeout", _seconds(payload["timeout_seconds"])))
    if payload.get("calls_per_host") is not None:
        per = "to this host" if kind == "http" else f"to this {kind.upper()} endpoint"
        rows.append(Row("calls in flight", f"at most {payload['calls_per_host']} {per}"))
    return rows


_MESSAGE_IDS = (
    ("message_group_id", "message group"),
    ("message_deduplication_id", "deduplication id"),
)


def _token(auth: Mapping[str, Any]) -> str:
    scopes = f", scopes {' '.join(auth['scopes'])}" if auth.get("scopes") else ""
    return f"OAuth 2.0 client credentials from {auth['token_url']} as {auth['client_id']}{scopes}"


def _expected(expect: Mapping[str, Any]) -> str:
    parts = [f"status {', '.join(str(item) for item in expect['status'])}"]
    if expect.get("json"):
        value = json.dumps(expect["json"]["equals"], ensure_ascii=False)
        parts.append(f"{expect['json']['pointer']} is {value}")
    if expect.get("body_contains"):
        parts.append(f"the body contains {json.dumps(expect['body_contains'])}")
    return "; ".join(parts)


def failure_rows(view: Mapping[str, Any]) -> list[Row]:
    retry = view["retry"]
    attempts = retry["max_attempts"]
    backoff = (
        f", waiting {_seconds(retry['backoff_seconds'])} doubling to at most "
        f"{_seconds(retry['max_backoff_seconds'])} between them"
        if attempts > 1
        else ""
    )
    pause = view["pause_after_failures"]
    hook = view["on_failure"]
    return [
        Row("attempts", f"up to {attempts}{backoff}"),
        Row(
            "pauses itself",
            "never" if pause is None else f"after {pause} failed occurrences in a row",
        ),
        Row("failures reported to", "nowhere" if hook is None else f"POST {hook['url']}"),
        Row("late or missed occurrences", _alert(view["alert"])),
    ]


def _alert(alert: Mapping[str, Any] | None) -> str:
    if alert is None:
        return "not reported"
    after = _seconds(alert["late_after_seconds"])
    return f"reported there: late when not started {after} after their time; missed when dropped"


def about_rows(view: Mapping[str, Any]) -> list[Row]:
    rows = [Row("id", view["id"], "code")]
    if view["description"]:
        rows.append(Row("description", view["description"]))
    if view["tags"]:
        rows.append(Row("tags", ", ".join(view["tags"])))
    rows.append(Row("priority", f"{view['priority']} {PRIORITY_MEANING}"))
    if view["managed_by"]:
        rows.append(Row("managed by", view["managed_by"], "code"))
    if view["metadata"]:
        rows.append(Row("metadata", json.dumps(view["metadata"], ensure_ascii=False), "code"))
    rows += [
        Row("revision", str(view["revision"]), "code"),
        Row("created", view["created_at"], "time"),
        Row("changed", view["updated_at"], "time"),
    ]
    if view.get("trace_id"):
        # The W3C trace its calls continue: what to search a tracing back end for.
        rows.append(Row("trace id", view["trace_id"], "code"))
    return rows


def summary(view: Mapping[str, Any]) -> list[tuple[str, list[Row]]]:
    """A schedule's definition in words, by part (its view's values: secrets masked)."""
    return [
        ("When", when_rows(view)),
        ("Call", call_rows(view)),
        ("On failure", failure_rows(view)),
        ("About", about_rows(view)),
    ]


TEMPLATE_HELPERS: dict[str, Any] = {
    "absolute": absolute,
    "relative": relative,
    "wall": wall,
    "status_word": status_word,
    "target_summary": target_summary,
}
