"""W3C trace context through the embedded pipeline, as a receiver that records ``traceparent``
sees it: continued from the create, a new trace when the create had none or an invalid one,
another after a replace or a PATCH, the schedule's for a manual run, and messages sent before
traces were carried (an upgrade with messages in flight) still processed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.messages import DefinitionMutation, encode_mutation, encode_occurrence
from shared.model import Occurrence
from shared.ports import OutgoingMessage
from shared.timeutil import parse_iso
from shared.tracing import TRACEPARENT, TRACESTATE
from tests.support.harness import API, Pipeline, running_pipeline, sqlite_settings
from tests.support.receiver import Call, running_receiver
from tests.support.schedules import at_in, body, create, view
from tests.support.waiting import eventually

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"


def parts(call: Call) -> list[str]:
    """The four fields of the call's ``traceparent``, checked as a receiver's parser would."""
    fields = call.headers["traceparent"].split("-")
    assert [len(field) for field in fields] == [2, 32, 16, 2], fields
    assert fields[0] == "00" and set(fields[1]) != {"0"} and set(fields[2]) != {"0"}
    assert all(int(field, 16) >= 0 and field == field.lower() for field in fields)
    return fields


@pytest.mark.parametrize(
    "sent",
    [
        None,
        "garbage",
        f"00-{TRACE_ID.upper()}-b7ad6b7169203331-01",  # upper case: invalid
        "00-00000000000000000000000000000000-b7ad6b7169203331-01",  # all-zero trace id
        f"ff-{TRACE_ID}-b7ad6b7169203331-01",  # version ff is invalid
        f"00-{TRACE_ID}-0000000000000000-01",  # all-zero parent id
    ],
)
def test_a_create_without_a_valid_traceparent_is_accepted_and_starts_a_new_trace(
    tmp_path: Path, sent: str | None
) -> None:
    headers = {} if sent is None else {"traceparent": sent, "tracestate": "congo=t61rcWkgMzE"}
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(
            f"{API}/schedule", json=body(f"{receiver.url}/new"), headers=headers
        )
        assert created.status_code == 202, created.get_json()
        schedule_id = created.get_json()["id"]
        (call,) = receiver.wait_for(1, timeout=5)
        trace_id = parts(call)[1]
        assert trace_id != TRACE_ID
        assert view(pipeline, schedule_id)["trace_id"] == trace_id
        # A tracestate without a valid traceparent is dropped with it.
        assert "tracestate" not in call.headers


def test_a_future_version_of_traceparent_is_continued(tmp_path: Path) -> None:
    """The specification: a version above 00 is read by its first four fields."""
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        pipeline.client.post(
            f"{API}/schedule",
            json=body(f"{receiver.url}/v1"),
            headers={"traceparent": f"01-{TRACE_ID}-b7ad6b7169203331-01-later"},
        )
        (call,) = receiver.wait_for(1, timeout=5)
        assert parts(call)[1] == TRACE_ID


def test_a_replace_or_patch_continues_its_own_request_s_trace(tmp_path: Path) -> None:
    """The occurrences after a change belong to the request that changed the schedule: the
    replace's traceparent; a PATCH without one starts a new trace."""
    replaced_trace = "11111111111111111111111111111111"
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        url = f"{receiver.url}/changed"
        far = {"at": "2030-01-01T00:00:00Z"}
        created = pipeline.client.post(
            f"{API}/schedule", json=body(url, schedule=far), headers={"traceparent": PARENT}
        )
        schedule_id = created.get_json()["id"]
        assert pipeline.wait_until_stored(schedule_id)["trace_id"] == TRACE_ID

        replaced = pipeline.client.put(
            f"{API}/schedule/{schedule_id}",
            json=body(url, schedule=far),
            headers={"traceparent": f"00-{replaced_trace}-1111111111111111-01"},
        )
        assert replaced.status_code == 202
        revision = replaced.get_json()["revision"]
        wait_for_revision(pipeline, schedule_id, revision)
        assert view(pipeline, schedule_id)["trace_id"] == replaced_trace

        patched = pipeline.client.patch(
            f"{API}/schedule/{schedule_id}", json={"schedule": {"at": at_in(0.5)}}
        )
        assert patched.status_code == 202
        wait_for_revision(pipeline, schedule_id, patched.get_json()["revision"])
        patched_trace = view(pipeline, schedule_id)["trace_id"]
        assert patched_trace not in (TRACE_ID, replaced_trace)
        (call,) = receiver.wait_for(1, timeout=5)
        assert parts(call)[1] == patched_trace

        # A manual run is one of the schedule's occurrences: the same trace.
        triggered = pipeline.client.post(f"{API}/schedule/{schedule_id}/trigger")
        assert triggered.status_code == 202, triggered.get_json()
        calls = receiver.wait_for(2, timeout=5)
        assert parts(calls[1])[1] == patched_trace
        assert parts(calls[1])[2] != parts(calls[0])[2]


