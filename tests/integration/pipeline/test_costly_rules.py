"""Rules that cost more than they should, tried as an attacker would (issue 22, items 3 and 4).

Every time computation runs under one CPU budget (``CPU_BUDGET_SECONDS``): a create, a preview,
a backfill, the processor and the poller. A rule dateutil cannot compute in some year is refused
at create. A schedule whose times cannot be computed never holds back the schedules beside it,
and a read never computes a rule: the next fire time shown is the one the poller stored.

Costs are read as this thread's CPU time (the test client runs each request in it), which a
busy machine does not inflate.
"""

from __future__ import annotations

import itertools
import logging
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from processor_worker import worker
from scheduler_cli.components import build_poller
from shared.adapters import sqlite_queue
from shared.messages import DefinitionMutation, encode_mutation
from shared.model import Payload, ScheduleDefinition, Timing
from shared.ports import Advance, ClaimRequest, OutgoingMessage
from shared.recurrence import CPU_BUDGET_SECONDS, cpu_budget
from shared.timeutil import UTC, iso_z, parse_iso
from tests.support.api import ApiUnderTest
from tests.support.harness import API

# What a refusal may cost beyond the budget: parsing, the last steps before the clock is read.
SLACK_SECONDS = 0.5
TENANT = "default"
# Fires on the 50 days from Easter, and on Easter + 265 days, which is in December after an
# early Easter but past the end of the year after a late one: dateutil fails on any year with
# an Easter from April 18 (2030: April 21), so from December 2028 a preview of its next times
# failed, and in 2029 every computation that looks into 2030.
FAILS_LATER = "FREQ=DAILY;BYEASTER=" + ",".join(map(str, [*range(50), 265]))
# Every minute except in June: from June 1, the next time is a month of exclusions away.
NOT_IN_JUNE = "RRULE:FREQ=MINUTELY\nEXRULE:FREQ=MINUTELY;BYMONTH=6"
PAYLOAD = {"method": "GET", "url": "https://hooks.example.com/tick"}
MINUTE = timedelta(minutes=1)


def at(api: ApiUnderTest, moment: datetime) -> None:
    """Set the API's clock to ``moment``."""
    api.clock.offset += moment - api.clock.now()


def costing(call: Any) -> tuple[Any, float]:
    started = time.thread_time()
    result = call()
    return result, time.thread_time() - started


def errors(response: Any) -> dict[str, str]:
    """The fields a 400 names, with its message."""
    assert response.status_code == 400, response.get_json()
    return {item["field"]: item["message"] for item in response.get_json()["errors"]}


def create(api: ApiUnderTest, schedule_id: str, schedule: dict[str, Any]) -> Any:
    return api.client.put(
        f"{API}/schedule/{schedule_id}", json={"schedule": schedule, "payload": PAYLOAD}
    )


def store_as_an_older_version_did(
    api: ApiUnderTest, schedule_id: str, rrule: str, accepted: datetime, next_time: datetime
) -> None:
    """A schedule stored without today's checks (an older version accepted it)."""
    definition = ScheduleDefinition(Timing("UTC", rrule=rrule), Payload("GET", PAYLOAD["url"]))
    api.backends.store.apply_definition((TENANT, schedule_id, 1, definition, next_time, accepted))


# -- refused at create, within the budget -----------------------------------------------------


def test_never_firing_easter_lines_are_refused_within_one_budget(api: ApiUnderTest) -> None:
    """Easter is never in January: dateutil walked each line to the year 9999 (3 to 7 s a line,
    35 s for these four)."""
    rule = "\n".join(f"RRULE:FREQ=DAILY;BYEASTER={offset};BYMONTH=1" for offset in range(4))
    response, cost = costing(lambda: create(api, "easter", {"rrule": rule}))
    assert "schedule.rrule" in errors(response)
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS
    preview, cost = costing(
        lambda: api.client.post(f"{API}/schedule/preview", json={"schedule": {"rrule": rule}})
    )
    assert "schedule.rrule" in errors(preview)
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS


