"""The MongoDB server freezes for 15 s (SIGSTOP, then SIGCONT) while occurrences fire.

What a slow primary or an election looks like to the workers: the store answers nothing for a
while, then everything at once. Checked against the receiver's log: no occurrence missing, none
unexpected, and none called twice (every call succeeds, so a second call of an occurrence is a
succeeded occurrence called again). MongoDB on an nx-27017 of this test's own (the session's
is not frozen under the other tests), SQS on the session's LocalStack.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.support import peers
from tests.support.processes import UNDER_FAULTS, create_every_second, started_components
from tests.support.receiver import running_receiver

pytestmark = pytest.mark.slow

SCHEDULES = 5
OCCURRENCES_EACH = 41  # every second for 40 seconds, both ends included
FREEZE_AFTER_SECONDS = 8.0
FREEZE_SECONDS = 15.0


def test_a_frozen_mongodb_loses_nothing_and_calls_no_success_twice(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not peers.ENABLED:
        pytest.skip(peers.DISABLED_REASON)
    (tmp_path / "nx-27017").mkdir()
    mongo = peers.start_nx_27017(tmp_path / "nx-27017")
    sqs_endpoint = peers.sqs_endpoint_for(request, "wire-peers")
    region = peers.aws_for(monkeypatch, tmp_path, "wire-peers")
    suffix = uuid.uuid4().hex[:12]
    wire = peers.WireBackends(mongo.url, sqs_endpoint, region, f"scheduler_test_{suffix}", suffix)
    frozen = False
    try:
        with (
            running_receiver() as receiver,
            started_components(tmp_path, {**wire.env(), **UNDER_FAULTS}) as components,
        ):
            start, end, expected = create_every_second(
                components, receiver.url, "freeze", SCHEDULES, OCCURRENCES_EACH
            )
            time.sleep(max(0.0, (start - datetime.now(UTC)).total_seconds()) + FREEZE_AFTER_SECONDS)
            # The whole process group: nx-27017 and anything it started.
            os.killpg(mongo.process.pid, signal.SIGSTOP)
            frozen = True
            time.sleep(FREEZE_SECONDS)
            os.killpg(mongo.process.pid, signal.SIGCONT)
            frozen = False

            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                seen = {call.headers["idempotency-key"] for call in receiver.calls}
                if expected <= seen and datetime.now(UTC) > end + timedelta(seconds=2):
                    break
                time.sleep(0.5)
            time.sleep(2.0)  # room for a late duplicate to show
    finally:
        if frozen:
            os.killpg(mongo.process.pid, signal.SIGCONT)
        wire.drop()
        mongo.stop()

    deliveries = Counter(call.headers["idempotency-key"] for call in receiver.calls)
    missing = expected - set(deliveries)
    unexpected = set(deliveries) - expected
    twice = sorted(key for key, count in deliveries.items() if count > 1)
    print(
        f"\nfreeze: {len(expected)} occurrences expected, {len(deliveries)} delivered, "
        f"{len(missing)} missing, {len(unexpected)} unexpected, {len(twice)} called twice or more"
    )
    assert missing == set()
    assert unexpected == set()
    assert twice == []
