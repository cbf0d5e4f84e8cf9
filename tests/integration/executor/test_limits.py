"""Calls in flight per host: a slow endpoint takes its share of the executor, not every slot."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from shared.model import ExecutionStatus
from shared.ports import HistoryRequest
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import Call, lateness, running_receiver
from tests.support.schedules import at_in, create, final_status
from tests.support.waiting import eventually


class SlowHook:
    """Answers 200 after ``seconds``, counting the calls it is answering at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.now = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, call: Call) -> tuple[int, dict[str, str]]:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds)
        with self._lock:
            self.now -= 1
        return 200, {}


def once(url: str, at: str, **payload: Any) -> dict[str, Any]:
    return {"schedule": {"at": at}, "payload": {"method": "POST", "url": url, **payload}}


def test_a_slow_destination_does_not_delay_calls_to_others(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, executor_concurrency=4, executor_calls_per_host=2)
    slow = SlowHook(1.0)
    with (
        running_receiver(slow) as slow_receiver,
        running_receiver() as fast_receiver,
        running_pipeline(settings) as pipeline,
    ):
        at = at_in(1.5)
        slow_ids = [create(pipeline, once(f"{slow_receiver.url}/slow", at)) for _ in range(6)]
        fast_id = create(pipeline, once(f"{fast_receiver.url}/fast", at))
        [call] = fast_receiver.wait_for(1, timeout=10)
        eventually(lambda: final_status(pipeline, fast_id) == "succeeded")
        eventually(lambda: all(final_status(pipeline, s) == "succeeded" for s in slow_ids))
    assert slow.most == 2
    # By the receivers' clock (on a loaded machine every call may come late, alike): four
    # slots, six slow calls due with the fast one. Without the limit per host the fast call
    # would wait for a slot, which no slow call frees before it is answered, a second after it
    # came; and the slow calls waited their turn, two at a time: each came a second or more
    # after the one two before it.
    arrived = sorted(slow_call.received_at for slow_call in slow_receiver.calls)
    assert call.received_at < arrived[0] + slow.seconds, (lateness(call), arrived)
    assert len(arrived) == 6
    assert all(
        later - earlier >= slow.seconds
        for earlier, later in zip(arrived, arrived[2:], strict=False)
    )


def test_a_schedule_can_set_its_own_limit_per_host(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, executor_calls_per_host=8)
    slow = SlowHook(0.3)
    with running_receiver(slow) as receiver, running_pipeline(settings) as pipeline:
        at = at_in(1.5)
        ids = [
            create(pipeline, once(f"{receiver.url}/one", at, calls_per_host=1)) for _ in range(3)
        ]
        eventually(lambda: all(final_status(pipeline, s) == "succeeded" for s in ids))
    assert slow.most == 1
    assert len(receiver.calls) == 3


def test_an_occurrence_waiting_for_its_hosts_slot_is_checked_again_before_its_call(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path, executor_calls_per_host=1)
    first: list[str] = []
    started = threading.Event()

    def slow_first(call: Call) -> tuple[int, dict[str, str]]:
        first.append(call.headers["x-scheduler-schedule-id"])
        started.set()
        time.sleep(1.0)
        return 200, {}

    with running_receiver(slow_first) as receiver, running_pipeline(settings) as pipeline:
        at = at_in(1.5)
        ids = [create(pipeline, once(f"{receiver.url}/one", at)) for _ in range(2)]
        assert started.wait(10)
        # The other waits for the one slot of its host while its schedule is deleted.
        [waiting] = [schedule_id for schedule_id in ids if schedule_id not in first]
        assert pipeline.client.delete(f"{API}/schedule/{waiting}").status_code == 202
        store = pipeline.backends.store

        def recorded(
            schedule_id: str, status: ExecutionStatus | None = None
        ) -> list[tuple[ExecutionStatus, str | None, bool]]:
            records = store.list_executions(
                HistoryRequest("default", schedule_id, 10, None, status)
            ).items
            return [(record.status, record.error, record.superseded) for record in records]

        skipped = ExecutionStatus.SKIPPED
        eventually(lambda: bool(recorded(waiting, skipped)))
        eventually(lambda: recorded(first[0]) == [(ExecutionStatus.SUCCEEDED, None, False)])
    # Superseded by the delete: not a run, listed only among the skipped.
    assert recorded(waiting, skipped) == [(skipped, "schedule deleted", True)]
    assert recorded(waiting) == []
    assert first == [first[0]]
    assert len(receiver.calls) == 1
