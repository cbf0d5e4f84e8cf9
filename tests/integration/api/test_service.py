"""The API's application layer (``ScheduleService``) over the embedded backends, and what one
request costs it: a create reads its timing and builds its recurrence once."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import shared.notations.cron
import shared.notations.rrule
import shared.recurrence
import shared.recurrence.rrule
import shared.validation
from processor_worker.worker import Processor
from scheduler_cli.components import build_processor
from scheduler_service.service import ScheduleService
from scheduler_service.service.creating import (
    IdempotencyConflict,
    IdempotentRequest,
    QuotaExceeded,
)
from scheduler_service.service.running import NoDeadLetter, NotReplayable
from shared.backends import Backends, open_backends
from shared.changes import Actor, ActorKind
from shared.dispatch import plan_dispatch
from shared.errors import InvalidInput, NotFound
from shared.messages import decode_occurrence
from shared.model import (
    Answer,
    AttemptOutcome,
    Every,
    ExecutionStatus,
    MisfirePolicy,
    Occurrence,
    Payload,
    RetryPolicy,
    ScheduleDefinition,
    ScheduleStatus,
    Timing,
    Unit,
    occurrence_id,
)
from shared.ports import Clock
from shared.recurrence import Bounded
from shared.timeutil import UTC
from tests.support.api import ApiUnderTest
from tests.support.harness import API, sqlite_settings

PAYLOAD = {"method": "POST", "url": "https://hooks.example.com/run"}

ACTOR = Actor(ActorKind.API_KEY, "0123456789ab", "service tests")


READERS_CALLED_FROM = (
    shared.recurrence,
    shared.recurrence.rrule,
    shared.notations.cron,
    shared.notations.rrule,
)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many recurrences are built, and how many cron lines and rules read, from now on."""
    counts: Counter[str] = Counter()
    bounded_init = Bounded.__init__

    def counting_init(self: Bounded, *args: Any, **kwargs: Any) -> None:
        counts["recurrence"] += 1
        bounded_init(self, *args, **kwargs)

    monkeypatch.setattr(Bounded, "__init__", counting_init)
    for reader, count_as in (("cron_recurrence", "cron line"), ("parse_rrule", "rule")):
        original = getattr(shared.recurrence, reader)

        def counting(
            *args: Any, _original: Any = original, _name: str = count_as, **kwargs: Any
        ) -> Any:
            counts[_name] += 1
            return _original(*args, **kwargs)

        # Wherever the readers are called from: the engines and the notations.
        for module in READERS_CALLED_FROM:
            if hasattr(module, reader):
                monkeypatch.setattr(module, reader, counting)
    return counts


@pytest.mark.parametrize(
    ("schedule", "read"),
    [
        ({"cron": "H 9 * * MON-FRI", "timezone": "Europe/Paris"}, "cron line"),
        ({"cron": "@every 90m", "start": "2030-01-01T00:00:00Z"}, "cron line"),
        ({"rrule": "FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=10"}, "rule"),
        ({"interval": {"number": 2, "unit": "days"}}, None),
    ],
)
def test_a_create_builds_its_recurrence_once(
    api: ApiUnderTest, built: Counter[str], schedule: dict[str, Any], read: str | None
) -> None:
    for method, path in (("post", "/schedule"), ("put", "/schedule/once")):
        built.clear()
        response = getattr(api.client, method)(
            f"{API}{path}", json={"schedule": schedule, "payload": PAYLOAD}
        )
        assert response.status_code == 202, response.get_json()
        assert response.get_json()["next_schedule_time"] is not None
        expected = {"recurrence": 1, **({read: 1} if read else {})}
        assert dict(built) == expected, (method, schedule)


# -- ScheduleService, the application layer, without HTTP ---------------------------------


class FixedClock(Clock):
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at


NOW = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # a Monday


