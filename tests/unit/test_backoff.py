"""The backoff every worker loop waits out a backend outage with (``shared.backoff``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from shared.backoff import Backoff
from shared.errors import Transient


class Clock:
    """A monotonic clock that moves only when told (or when a wait passes)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Stop:
    """Records each wait; ``stop_after`` waits, it answers that a stop was requested."""

    def __init__(self, clock: Clock, stop_after: int | None = None) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self.stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(round(timeout, 6))
        self.clock.now += timeout
        return self.stop_after is not None and len(self.waits) >= self.stop_after


def failing(clock: Clock, failures: int, took: float = 0.0) -> tuple[list[int], Callable[[], int]]:
    """Work that fails ``failures`` times (each try taking ``took`` s), then answers 42."""
    tries: list[int] = []

    def work() -> int:
        tries.append(1)
        clock.now += took
        if len(tries) <= failures:
            raise Transient("mongodb claim: connection refused")
        return 42

    return tries, work


def test_fast_failures_wait_a_doubling_pause_up_to_the_cap_and_a_success_resets_it() -> None:
    clock = Clock()
    backoff = Backoff("poller", first=0.05, cap=1.0, clock=clock)
    pauses = [backoff.failed(Transient("down"), took=0.0) for _ in range(7)]
    assert pauses == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.succeeded()
    assert not backoff.failing
    assert backoff.failed(Transient("down"), took=0.0) == 0.05


def test_a_try_that_waited_on_the_server_is_followed_by_the_next_at_once() -> None:
    # A MongoDB call waits out its server selection (3 s) and notices a return within 0.5 s
    # meanwhile: sleeping after it would only delay noticing.
    backoff = Backoff("executor: check and begin", clock=Clock())
    assert backoff.failed(Transient("no server"), took=3.0) == 0.0
    assert backoff.failed(Transient("no server"), took=0.3) == pytest.approx(0.0)
    assert backoff.failed(Transient("reset"), took=0.01) == pytest.approx(0.19)


def test_call_tries_until_the_work_succeeds_and_logs_the_outage_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    stop = Stop(clock)
    tries, work = failing(clock, failures=4)
    backoff = Backoff("processor", clock=clock)
    with caplog.at_level(logging.DEBUG, logger="shared.backoff"):
        assert backoff.call(work, stop) == 42
    assert len(tries) == 5
    assert stop.waits == [0.05, 0.1, 0.2, 0.4]
    events = [(r.levelname, getattr(r, "event", None)) for r in caplog.records]
    assert events.count(("WARNING", "backend_unavailable")) == 1
    assert events.count(("INFO", "backend_recovered")) == 1
    [recovered] = [r for r in caplog.records if getattr(r, "event", None) == "backend_recovered"]
    assert recovered.duration_ms == 750  # type: ignore[attr-defined]


def test_call_gives_up_when_the_next_try_would_start_too_late() -> None:
    clock = Clock()
    stop = Stop(clock)
    tries, work = failing(clock, failures=100, took=0.5)
    with pytest.raises(Transient):
        Backoff("poller: advance", clock=clock).call(work, stop, until=clock.now + 2.2)
    assert len(tries) == 5  # at 0, 0.5, 1.0, 1.5, 2.0 s; the sixth would start after 2.2 s
    assert clock.now == 102.5


def test_call_gives_up_at_a_stop_and_lets_other_errors_through() -> None:
    clock = Clock()
    tries, work = failing(clock, failures=100)
    with pytest.raises(Transient):
        Backoff("settler", clock=clock).call(work, Stop(clock, stop_after=2))
    assert len(tries) == 2

    def broken() -> int:
        raise ValueError("not an outage")

    with pytest.raises(ValueError):
        Backoff("processor", clock=clock).call(broken, Stop(clock))