def test_a_patch_to_a_never_firing_rule_is_refused_within_one_budget(api: ApiUnderTest) -> None:
    assert create(api, "daily", {"cron": "0 9 * * *"}).status_code == 202
    api.apply()
    rule = "\n".join(f"RRULE:FREQ=HOURLY;BYEASTER={offset};BYMONTH=1" for offset in range(4))
    response, cost = costing(
        lambda: api.client.patch(f"{API}/schedule/daily", json={"schedule": {"rrule": rule}})
    )
    assert "schedule.rrule" in errors(response)
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS


def test_resuming_a_schedule_that_can_no_longer_be_computed_names_its_rule(
    api: ApiUnderTest,
) -> None:
    now = datetime(2030, 2, 1, tzinfo=UTC)
    at(api, now)
    store_as_an_older_version_did(api, "easter", FAILS_LATER, now, now - timedelta(days=1))
    assert api.client.post(f"{API}/schedule/easter/pause").status_code == 202
    response = api.client.post(f"{API}/schedule/easter/resume")
    assert "BYEASTER" in errors(response)["schedule.rrule"]  # not a 500
    assert api.client.get(f"{API}/schedule/easter").get_json()["status"] == "paused"


def test_an_easter_offset_past_the_end_of_the_year_is_a_400_naming_the_rule(
    api: ApiUnderTest,
) -> None:
    response = create(api, "easter", {"rrule": "FREQ=DAILY;BYEASTER=365"})
    # Was a 500: dateutil's IndexError.
    assert "BYEASTER" in errors(response)["schedule.rrule"]


def test_a_rule_that_fails_in_a_later_year_is_refused_at_create(api: ApiUnderTest) -> None:
    """Accepted before, it answered 500 to every computation from 2029 on."""
    at(api, datetime(2026, 5, 1, tzinfo=UTC))
    response = create(api, "easter", {"rrule": FAILS_LATER})
    assert "BYEASTER" in errors(response)["schedule.rrule"]
    preview = api.client.post(
        f"{API}/schedule/preview",
        json={"schedule": {"rrule": FAILS_LATER}, "after": "2028-12-01T00:00:00Z"},
    )
    assert "BYEASTER" in errors(preview)["schedule.rrule"]


def test_a_backfill_over_excluded_times_stops_at_the_budget(api: ApiUnderTest) -> None:
    """Every second since its start is excluded (the EXRULE's COUNT runs out at creation): a
    backfill of the last day walks 86,400 excluded times (15 s of CPU before, going on
    after the client gave up). Now it is refused within the budget; a shorter range works."""
    accepted = datetime(2026, 6, 1, tzinfo=UTC)
    start = accepted - timedelta(days=10)
    excluded = int((accepted - start).total_seconds())
    rule = f"RRULE:FREQ=SECONDLY\nEXRULE:FREQ=SECONDLY;COUNT={excluded}"
    at(api, accepted)
    schedule = {"rrule": rule, "timezone": "America/New_York", "start": iso_z(start)}
    assert create(api, "excluded", schedule).status_code == 202
    api.apply()
    at(api, accepted + timedelta(seconds=1))
    window = {"from": iso_z(accepted - timedelta(days=1)), "to": iso_z(accepted)}
    response, cost = costing(
        lambda: api.client.post(f"{API}/schedule/excluded/backfill", json=window)
    )
    assert "too costly" in errors(response)["from"]
    assert cost < CPU_BUDGET_SECONDS + SLACK_SECONDS
    short = {"from": iso_z(accepted - timedelta(seconds=30)), "to": iso_z(accepted)}
    answer = api.client.post(f"{API}/schedule/excluded/backfill", json=short)
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["queued"] == []


# -- the processor and the poller go on with the others ---------------------------------------


