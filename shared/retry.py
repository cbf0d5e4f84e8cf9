"""What a webhook's answer means for the occurrence: success, retry later, or give up."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parsedate_to_datetime

from shared.model import ExecutionStatus, RetryPolicy

RETRYABLE_STATUSES = frozenset({408, 429})
# The 5xx answers that say the server will never handle the request as sent, however often it
# is repeated: not implemented (the method), HTTP version not supported, variant also
# negotiates, loop detected, not extended, network authentication required. They fail at once.
FINAL_SERVER_ERRORS = frozenset({501, 505, 506, 508, 510, 511})
# The longest ``Retry-After`` honoured. A delay past what a queue message may stay invisible
# (SQS: 12 hours from its receive) is waited out by re-sending it (``execution_worker.settler``).
MAX_RETRY_AFTER_SECONDS = 43_200.0


@dataclass(frozen=True)
class Verdict:
    succeeded: bool
    retryable: bool
    reason: str | None = None
    retry_after_seconds: float | None = None


def judge_response(status: int, headers: Mapping[str, str], now: datetime) -> Verdict:
    """2xx succeeds; 5xx (but ``FINAL_SERVER_ERRORS``), 408 and 429 are worth retrying
    (honouring ``Retry-After``); the rest fail.

    Redirects are not followed (a redirect could lead anywhere, SSRF guard included), so a 3xx
    is a failure.
    """
    if 200 <= status < 300:
        return Verdict(succeeded=True, retryable=False)
    reason = f"HTTP {status}"
    if (status >= 500 and status not in FINAL_SERVER_ERRORS) or status in RETRYABLE_STATUSES:
        return Verdict(False, True, reason, retry_after(headers, now))
    return Verdict(False, False, reason)


def retry_after(headers: Mapping[str, str], now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())


def backoff_delay(
    policy: RetryPolicy,
    attempt: int,
    retry_after_seconds: float | None = None,
    rand: Callable[[float, float], float] = random.uniform,
) -> timedelta:
    """Delay before attempt ``attempt + 1``: full jitter over an exponential ceiling.

    A ``Retry-After`` from the server is honoured as a floor, up to 12 hours.
    """
    ceiling = min(policy.max_backoff_seconds, policy.backoff_seconds * 2 ** (attempt - 1))
    delay = rand(0.0, ceiling)
    if retry_after_seconds is not None:
        delay = max(delay, min(retry_after_seconds, MAX_RETRY_AFTER_SECONDS))
    return timedelta(seconds=delay)


@dataclass(frozen=True)
class NextStep:
    """How an attempt ends: ``status`` to record, and for ``RETRYING`` the ``delay`` before the
    next attempt."""

    status: ExecutionStatus
    delay: timedelta | None = None


def next_step(
    verdict: Verdict,
    policy: RetryPolicy,
    attempts: int,
    deliveries_left: bool,
    rand: Callable[[float, float], float] = random.uniform,
) -> NextStep:
    """Success; a retry after backoff if the failure is retryable, the policy allows another
    attempt and the queue another delivery (``deliveries_left``: it dead-letters a message
    delivered its maximum number of times); otherwise a failure, which is dead-lettered."""
    if verdict.succeeded:
        return NextStep(ExecutionStatus.SUCCEEDED)
    if verdict.retryable and attempts < policy.max_attempts and deliveries_left:
        delay = backoff_delay(policy, attempts, verdict.retry_after_seconds, rand)
        return NextStep(ExecutionStatus.RETRYING, delay)
    return NextStep(ExecutionStatus.FAILED)