def wait_for_revision(pipeline: Pipeline, schedule_id: str, revision: int) -> None:
    eventually(lambda: view(pipeline, schedule_id)["revision"] == revision)


def test_messages_sent_before_traces_were_carried_are_still_processed(tmp_path: Path) -> None:
    """An upgrade with messages in flight: a queue 1 message whose definition has no trace,
    and a queue 2 message without traceparent, are stored and fired; their calls start a new
    trace (one per attempt: nothing to continue)."""
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        created = pipeline.client.post(
            f"{API}/schedule",
            json=body(f"{receiver.url}/template", schedule={"at": "2030-01-01T00:00:00Z"}),
            headers={"traceparent": PARENT},
        )
        template_id = created.get_json()["id"]
        pipeline.wait_until_stored(template_id)
        stored = pipeline.backends.store.get_schedule("default", template_id)
        assert stored is not None and stored.definition is not None

        # Queue 1, the old format: the definition's document without "trace".
        old_id = "old-format-schedule"
        mutation = DefinitionMutation(
            "default",
            old_id,
            stored.revision + 1,
            stored.accepted_at,
            stored.definition,
        )
        message = json.loads(encode_mutation(mutation, pipeline.backends.secrets))
        assert message["definition"].pop("trace")["traceparent"].split("-")[1] == TRACE_ID
        pipeline.backends.queues.mutations.send([OutgoingMessage(json.dumps(message))])
        old = pipeline.wait_until_stored(old_id)
        assert old["trace_id"] is None

        # Queue 2, the old format: no traceparent.
        occurrence = Occurrence(
            tenant="default",
            schedule_id=old_id,
            revision=old["revision"],
            scheduled_time=parse_iso(at_in(0.3)),
        )
        encoded = json.loads(encode_occurrence(occurrence))
        assert TRACEPARENT not in encoded and TRACESTATE not in encoded
        pipeline.backends.queues.occurrences.send([OutgoingMessage(json.dumps(encoded))])
        (call,) = receiver.wait_for(1, timeout=5)
        assert call.path == "/template"
        assert parts(call)[1] != TRACE_ID
        path = f"{API}/schedule/{old_id}/executions/{occurrence.occurrence_id}"
        eventually(lambda: pipeline.client.get(path).get_json().get("status") == "succeeded")


def test_the_trace_is_kept_with_the_schedule_across_a_restart(tmp_path: Path) -> None:
    """Stored with the schedule: a pipeline started again on the same files continues it."""
    settings = sqlite_settings(tmp_path)
    with running_pipeline(settings) as pipeline:
        schedule_id = create(pipeline, body("http://127.0.0.1:9/", schedule={"cron": "@daily"}))
        first = view(pipeline, schedule_id)["trace_id"]
        assert first is not None
    with running_pipeline(settings) as pipeline:
        assert view(pipeline, schedule_id)["trace_id"] == first