def test_the_processor_dead_letters_a_definition_it_cannot_compute(api: ApiUnderTest) -> None:
    """Accepted by an older version, computed in 2030: it never holds back the creates in the
    same batch (before, the whole batch failed again and again)."""
    in_2030 = datetime(2030, 2, 1, tzinfo=UTC)
    at(api, in_2030)
    definition = ScheduleDefinition(
        Timing("UTC", rrule=FAILS_LATER), Payload("GET", PAYLOAD["url"])
    )
    mutation = DefinitionMutation(TENANT, "easter", 1, in_2030, definition)
    api.backends.queues.mutations.send(
        [OutgoingMessage(encode_mutation(mutation, api.backends.secrets))]
    )
    assert create(api, "good", {"cron": "0 9 * * *"}).status_code == 202
    api.apply()
    assert api.backends.store.get_schedule(TENANT, "good") is not None
    assert api.backends.store.get_schedule(TENANT, "easter") is None
    assert api.processor.stats.poisoned == 1
    [dead] = api.backends.queues.dead_letters.receive(10, 0.1, 30.0)
    assert "easter" in dead.body


def test_the_processor_takes_again_a_definition_it_ran_out_of_budget_on(
    api: ApiUnderTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API computed its first time within the budget before it accepted it: when the
    processor's thread has no budget left for it once (held up by a long pause), the create is
    not lost to the dead letters, as one was in CI: it is stored at its next receive."""
    assert create(api, "nightly", {"cron": "0 2 * * *"}).status_code == 202
    computed = worker.first_occurrence
    calls = itertools.count()

    def held_up_once(*args: Any) -> datetime | None:
        with cpu_budget(0.0 if next(calls) == 0 else CPU_BUDGET_SECONDS):
            return computed(*args)

    monkeypatch.setattr(worker, "first_occurrence", held_up_once)
    api.apply()
    assert api.backends.store.get_schedule(TENANT, "nightly") is None
    assert (api.processor.stats.poisoned, api.queued()) == (0, 1)
    assert api.processor.stats.deferred == 1
    now_ms = sqlite_queue._now_ms
    visibility_ms = int(worker.VISIBILITY_TIMEOUT_SECONDS * 1000)
    monkeypatch.setattr(sqlite_queue, "_now_ms", lambda: now_ms() + visibility_ms)
    api.apply()
    stored = api.backends.store.get_schedule(TENANT, "nightly")
    assert stored is not None and stored.next_schedule_time is not None
    assert stored.next_schedule_time.hour == 2 and stored.next_schedule_time > api.clock.now()
    assert api.queued() == 0 and api.backends.queues.dead_letters.depth().visible == 0


def test_a_schedule_that_cannot_be_planned_never_holds_back_the_others(
    api: ApiUnderTest, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claimed together, earliest first: one whose rule no longer reads (an older version
    stored it; dateutil fails on it in 2030), one whose next time is a month of exclusions
    away (seconds of CPU), and three ordinary ones. The ordinary ones are sent before the
    costly one has spent its budget; the other two are left as they were, logged."""
    caplog.set_level(logging.ERROR)
    june = datetime(2030, 6, 1, tzinfo=UTC)
    at(api, june + timedelta(seconds=55))  # the ordinary ones are due at 00:01
    cursors = {"easter": june - 2 * MINUTE, "june": june - MINUTE}
    store_as_an_older_version_did(
        api, "easter", FAILS_LATER, june - timedelta(days=200), cursors["easter"]
    )
    store_as_an_older_version_did(
        api, "june", NOT_IN_JUNE, june - timedelta(days=1), cursors["june"]
    )
    for name in ("a", "b", "c"):
        assert create(api, name, {"cron": "* * * * *"}).status_code == 202
    api.apply()
    sends: list[tuple[int, float]] = []
    queue = api.backends.queues.occurrences
    send = queue.send

    def timed_send(messages: list[OutgoingMessage]) -> Any:
        sends.append((len(messages), time.thread_time()))
        return send(messages)

    monkeypatch.setattr(queue, "send", timed_send)
    poller = build_poller(api.settings, api.backends, api.clock)
    started = time.thread_time()
    assert poller.poll_once() == 5
    spent = time.thread_time() - started

    for name in ("a", "b", "c"):
        stored = api.backends.store.get_schedule(TENANT, name)
        assert stored is not None and stored.sent_ahead, name
    first_batch, sent_at = sends[0]
    assert first_batch == api.occurrences_queued() > 0
    assert sent_at - started < 0.25  # before the costly one had its full budget
    assert spent >= CPU_BUDGET_SECONDS  # which it then had, and used up
    for name, cursor in cursors.items():
        stored = api.backends.store.get_schedule(TENANT, name)
        assert stored is not None
        assert (stored.next_schedule_time, stored.lease_owner) == (cursor, poller.owner)
    assert poller.stats.not_planned == 2
    logged = {
        record.schedule_id: record.getMessage()  # type: ignore[attr-defined]
        for record in caplog.records
        if getattr(record, "event", None) == "schedule_not_planned"
    }
    assert "BYEASTER" in logged["easter"]
    assert "too costly" in logged["june"]


# -- reads compute nothing ----------------------------------------------------------------------


def test_a_schedule_that_cannot_be_computed_still_reads(api: ApiUnderTest) -> None:
    """Its next time is the one the poller stored: the first it sent that is still to come
    (before: a 500 on GET and on the list, from dateutil's IndexError in 2030)."""
    now = datetime(2030, 2, 1, tzinfo=UTC)
    at(api, now)
    store_as_an_older_version_did(api, "easter", FAILS_LATER, now, now)
    store = api.backends.store
    [claimed] = store.claim_due_schedules(ClaimRequest(now, now, 1, "poller", now + MINUTE))
    sent = (now + timedelta(days=1), now + timedelta(days=2))
    assert store.advance_schedules(
        [Advance(claimed, now + timedelta(days=3), 3, sent)], "poller", now
    )
    shown = api.client.get(f"{API}/schedule/easter")
    assert shown.status_code == 200, shown.get_json()
    assert parse_iso(shown.get_json()["next_schedule_time"]) == now + timedelta(days=1)
    listed = api.client.get(f"{API}/schedules")
    assert listed.status_code == 200
    assert [item["id"] for item in listed.get_json()["items"]] == ["easter"]


def test_listing_costly_schedules_computes_no_rule(api: ApiUnderTest) -> None:
    """45 schedules that used up a max_occurrences of 10,000 minutes a moment ago: showing
    whether one of their times is still to come walked 10,000 times of each rule (the list
    took 6 to 14 s). Now each shows what the poller stored: none left."""
    now = datetime(2026, 6, 1, tzinfo=UTC)
    at(api, now)
    accepted = now - timedelta(minutes=10_000)
    rule = "RRULE:FREQ=MINUTELY\nEXRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29"
    timing = Timing("UTC", rrule=rule, max_occurrences=10_000)
    definition = ScheduleDefinition(timing, Payload("GET", PAYLOAD["url"]))
    store = api.backends.store
    for number in range(45):
        schedule_id = f"costly-{number:02}"
        store.apply_definition((TENANT, schedule_id, 1, definition, now, accepted))
        [claimed] = store.claim_due_schedules(ClaimRequest(now, now, 1, "poller", now + MINUTE))
        assert store.advance_schedules([Advance(claimed, None, 10_000)], "poller", now)
    response, cost = costing(lambda: api.client.get(f"{API}/schedules?limit=200"))
    assert response.status_code == 200
    items = response.get_json()["items"]
    assert len(items) == 45
    assert {item["next_schedule_time"] for item in items} == {None}
    assert cost < 1.0
