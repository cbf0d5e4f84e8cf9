"""The Python client against real ``scheduler`` processes: ``scheduler dev``, and the four
components apart with API keys (on one SQLite file, and on MongoDB and SQS over the wire)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from scheduler_client import (
    DeadLetter,
    InvalidRequest,
    NotFound,
    SchedulerClient,
    Unauthorized,
)
from tests.support import waiting
from tests.support.peers import ComponentBackends
from tests.support.processes import Process, running_components
from tests.support.receiver import Call, Receiver, running_receiver
from tests.support.schedules import hourly_cron_away_from_now

pytestmark = pytest.mark.slow

T = TypeVar("T")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def eventually(probe: Callable[[], T], timeout: float = 15.0) -> T:
    """``probe()``'s first answer that is not falsy; ``NotFound`` or a failed assertion
    inside it means "not yet" (the processor has not applied the change)."""
    return waiting.eventually(probe, timeout, tolerating=(NotFound, AssertionError))


def hourly(name: str, receiver: Receiver, tag: str = "client") -> dict[str, object]:
    """An hourly schedule none of whose times comes while the test runs: the calls and dead
    letters it checks are the ones it triggers and backfills."""
    return {
        "name": name,
        "tags": [tag],
        "schedule": {"cron": hourly_cron_away_from_now()[0], "timezone": "Europe/Paris"},
        "payload": {"method": "POST", "url": f"{receiver.url}/hook", "body": {"from": name}},
    }


def failing_at(path: str) -> Callable[[Call], tuple[int, dict[str, str]]]:
    return lambda call: (500 if call.path == path else 200, {})


def exercise(client: SchedulerClient, receiver: Receiver) -> None:
    """Every call of the client, each checked as a user would."""
    ids = [client.create(hourly(f"c{n}", receiver))["id"] for n in range(5)]
    for schedule_id in ids:
        eventually(lambda schedule_id=schedule_id: client.get(schedule_id))
    listed = [schedule["id"] for schedule in client.list(tag="client", limit=2)]
    assert sorted(listed) == sorted(ids)
    assert [s["name"] for s in client.list(name="c3")] == ["c3"]
    # A page at a time, by its cursor, as the API and the CLI page.
    page = client.list_page(tag="client", limit=3)
    assert len(page["items"]) == 3 and page["next_cursor"]
    rest = client.list_page(tag="client", limit=3, cursor=page["next_cursor"])
    assert [s["id"] for s in page["items"] + rest["items"]] == listed
    assert rest["next_cursor"] is None

    first = ids[0]
    replaced = client.replace(first, {**hourly("renamed", receiver), "priority": 7})
    assert replaced["id"] == first and replaced["status"] == "accepted"
    eventually(lambda: client.get(first)["name"] == "renamed")

    updated = client.update(ids[1], {"payload": {"body": {"from": "patched"}}, "priority": 2})
    assert updated["id"] == ids[1] and updated["status"] == "accepted"
    eventually(lambda: client.get(ids[1])["revision"] == updated["revision"])
    assert client.get(ids[1])["payload"]["body"] == {"from": "patched"}
    assert client.get(ids[1])["name"] == "c1"
    alerted = {"on_failure": f"{receiver.url}/alerts", "alert": {"late_after_seconds": 60}}
    updated = client.update(ids[2], alerted)
    eventually(lambda: client.get(ids[2])["revision"] == updated["revision"])
    alert = client.get(ids[2])["alert"]
    assert alert is not None and alert["late_after_seconds"] == 60

    assert client.pause(first)["status"] == "paused"
    assert [s["id"] for s in client.list(status="paused")] == [first]
    assert client.resume(first)["status"] == "active"

    triggered = client.trigger(first)
    assert triggered["occurrence_id"].startswith(first)
    runs = eventually(
        lambda: [e for e in client.executions(first) if e["status"] == "succeeded"], timeout=20
    )
    assert runs[0]["manual"] and runs[0]["http_status"] == 200
    one = client.execution(first, triggered["occurrence_id"])
    assert [(a["number"], a["status"]) for a in one["attempt_log"]] == [(1, "succeeded")]
    assert one["attempt_log"][0]["response_status_line"] == "HTTP/1.1 200 OK"
    assert receiver.calls[-1].json() == {"from": "renamed"}

    # The caller's W3C trace, continued by the schedule's calls (docs/tracing.md).
    traced = client.create(
        {**hourly("traced", receiver), "payload": {"method": "GET", "url": f"{receiver.url}/t"}},
        traceparent=f"00-{TRACE_ID}-00f067aa0ba902b7-01",
    )["id"]
    assert eventually(lambda: client.get(traced))["trace_id"] == TRACE_ID
    client.trigger(traced)
    [call] = eventually(lambda: [call for call in receiver.calls if call.path == "/t"], timeout=20)
    version, trace_id, span_id, flags = call.headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
    assert span_id not in ("00f067aa0ba902b7", "0" * 16)
    assert client.delete(traced)["status"] == "deleted"

    preview = client.preview({"cron": "30 9 * * 1-5", "timezone": "Asia/Kolkata"}, count=3)
    assert len(preview["occurrences"]) == 3
    assert preview["occurrences"][0]["local"].endswith("09:30:00.000+05:30")
    assert preview["description"]

    with pytest.raises(InvalidRequest) as raised:
        client.create({**hourly("bad", receiver), "schedule": {"cron": "61 * * * *"}})
    assert raised.value.status == 400
    assert raised.value.messages_for("schedule.cron")

    hour = time.time() // 3600 * 3600
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    backfilled = client.backfill(
        first,
        time.strftime(stamp, time.gmtime(hour - 7200)),
        time.strftime(stamp, time.gmtime(hour)),
        policy="fire_once",
    )
    assert [len(backfilled["queued"]), len(backfilled["left_out"])] == [1, 1]
    eventually(
        lambda: (
            backfilled["queued"][0]
            in [e["occurrence_id"] for e in client.executions(first) if e["status"] == "succeeded"]
        ),
        timeout=20,
    )

    assert client.delete(first) == {"id": first, "status": "deleted"}
    with pytest.raises(NotFound) as missing:
        client.get(first)
    assert missing.value.title == "Not Found"
    with pytest.raises(NotFound):
        client.delete(first)
    # The history stays readable after the delete.
    assert len(list(client.executions(first))) >= 2
    history = client.executions_page(first, limit=1, status="succeeded")
    assert history["schedule_status"] == "deleted" and history["next_cursor"]
    assert [item["status"] for item in history["items"]] == ["succeeded"]

    body = {**hourly("failing", receiver), "retry": {"max_attempts": 1}}
    body["payload"] = {"method": "POST", "url": f"{receiver.url}/fail"}
    failing = client.create(body)["id"]
    eventually(lambda: client.get(failing))
    occurrence_id = client.trigger(failing)["occurrence_id"]

    def letter(attempts: int) -> list[DeadLetter]:
        return [
            item
            for item in client.dead_letters(limit=1)
            if item["id"] == occurrence_id and item["attempts"] == attempts
        ]

    assert eventually(lambda: letter(1), timeout=20)[0]["http_status"] == 500
    assert client.replay(occurrence_id)["attempt"] == 2
    eventually(lambda: letter(2), timeout=20)  # it failed again: a dead letter again
    assert client.discard(occurrence_id) == {"id": occurrence_id, "status": "discarded"}
    assert list(client.dead_letters()) == []
    assert client.dead_letters_page(limit=5) == {"items": [], "next_cursor": None}
    with pytest.raises(NotFound):
        client.replay(occurrence_id)


def test_the_client_against_scheduler_dev(tmp_path: Path) -> None:
    with running_receiver(failing_at("/fail")) as receiver:
        dev = Process(["dev", "--port", "0", "--data-dir", str(tmp_path)], {}, tmp_path / "dev.log")
        try:
            # The URL as the banner prints it, base path included.
            api = dev.wait_for_output(r"API on (http://127\.0\.0\.1:\d+\S*)").group(1)
            assert api.endswith("/scheduler-service/v1")
            with SchedulerClient(api) as client:
                exercise(client, receiver)
        finally:
            assert dev.terminate() == 0, dev.output()[-3000:]


def test_the_client_against_the_four_components_with_api_keys(
    tmp_path: Path, component_backends: ComponentBackends
) -> None:
    env = {
        **component_backends.env,
        "SCHEDULER_API_AUTH": "keys",
        "SCHEDULER_API_KEYS": "acme:sk_test_acme_0123456789,globex:sk_test_globex_0123456789",
    }
    with (
        running_receiver(failing_at("/fail")) as receiver,
        running_components(tmp_path, env) as base,
    ):
        with pytest.raises(Unauthorized) as refused:
            list(SchedulerClient(base, "sk_nobody").list())
        assert refused.value.status == 401
        with SchedulerClient(base, "sk_test_acme_0123456789") as acme:
            exercise(acme, receiver)
            kept = acme.create(hourly("kept", receiver))["id"]
            eventually(lambda: acme.get(kept))
        with SchedulerClient(base, "sk_test_globex_0123456789") as globex:
            assert list(globex.list()) == []
            assert list(globex.dead_letters()) == []
            with pytest.raises(NotFound):
                globex.get(kept)
