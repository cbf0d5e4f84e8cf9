"""Whether a webhook's answer is a success, when its schedule says what success is
(``payload.expect``: ``shared.targets.http.ResponseCheck``).

An answer whose status the check lists is then read: the JSON value at the pointer must equal
the expected one, the body must contain the text. One that fails a check is a failure with the
reason recorded, and retried as a failure worth retrying is (a receiver that answers "not
ready" may answer otherwise later). An answer whose status the check does not list is judged
as any answer is (``shared.retry.judge_response``: a 5xx is retried, a 4xx is not), save a 2xx,
which is then a failure worth retrying too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime

from jsonpointer import JsonPointerException, resolve_pointer

from shared.jsonvalues import json_equal
from shared.retry import Verdict, judge_response
from shared.targets.http import CHECKED_BODY_BYTES, ResponseCheck, status_text

_MISSING = object()
# How much of an expected or found value a reason quotes.
QUOTED = 80


def judge_answer(
    check: ResponseCheck | None,
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    complete: bool,
    now: datetime,
) -> Verdict:
    """The verdict on an answer: ``body`` is its first bytes, ``complete`` whether that is all
    of it (a check reads at most ``CHECKED_BODY_BYTES``)."""
    if check is None:
        return judge_response(status, headers, now)
    if not check.accepts_status(status):
        verdict = judge_response(status, headers, now)
        if not verdict.succeeded:
            return verdict
        listed = ", ".join(str(status_text(item)) for item in check.statuses)
        return Verdict(False, True, f"HTTP {status}: not an expected status ({listed})")
    reason = _body_problem(check, body, complete)
    if reason is not None:
        return Verdict(False, True, f"HTTP {status}: {reason}")
    return Verdict(succeeded=True, retryable=False)


def _body_problem(check: ResponseCheck, body: bytes, complete: bool) -> str | None:
    if check.body_contains is not None:
        text = body[:CHECKED_BODY_BYTES].decode("utf-8", "replace")
        if check.body_contains not in text:
            return f"the body does not contain {_quoted(check.body_contains)}"
    if check.json_pointer is None:
        return None
    if not complete:
        return f"the body is longer than {CHECKED_BODY_BYTES // 1024} KiB: its JSON is not read"
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return "the body is not JSON (or nested too deep to read)"
    try:
        found = resolve_pointer(document, check.json_pointer, _MISSING)
    except JsonPointerException:
        found = _MISSING
    if found is _MISSING:
        return f"the body has nothing at {check.json_pointer}"
    if not json_equal(found, check.json_equals):
        return f"{check.json_pointer} is {_quoted(found)}, expected {_quoted(check.json_equals)}"
    return None


def _quoted(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= QUOTED else text[: QUOTED - 1] + "…"
