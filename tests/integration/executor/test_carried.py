"""What an occurrence carries to fire (``shared.messages.carry``): the executor's version check
reads the schedules' revisions and states, not their definitions, and a call still sends what
the schedule's revision says, secrets included. A message that carries nothing usable (sent
before it was carried, or sealed for another schedule) fires from the stored definition."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

from shared.messages import carry, encode_occurrence
from shared.model import Occurrence
from shared.ports import OutgoingMessage, Store
from shared.timeutil import parse_iso
from tests.support.harness import Pipeline, running_pipeline, sqlite_settings
from tests.support.receiver import running_receiver
from tests.support.schedules import at_in, body, create


class CountedReads:
    """The store, counting the version check's reads by kind."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.reads: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        if name in ("get_schedules", "get_schedule_states"):
            self.reads[name] += 1
        return getattr(self.store, name)


def counting(pipeline: Pipeline) -> CountedReads:
    counted = CountedReads(pipeline.executor.checking.store)
    pipeline.executor.checking.store = counted  # type: ignore[assignment]
    return counted


SECRET = "Bearer sk_live_0123456789abcdefghijklmn"


def test_the_version_check_reads_no_definition_and_the_call_sends_the_revisions(
    tmp_path: Path,
) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        counted = counting(pipeline)
        for n in range(3):
            create(
                pipeline,
                body(
                    f"{receiver.url}/hook/{n}",
                    schedule={"at": at_in(1.0)},
                    payload={
                        "method": "POST",
                        "url": f"{receiver.url}/hook/{n}",
                        "headers": {"Authorization": SECRET},
                        "body": {"n": n},
                    },
                ),
            )
        calls = receiver.wait_for(3, timeout=8)
    assert sorted(call.path for call in calls) == [f"/hook/{n}" for n in range(3)]
    assert {call.headers["authorization"] for call in calls} == {SECRET}
    assert sorted(call.body for call in calls) == [b'{"n":%d}' % n for n in range(3)]
    assert counted.reads["get_schedule_states"] >= 1 and counted.reads["get_schedules"] == 0


def test_a_message_without_a_usable_definition_fires_from_the_store(tmp_path: Path) -> None:
    with running_receiver() as receiver, running_pipeline(sqlite_settings(tmp_path)) as pipeline:
        far = {"at": "2030-01-01T00:00:00Z"}
        first = create(pipeline, body(f"{receiver.url}/first", schedule=far))
        second = create(pipeline, body(f"{receiver.url}/second", schedule=far))
        stored = pipeline.backends.store.get_schedule("default", first)
        assert stored is not None
        counted = counting(pipeline)
        # The first schedule's definition, carried by the second's occurrence: it opens for the
        # first only, so the second's stored definition is read. And one carrying nothing, as
        # a poller from before sends.
        box = pipeline.backends.secrets
        assert stored.stored_definition is not None
        sealed = carry("default", first, stored.revision, stored.stored_definition, box)
        revision = pipeline.wait_until_stored(second)["revision"]
        moved = Occurrence("default", second, revision, parse_iso(at_in(0.5)))
        plain = Occurrence("default", first, stored.revision, parse_iso(at_in(0.5)))
        pipeline.backends.queues.occurrences.send(
            [
                OutgoingMessage(encode_occurrence(moved, sealed)),
                OutgoingMessage(encode_occurrence(plain)),
            ]
        )
        receiver.wait_for(2, timeout=6)
        time.sleep(0.5)
        calls = list(receiver.calls)
    assert sorted(call.path for call in calls) == ["/first", "/second"]
    assert counted.reads["get_schedules"] >= 1
