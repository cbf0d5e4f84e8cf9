"""Delivery guarantees on the embedded backends: retries, dead letters, versions, misfires."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from shared.messages import DefinitionMutation, encode_mutation, encode_occurrence
from shared.model import Occurrence
from shared.ports import OutgoingMessage
from shared.timeutil import parse_iso
from tests.support.executor_steps import fire, receive_once, take_due
from tests.support.harness import (
    API,
    FAST,
    Pipeline,
    pipeline_parts,
    running_pipeline,
    sqlite_settings,
)
from tests.support.processes import free_port
from tests.support.receiver import Call, answers, running_receiver
from tests.support.schedules import QUICK_RETRY, at_in, body, create, final_status, history, view
from tests.support.waiting import eventually

SECRET = str(FAST["webhook_secret"])


def dead_letters(pipeline: Pipeline) -> int:
    depth = pipeline.backends.queues.dead_letters.depth()
    return depth.visible + depth.in_flight + depth.delayed


def test_5xx_is_retried_with_one_idempotency_key_and_a_valid_signature(tmp_path: Path) -> None:
    with (
        running_receiver(answers(503, 502, 200)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        schedule_id = create(pipeline, body(f"{receiver.url}/flaky"))
        calls = receiver.wait_for(3, timeout=8)
        assert len(calls) == 3
        assert len({call.headers["idempotency-key"] for call in calls}) == 1
        assert len({call.headers["webhook-id"] for call in calls}) == 1
        verifier = Webhook(SECRET)
        for call in calls:
            assert verifier.verify(call.body, call.headers) == {"k": "v"}
        assert [call.headers["x-scheduler-attempt"] for call in calls] == ["1", "2", "3"]
        eventually(lambda: final_status(pipeline, schedule_id) == "succeeded")
        record = history(pipeline, schedule_id)[0]
        assert (record["attempts"], record["http_status"]) == (3, 200)
        assert (view(pipeline, schedule_id)["runs"], view(pipeline, schedule_id)["failures"]) == (
            1,
            0,
        )


def test_429_honours_retry_after(tmp_path: Path) -> None:
    with (
        running_receiver(answers((429, {"Retry-After": "1"}), 200)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        create(pipeline, body(f"{receiver.url}/limited"))
        calls = receiver.wait_for(2, timeout=8)
        assert len(calls) == 2
        # Backoff alone would wait at most 0.05 s; only Retry-After explains a second's pause.
        assert calls[1].received_at - calls[0].received_at >= 0.95


def test_other_4xx_fail_at_once_and_go_to_the_dead_letter_queue(tmp_path: Path) -> None:
    with (
        running_receiver(answers(404)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        schedule_id = create(pipeline, body(f"{receiver.url}/gone"))
        eventually(lambda: final_status(pipeline, schedule_id) == "failed")
        time.sleep(0.3)
        assert len(receiver.calls) == 1
        record = history(pipeline, schedule_id)[0]
        assert (record["attempts"], record["http_status"], record["error"]) == (1, 404, "HTTP 404")
        assert dead_letters(pipeline) == 1
        stored = view(pipeline, schedule_id)
        assert (stored["failures"], stored["consecutive_failures"]) == (1, 1)


def test_refused_connections_retry_up_to_max_attempts_then_dead_letter(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/nobody-listens"
    with running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        payload = body(closed, retry={**QUICK_RETRY, "max_attempts": 3})
        schedule_id = create(pipeline, payload)
        eventually(lambda: final_status(pipeline, schedule_id) == "failed")
        record = history(pipeline, schedule_id)[0]
        assert record["attempts"] == 3
        assert record["http_status"] is None
        assert "Connection refused" in record["error"] or "NewConnectionError" in record["error"]
        assert dead_letters(pipeline) == 1


def test_a_timeout_is_retried(tmp_path: Path) -> None:
    def slow(call: Call) -> tuple[int, dict[str, str]]:
        time.sleep(0.4)
        return 200, {}

    with (
        running_receiver(slow) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        payload = body(f"{receiver.url}/slow", retry={**QUICK_RETRY, "max_attempts": 2})
        payload["payload"]["timeout_seconds"] = 0.1
        schedule_id = create(pipeline, payload)
        eventually(lambda: final_status(pipeline, schedule_id) == "failed")
        record = history(pipeline, schedule_id)[0]
        assert record["attempts"] == 2
        assert "timed out" in record["error"].lower() or "Timeout" in record["error"]
        assert len(receiver.wait_for(2, timeout=2)) == 2


def test_a_recurring_schedule_counts_consecutive_failures_and_keeps_going(tmp_path: Path) -> None:
    healthy = {"now": False}

    def respond(call: Call) -> tuple[int, dict[str, str]]:
        return (200 if healthy["now"] else 500), {}

    with (
        running_receiver(respond) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        payload = body(
            f"{receiver.url}/tick",
            schedule={"interval": {"number": 1, "unit": "second"}},
            retry={**QUICK_RETRY, "max_attempts": 1},
        )
        schedule_id = create(pipeline, payload)
        eventually(lambda: view(pipeline, schedule_id)["consecutive_failures"] >= 2)
        healthy["now"] = True
        eventually(lambda: view(pipeline, schedule_id)["last_status"] == "succeeded")
        stored = view(pipeline, schedule_id)
        assert stored["consecutive_failures"] == 0
        assert stored["failures"] >= 2
        assert stored["status"] == "active"


def test_a_duplicate_message_fires_once(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        schedule_id = create(
            pipeline, body(f"{receiver.url}/x", schedule={"at": "2030-01-01T00:00:00Z"})
        )
        stored = pipeline.wait_until_stored(schedule_id)
        occurrence = Occurrence(
            tenant="default",
            schedule_id=schedule_id,
            revision=stored["revision"],
            scheduled_time=parse_iso(at_in(0.3)),
        )
        message = OutgoingMessage(encode_occurrence(occurrence))
        pipeline.backends.queues.occurrences.send([message, message])
        receiver.wait_for(1, timeout=5)
        time.sleep(1.0)
        pipeline.backends.queues.occurrences.send([message])
        time.sleep(1.0)
        assert len(receiver.calls) == 1
        record = pipeline.backends.store.get_execution("default", occurrence.occurrence_id)
        assert record is not None and record.status.value == "succeeded"


def every_second(url: str, **extra: Any) -> dict[str, Any]:
    return body(url, schedule={"interval": {"number": 1, "unit": "second"}}, **extra)


def test_pause_during_flight_skips_and_resume_fires_again(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        schedule_id = create(pipeline, every_second(f"{receiver.url}/p"))
        receiver.wait_for(1, timeout=5)
        paused = pipeline.client.post(f"{API}/schedule/{schedule_id}/pause")
        assert paused.status_code == 202 and paused.get_json()["status"] == "paused"
        paused_at = time.time()
        time.sleep(2.2)
        assert [c for c in receiver.calls if c.received_at > paused_at + 0.05] == []
        # Superseded: listed as skipped on request, not among the runs.
        assert [r for r in history(pipeline, schedule_id) if r["status"] == "skipped"] == []
        skipped = history(pipeline, schedule_id, "skipped")
        assert skipped and {r["error"] for r in skipped} == {"schedule paused"}
        assert {r["superseded"] for r in skipped} == {True}
        resumed = pipeline.client.post(f"{API}/schedule/{schedule_id}/resume")
        assert resumed.get_json()["status"] == "active"
        before = len(receiver.calls)
        assert len(receiver.wait_for(before + 1, timeout=5)) > before


def test_a_replaced_schedule_never_fires_its_stale_occurrences(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        pipeline.client.put(f"{API}/schedule/swap", json=every_second(f"{receiver.url}/old"))
        receiver.wait_for(1, timeout=5)
        assert (
            pipeline.client.put(
                f"{API}/schedule/swap", json=every_second(f"{receiver.url}/new")
            ).status_code
            == 202
        )
        replaced_at = time.time()
        eventually(lambda: any(c.path == "/new" for c in receiver.calls), timeout=5)
        time.sleep(1.5)
        late_old = [
            c for c in receiver.calls if c.path == "/old" and c.received_at > replaced_at + 0.2
        ]
        assert late_old == []
        reasons = {r["error"] for r in history(pipeline, "swap", "skipped")}
        assert any(reason.startswith("schedule changed") for reason in reasons)


def test_mutations_delivered_out_of_order_keep_the_newest(tmp_path: Path) -> None:
    with running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        pipeline.client.put(f"{API}/schedule/ordered", json=body("http://127.0.0.1:9/x", name="v1"))
        stored = pipeline.wait_until_stored("ordered")
        current = pipeline.backends.store.get_schedule("default", "ordered")
        assert current is not None and current.definition is not None
        now = parse_iso(stored["created_at"])

        def renamed(revision: int, name: str) -> DefinitionMutation:
            definition = dataclasses.replace(current.live_definition, name=name)
            return DefinitionMutation("default", "ordered", revision, now, definition)

        newer = renamed(stored["revision"] + 2, "newer")
        older = renamed(stored["revision"] + 1, "older")
        pipeline.backends.queues.mutations.send(
            [OutgoingMessage(encode_mutation(newer, pipeline.backends.secrets))]
        )
        eventually(lambda: view(pipeline, "ordered")["name"] == "newer")
        pipeline.backends.queues.mutations.send(
            [OutgoingMessage(encode_mutation(older, pipeline.backends.secrets))]
        )
        time.sleep(0.5)
        assert view(pipeline, "ordered")["name"] == "newer"
        assert pipeline.processor.stats.ignored == 1


@pytest.mark.parametrize(
    ("policy", "expect_missed_fired"),
    [("fire_all", "all"), ("fire_once", "one"), ("skip", "none")],
)
def test_misfire_policies_after_an_outage(
    tmp_path: Path, policy: str, expect_missed_fired: str
) -> None:
    settings = sqlite_settings(tmp_path, misfire_threshold_seconds=0.5)
    with running_receiver() as receiver, pipeline_parts(settings) as pipeline:
        schedule_id = create(
            pipeline, every_second(f"{receiver.url}/m", misfire={"policy": policy})
        )
        pipeline.wait_until_stored(schedule_id)
        time.sleep(3.6)  # no poller, no executor: about three occurrences pass unserved
        restarted = time.time()
        pipeline.start("poller", "executor")
        time.sleep(2.5)
        scheduled = [
            parse_iso(c.headers["x-scheduler-scheduled-time"]).timestamp() for c in receiver.calls
        ]
        missed = [t for t in scheduled if t < restarted - 0.5]
        on_time = [t for t in scheduled if t >= restarted]
        assert len(on_time) >= 2
        if expect_missed_fired == "all":
            assert len(missed) >= 3
        elif expect_missed_fired == "one":
            assert len(missed) == 1
        else:
            assert missed == []
        skipped = [r for r in history(pipeline, schedule_id) if r["status"] == "skipped"]
        if expect_missed_fired == "all":
            assert skipped == []
        else:
            assert len(skipped) >= 2
            assert all(r["error"].startswith("missed") for r in skipped)


def test_grace_seconds_skips_occurrences_that_are_too_late(tmp_path: Path) -> None:
    settings = sqlite_settings(tmp_path, misfire_threshold_seconds=0.5)
    with running_receiver() as receiver, pipeline_parts(settings) as pipeline:
        payload = every_second(
            f"{receiver.url}/g", misfire={"policy": "fire_all", "grace_seconds": 1.0}
        )
        schedule_id = create(pipeline, payload)
        pipeline.wait_until_stored(schedule_id)
        time.sleep(3.6)
        restarted = time.time()
        pipeline.start("poller", "executor")
        time.sleep(2.0)
        for call in receiver.calls:
            late = (
                call.received_at - parse_iso(call.headers["x-scheduler-scheduled-time"]).timestamp()
            )
            assert late <= 1.0 + 0.3
        skipped = [r for r in history(pipeline, schedule_id) if r["status"] == "skipped"]
        assert skipped and all("beyond grace" in r["error"] for r in skipped)
        assert any(c.received_at >= restarted for c in receiver.calls)


def test_two_pollers_and_two_executors_fire_each_occurrence_once(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        pipeline.run_worker(pipeline.another("poller"))
        pipeline.run_worker(pipeline.another("executor"))
        for _ in range(20):
            payload = every_second(f"{receiver.url}/many")
            payload["schedule"]["max_occurrences"] = 3
            create(pipeline, payload)
        calls = receiver.wait_for(60, timeout=10)
        time.sleep(1.0)
        keys = Counter(call.headers["idempotency-key"] for call in receiver.calls)
        assert len(calls) >= 60
        assert len(keys) == 60
        assert set(keys.values()) == {1}


def test_a_delivery_that_meets_a_live_lease_waits_for_it_and_then_fires(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        schedule_id = create(
            pipeline, body(f"{receiver.url}/late", schedule={"at": "2030-01-01T00:00:00Z"})
        )
        stored = pipeline.wait_until_stored(schedule_id)
        occurrence = Occurrence(
            tenant="default",
            schedule_id=schedule_id,
            revision=stored["revision"],
            scheduled_time=datetime.now(UTC),
        )
        # An executor that took the occurrence and died: its lease runs two more seconds.
        now = datetime.now(UTC)
        taken = pipeline.backends.store.begin_attempt(
            occurrence, "executor:dead", now, now + timedelta(seconds=2)
        )
        assert taken is not None
        pipeline.backends.queues.occurrences.send([OutgoingMessage(encode_occurrence(occurrence))])
        calls = receiver.wait_for(1, timeout=10)
        assert len(calls) == 1
        assert calls[0].received_at >= now.timestamp() + 2
        eventually(lambda: final_status(pipeline, schedule_id) == "succeeded")
        record = pipeline.backends.store.get_execution("default", occurrence.occurrence_id)
        assert record is not None and record.attempts == 2


def test_the_last_delivery_the_queue_allows_fails_the_occurrence_instead_of_retrying(
    tmp_path: Path,
) -> None:
    settings = sqlite_settings(tmp_path, max_receives=3)
    with running_receiver(answers(503)) as receiver, pipeline_parts(settings) as pipeline:
        payload = body(f"{receiver.url}/down", schedule={"at": at_in(0)})
        payload["retry"] = {**QUICK_RETRY, "max_attempts": 3}
        schedule_id = create(pipeline, payload)
        queue = pipeline.backends.queues.occurrences
        pipeline.poller.poll_once()
        # The queue already delivered this message twice before (executors that died).
        for _ in range(2):
            assert len(queue.receive(1, 2.0, visibility_timeout=0)) == 1
        receive_once(pipeline.executor, wait_seconds=2.0)
        (item,) = take_due(pipeline.executor, timeout=1.0)
        assert item.message.receive_count == 3
        fire(pipeline.executor, item)
        assert len(receiver.calls) == 1
        assert final_status(pipeline, schedule_id) == "failed"
        assert dead_letters(pipeline) == 1


def test_grace_does_not_turn_a_retry_into_a_skip(tmp_path: Path) -> None:
    # Retry-After makes each retry a second late, past the half-second grace.
    later = (503, {"Retry-After": "1"})
    with (
        running_receiver(answers(later, later, 200)) as receiver,
        running_pipeline(sqlite_settings(tmp_path)) as pipeline,
    ):
        payload = body(
            f"{receiver.url}/flaky", misfire={"policy": "fire_once", "grace_seconds": 0.5}
        )
        schedule_id = create(pipeline, payload)
        eventually(lambda: final_status(pipeline, schedule_id) == "succeeded")
        assert len(receiver.calls) == 3
        assert history(pipeline, schedule_id)[0]["attempts"] == 3


def test_a_worker_loop_survives_an_unexpected_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        real_claim = pipeline.backends.store.claim_due_schedules
        failures = iter([OSError("disk full"), OSError("disk full")])

        def claim_failing_twice(*args: Any, **kwargs: Any) -> Any:
            failure = next(failures, None)
            if failure is not None:
                raise failure
            return real_claim(*args, **kwargs)

        monkeypatch.setattr(pipeline.backends.store, "claim_due_schedules", claim_failing_twice)
        create(pipeline, every_second(f"{receiver.url}/still"))
        assert receiver.wait_for(1, timeout=8)