@dataclass
class Parts:
    service: ScheduleService
    backends: Backends
    processor: Processor
    clock: FixedClock

    def apply(self) -> None:
        while self.processor.process_batch():
            pass

    def sent_occurrences(self) -> list[Occurrence]:
        queue = self.backends.queues.occurrences
        return [decode_occurrence(message.body) for message in queue.receive(10, 0, 30)]


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[Parts]:
    settings = sqlite_settings(tmp_path, tenant_schedule_quota=2, max_receives=5)
    backends = open_backends(settings)
    clock = FixedClock(NOW)
    service = ScheduleService(backends.store, backends.queues, settings, clock, backends.secrets)
    try:
        yield Parts(service, backends, build_processor(settings, backends, clock), clock)
    finally:
        backends.close()


def definition(**timing: Any) -> ScheduleDefinition:
    return ScheduleDefinition(
        timing=Timing(**{"timezone": "Europe/Paris", **timing}),
        payload=Payload("POST", "https://hooks.example.com/run", {"Authorization": "Bearer k1"}),
    )


def test_an_accepted_definition_is_stored_once_the_processor_applies_it(parts: Parts) -> None:
    accepted = parts.service.creation.accept_definition(
        "t1", "daily", definition(cron="0 9 * * *"), actor=ACTOR
    )
    assert (accepted.schedule_id, accepted.timezone) == ("daily", "Europe/Paris")
    assert accepted.next_schedule_time == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # 09:00 CET
    with pytest.raises(NotFound):
        parts.service.reads.get("t1", "daily")
    parts.apply()
    stored = parts.service.reads.get("t1", "daily")
    assert stored.revision == accepted.revision
    assert stored.next_schedule_time == accepted.next_schedule_time
    with pytest.raises(NotFound):
        parts.service.reads.get("t2", "daily")


def test_a_bad_definition_names_every_bad_field(parts: Parts) -> None:
    bad = dataclasses.replace(
        definition(at=datetime(2026, 5, 2, 9, 30), end=datetime(2026, 5, 1)),
        payload=Payload("GET", "http://10.1.2.3/hook"),
        retry=RetryPolicy(max_attempts=6),
    )
    with pytest.raises(InvalidInput) as raised:
        parts.service.creation.accept_definition("t1", None, bad, actor=ACTOR)
    assert set(raised.value.fields) == {"schedule.end", "payload.url", "retry.max_attempts"}
    assert parts.backends.queues.mutations.depth().visible == 0


def test_a_repeated_idempotent_create_answers_the_first_and_another_body_conflicts(
    parts: Parts,
) -> None:
    first_key = IdempotentRequest("key-1", "fingerprint-a")
    first = parts.service.creation.accept_definition(
        "t1", None, definition(cron="0 9 * * *"), first_key, actor=ACTOR
    )
    again = parts.service.creation.accept_definition(
        "t1", None, definition(cron="0 9 * * *"), first_key, actor=ACTOR
    )
    assert (again.schedule_id, again.revision, again.replayed) == (
        first.schedule_id,
        first.revision,
        True,
    )
    assert parts.backends.queues.mutations.depth().visible == 1
    with pytest.raises(IdempotencyConflict):
        parts.service.creation.accept_definition(
            "t1",
            None,
            definition(cron="0 10 * * *"),
            IdempotentRequest("key-1", "other"),
            actor=ACTOR,
        )


def test_the_quota_counts_creates_not_yet_applied_and_a_replace_is_free(parts: Parts) -> None:
    parts.service.creation.accept_definition("t1", "a", definition(cron="0 9 * * *"), actor=ACTOR)
    parts.service.creation.accept_definition("t1", "b", definition(cron="0 9 * * *"), actor=ACTOR)
    with pytest.raises(QuotaExceeded):
        parts.service.creation.accept_definition(
            "t1", "c", definition(cron="0 9 * * *"), actor=ACTOR
        )
    parts.apply()
    parts.service.creation.accept_definition("t1", "a", definition(cron="0 10 * * *"), actor=ACTOR)
    parts.service.creation.accept_definition("t2", "c", definition(cron="0 9 * * *"), actor=ACTOR)
    parts.service.changes.delete("t1", "b", actor=ACTOR)
    parts.service.creation.accept_definition("t1", "c", definition(cron="0 9 * * *"), actor=ACTOR)


