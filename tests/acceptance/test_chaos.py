"""kill -9 pollers and executors at random while a few hundred occurrences come due.

Checked against the receiver's log: no occurrence missing, none unexpected, every duplicate
delivery carries the same idempotency key, one succeeded record per occurrence. Run on one
SQLite file, and at the same size on the production adapters over the wire: MongoDB on
nx-27017 and SQS on LocalStack (about 45 s each on CI's two cores).
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.peers import ComponentBackends
from tests.support.processes import UNDER_FAULTS, create_every_second, started_components
from tests.support.receiver import Call, running_receiver

pytestmark = pytest.mark.slow

SCHEDULES = 10
OCCURRENCES_EACH = 31  # every second for 30 seconds, both ends included
KILL_EVERY_SECONDS = (1.0, 2.5)


def slightly_slow(call: Call) -> tuple[int, dict[str, str]]:
    time.sleep(0.02)  # so that kills land on calls in flight too
    return 200, {}


def test_kill_9_of_pollers_and_executors_loses_nothing(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {
        **component_backends.env,
        **UNDER_FAULTS,
        "SCHEDULER_POLLER_LEASE_SECONDS": "2",
        "SCHEDULER_EXECUTION_LEASE_MARGIN_SECONDS": "2",
    }
    victims = sorted(f"{kind}-{n}" for kind in ("poller", "executor") for n in (1, 2))
    rng = random.Random(20261122)
    kills = Counter[str]()
    with (
        running_receiver(slightly_slow) as receiver,
        started_components(tmp_path, env, ["api", "processor", *victims]) as components,
    ):
        _, end, expected = create_every_second(
            components, receiver.url, "chaos", SCHEDULES, OCCURRENCES_EACH
        )
        stop_killing = threading.Event()

        def killer() -> None:
            while not stop_killing.wait(rng.uniform(*KILL_EVERY_SECONDS)):
                name = rng.choice(victims)
                components.processes[name].kill()
                kills[name] += 1
                time.sleep(rng.uniform(0.1, 0.8))
                components.start(name)

        chaos = threading.Thread(target=killer, daemon=True)
        chaos.start()
        time.sleep((end - datetime.now(UTC)).total_seconds() + 1)
        stop_killing.set()
        chaos.join()

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = {call.headers["idempotency-key"] for call in receiver.calls}
            if expected <= seen:
                break
            time.sleep(0.5)
        time.sleep(1.0)

    deliveries = Counter(call.headers["idempotency-key"] for call in receiver.calls)
    missing = expected - set(deliveries)
    unexpected = set(deliveries) - expected
    duplicates = sum(count - 1 for count in deliveries.values())
    backends = component_backends.open()
    try:
        statuses = Counter(
            record.status.value if record else "absent"
            for record in (backends.store.get_execution("default", key) for key in sorted(expected))
        )
    finally:
        backends.close()
    print(
        f"\nchaos ({component_backends.variant}): {len(expected)} occurrences expected, "
        f"{len(deliveries)} delivered, "
        f"{duplicates} duplicate deliveries, {len(missing)} missing, {len(unexpected)} unexpected; "
        f"kills {dict(kills)}; records {dict(statuses)}"
    )
    assert sum(kills.values()) >= 10
    assert missing == set()
    assert unexpected == set()
    assert statuses == Counter({"succeeded": len(expected)})
