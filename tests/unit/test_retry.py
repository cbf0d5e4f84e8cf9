"""What a webhook's answer means (``shared.retry``): success, retry later and when, or give up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from shared.model import RetryPolicy
from shared.retry import MAX_RETRY_AFTER_SECONDS, backoff_delay, judge_response, retry_after

NOON = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(max_attempts=8, backoff_seconds=2.0, max_backoff_seconds=30.0)


def highest(low: float, high: float) -> float:
    return high


def lowest(low: float, high: float) -> float:
    return low


@pytest.mark.parametrize("status", [200, 201, 204, 299])
def test_a_2xx_answer_succeeds(status: int) -> None:
    verdict = judge_response(status, {}, NOON)
    assert verdict.succeeded and not verdict.retryable and verdict.reason is None


@pytest.mark.parametrize("status", [500, 502, 503, 504, 507, 599, 408, 429])
def test_server_errors_timeouts_and_throttling_are_worth_retrying(status: int) -> None:
    verdict = judge_response(status, {}, NOON)
    assert not verdict.succeeded and verdict.retryable
    assert verdict.reason == f"HTTP {status}"


@pytest.mark.parametrize(
    "status", [301, 302, 400, 401, 404, 410, 422, 501, 505, 506, 508, 510, 511]
)
def test_redirects_client_errors_and_final_server_errors_fail_for_good(status: int) -> None:
    verdict = judge_response(status, {"Retry-After": "5"}, NOON)
    assert not verdict.succeeded and not verdict.retryable
    assert verdict.reason == f"HTTP {status}"
    assert verdict.retry_after_seconds is None


def test_a_retryable_answer_carries_its_retry_after() -> None:
    assert judge_response(503, {"retry-after": "120"}, NOON).retry_after_seconds == 120.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30", 30.0),
        (" 7 ", 7.0),
        ("Sun, 08 Mar 2026 12:01:30 GMT", 90.0),
        ("Sun, 08 Mar 2026 11:59:00 GMT", 0.0),  # already past: at once
        ("soon", None),
        ("-5", None),
        ("1.5", None),
        ("2026-03-08T12:01:30", None),
    ],
)
def test_retry_after_is_delta_seconds_or_an_http_date(value: str, seconds: float | None) -> None:
    assert retry_after({"Retry-After": value}, NOON) == seconds


def test_retry_after_is_found_whatever_the_case_of_its_name() -> None:
    assert retry_after({"RETRY-AFTER": "3"}, NOON) == 3.0
    assert retry_after({"Content-Type": "text/plain"}, NOON) is None


def test_the_backoff_ceiling_doubles_each_attempt_up_to_its_cap() -> None:
    ceilings = [backoff_delay(POLICY, attempt, rand=highest) for attempt in range(1, 7)]
    assert ceilings == [timedelta(seconds=s) for s in (2, 4, 8, 16, 30, 30)]


def test_the_backoff_is_drawn_from_zero_to_its_ceiling() -> None:
    drawn: list[tuple[float, float]] = []

    def record(low: float, high: float) -> float:
        drawn.append((low, high))
        return (low + high) / 2

    assert backoff_delay(POLICY, 3, rand=record) == timedelta(seconds=4)
    assert drawn == [(0.0, 8.0)]
    assert backoff_delay(POLICY, 1, rand=lowest) == timedelta(0)


def test_retry_after_is_a_floor_capped_at_twelve_hours() -> None:
    assert backoff_delay(POLICY, 1, 60.0, rand=lowest) == timedelta(seconds=60)
    assert backoff_delay(POLICY, 5, 1.0, rand=highest) == timedelta(seconds=30)
    assert backoff_delay(POLICY, 1, 10 * MAX_RETRY_AFTER_SECONDS, rand=lowest) == timedelta(
        seconds=MAX_RETRY_AFTER_SECONDS
    )