def test_a_replace_sending_masked_secrets_keeps_the_stored_ones(parts: Parts) -> None:
    parts.service.creation.accept_definition("t1", "s", definition(cron="0 9 * * *"), actor=ACTOR)
    parts.apply()
    masked = dataclasses.replace(
        definition(cron="0 10 * * *"),
        payload=Payload("POST", "https://hooks.example.com/run", {"Authorization": "********"}),
    )
    parts.service.creation.accept_definition("t1", "s", masked, actor=ACTOR)
    parts.apply()
    stored = parts.service.reads.get("t1", "s").live_definition
    assert (stored.timing.kind, stored.timing.value) == ("cron", "0 10 * * *")
    assert stored.payload.headers == {"Authorization": "Bearer k1"}


def test_pause_resume_and_delete_apply_at_once(parts: Parts) -> None:
    parts.service.creation.accept_definition(
        "t1", "p", definition(interval=Every(1, Unit.HOUR)), actor=ACTOR
    )
    parts.apply()
    assert parts.service.changes.pause("t1", "p", actor=ACTOR).status is ScheduleStatus.PAUSED
    parts.clock.at = NOW + timedelta(hours=5, minutes=30)
    resumed = parts.service.changes.resume("t1", "p", actor=ACTOR)
    assert resumed.status is ScheduleStatus.ACTIVE
    # The hours of the pause are not caught up: the next is the first from now on.
    assert resumed.next_schedule_time == NOW + timedelta(hours=6)
    parts.service.changes.delete("t1", "p", actor=ACTOR)
    with pytest.raises(NotFound):
        parts.service.reads.get("t1", "p")
    with pytest.raises(NotFound):
        parts.service.changes.delete("t1", "p", actor=ACTOR)


def test_a_trigger_sends_a_manual_occurrence_even_while_paused(parts: Parts) -> None:
    parts.service.creation.accept_definition("t1", "m", definition(cron="0 9 * * *"), actor=ACTOR)
    parts.apply()
    parts.service.changes.pause("t1", "m", actor=ACTOR)
    occurrence = parts.service.runs.trigger("t1", "m")
    assert occurrence.manual and occurrence.scheduled_time == NOW
    assert occurrence.occurrence_id.startswith("m:manual:2026-03-02T08:00:00.000Z:")
    assert [sent.occurrence_id for sent in parts.sent_occurrences()] == [occurrence.occurrence_id]
    with pytest.raises(NotFound):
        parts.service.runs.trigger("t2", "m")


def test_a_backfill_queues_the_range_s_occurrences_and_refuses_a_bad_range(parts: Parts) -> None:
    parts.service.creation.accept_definition(
        "t1", "b", definition(interval=Every(1, Unit.HOUR)), actor=ACTOR
    )
    parts.apply()
    parts.clock.at = NOW + timedelta(hours=4)
    start, end = NOW + timedelta(minutes=30), NOW + timedelta(hours=3, minutes=30)
    done = parts.service.runs.backfill("t1", "b", start, end, MisfirePolicy.FIRE_ONCE)
    assert (done.schedule_id, done.policy) == ("b", MisfirePolicy.FIRE_ONCE)
    assert done.queued == ["b:2026-03-02T11:00:00.000Z"]
    assert [item.reason for item in done.left_out] == ["fire_once runs the latest"] * 2
    assert [sent.occurrence_id for sent in parts.sent_occurrences()] == done.queued
    with pytest.raises(InvalidInput) as raised:
        parts.service.runs.backfill("t1", "b", end, start, MisfirePolicy.FIRE_ALL)
    assert set(raised.value.fields) == {"from"}
    with pytest.raises(InvalidInput) as raised:
        parts.service.runs.backfill(
            "t1", "b", start, NOW + timedelta(hours=5), MisfirePolicy.FIRE_ALL
        )
    assert set(raised.value.fields) == {"to"}


def test_a_preview_gives_the_times_after_or_before_a_moment(parts: Parts) -> None:
    timing = Timing(timezone="Europe/Paris", cron="0 9 * * MON")
    ahead = parts.service.checks.preview(timing, 2)
    assert ahead.times == [datetime(2026, 3, 2, 8, tzinfo=UTC), datetime(2026, 3, 9, 8, tzinfo=UTC)]
    assert ahead.description.startswith("At 09:00")
    before = parts.service.checks.preview(timing, 1, before=datetime(2026, 3, 2, 8, tzinfo=UTC))
    assert before.times == [datetime(2026, 2, 23, 8, tzinfo=UTC)]
    with pytest.raises(InvalidInput) as raised:
        parts.service.checks.preview(timing, 1, after=NOW, before=NOW)
    assert set(raised.value.fields) == {"before"}
    with pytest.raises(InvalidInput) as raised:
        parts.service.checks.preview(Timing(timezone="UTC", cron="0 9 30 2 *"), 1)
    assert set(raised.value.fields) == {"schedule.cron"}


def test_replay_and_discard_refuse_what_is_not_a_dead_letter(parts: Parts) -> None:
    parts.service.creation.accept_definition("t1", "r", definition(cron="0 9 * * *"), actor=ACTOR)
    parts.apply()
    store = parts.backends.store
    occurrence = Occurrence("t1", "r", 1, NOW)
    running = store.begin_attempt(occurrence, "w", NOW, NOW + timedelta(minutes=1))
    assert running is not None
    with pytest.raises(NoDeadLetter):
        parts.service.runs.replay("t1", occurrence.occurrence_id, actor=ACTOR)
    failed = AttemptOutcome(ExecutionStatus.FAILED, NOW, answer=Answer(500))
    assert store.finish_attempt(running, "w", failed)
    with pytest.raises(NoDeadLetter):
        parts.service.runs.replay("t2", occurrence.occurrence_id, actor=ACTOR)
    parts.service.changes.delete("t1", "r", actor=ACTOR)
    with pytest.raises(NotReplayable):
        parts.service.runs.replay("t1", occurrence.occurrence_id, actor=ACTOR)
    parts.service.runs.discard("t1", occurrence.occurrence_id)
    with pytest.raises(NoDeadLetter):
        parts.service.runs.discard("t1", occurrence.occurrence_id)
    assert (
        parts.service.reads.execution("t1", occurrence.occurrence_id).status
        is ExecutionStatus.FAILED
    )


def test_a_create_parses_its_body_once(api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch) -> None:
    body = json.dumps(
        {"schedule": {"cron": "0 9 * * *"}, "payload": PAYLOAD, "metadata": {"k": [1.5, None]}}
    )
    parsed: list[str] = []
    loads = json.loads

    def counting_loads(text: str | bytes, *args: Any, **kwargs: Any) -> Any:
        if (text.decode() if isinstance(text, bytes) else text) == body:
            parsed.append("body")
        return loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counting_loads)
    for headers in ({}, {"Idempotency-Key": "once"}):
        parsed.clear()
        response = api.client.post(
            f"{API}/schedule", data=body, content_type="application/json", headers=headers
        )
        assert response.status_code == 202, response.get_json()
        assert parsed == ["body"], headers


def test_a_cron_line_with_h_has_a_next_time_and_backfills(parts: Parts) -> None:
    """``H`` spreads by the schedule's id: every time computed for the schedule uses it."""
    parts.service.creation.accept_definition(
        "t1", "spread", definition(cron="H 9 * * *"), actor=ACTOR
    )
    parts.apply()
    stored = parts.service.reads.get("t1", "spread")
    first = stored.next_schedule_time
    assert first is not None
    # As the poller leaves it once it has sent the first occurrence: the cursor a day on.
    plan = plan_dispatch(stored, parts.clock.now(), first, 100, timedelta(seconds=5))
    assert plan.next_schedule_time == first + timedelta(days=1)
    sent = stored.evolve(
        occurrence_count=plan.occurrence_count,
        next_schedule_time=plan.next_schedule_time,
        sent_ahead=plan.sent_ahead,
    )
    assert parts.service.reads.next_fire_time(sent) == first
    parts.clock.at = first + timedelta(days=1, hours=1)
    done = parts.service.runs.backfill("t1", "spread", NOW, parts.clock.at, MisfirePolicy.FIRE_ALL)
    assert done.queued == [
        occurrence_id("spread", first),
        occurrence_id("spread", first + timedelta(days=1)),
    ]
