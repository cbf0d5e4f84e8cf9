"""The Python client's transport: which calls it repeats, its timeouts, its errors.

Against a stand-in server on 127.0.0.1 that answers as each test tells it.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from scheduler_client import (
    Conflict,
    ConnectionFailed,
    SchedulerClient,
    ServiceUnavailable,
)
from tests.support.processes import free_port
from tests.support.receiver import Call, running_receiver


def unavailable(call: Call) -> tuple[int, dict[str, str]]:
    return 503, {"Retry-After": "0"}


def client_of(url: str, **options: float) -> SchedulerClient:
    return SchedulerClient(url, "sk_test", retries=2, backoff_seconds=0.01, **options)


def test_reads_and_repeatable_writes_are_retried_on_503_then_raise() -> None:
    with running_receiver(unavailable) as server:
        client = client_of(server.url)
        with pytest.raises(ServiceUnavailable) as raised:
            client.get("a")
        assert raised.value.status == 503
        assert len(server.calls) == 3
        with pytest.raises(ServiceUnavailable):
            client.pause("a")
        assert len(server.calls) == 6
        assert all(call.headers["x-api-key"] == "sk_test" for call in server.calls)


def test_trigger_and_delete_are_sent_once() -> None:
    with running_receiver(unavailable) as server:
        client = client_of(server.url)
        with pytest.raises(ServiceUnavailable):
            client.trigger("a")
        with pytest.raises(ServiceUnavailable):
            client.delete("a")
        assert [call.method for call in server.calls] == ["POST", "DELETE"]


def test_a_retried_create_repeats_its_idempotency_key() -> None:
    with running_receiver(unavailable) as server:
        client = client_of(server.url)
        with pytest.raises(ServiceUnavailable):
            client.create({"name": "x"})
        keys = {call.headers["idempotency-key"] for call in server.calls}
        assert len(server.calls) == 3 and len(keys) == 1
        with pytest.raises(ServiceUnavailable):
            client.create({"name": "x"})
        assert len({call.headers["idempotency-key"] for call in server.calls}) == 2


def test_a_retried_rotation_repeats_its_idempotency_key() -> None:
    with running_receiver(unavailable) as server:
        client = client_of(server.url)
        with pytest.raises(ServiceUnavailable):
            client.rotate_signing_secret(overlap_seconds=60)
        keys = {call.headers["idempotency-key"] for call in server.calls}
        assert len(server.calls) == 3 and len(keys) == 1
        with pytest.raises(ServiceUnavailable):
            client.rotate_signing_secret(idempotency_key="rotate-1")
        assert server.calls[-1].headers["idempotency-key"] == "rotate-1"


def test_a_409_with_retry_after_is_repeated_with_its_key_and_one_without_is_not() -> None:
    # The API answers 409 with Retry-After to a request whose Idempotency-Key a first request
    # still works on; then, repeated, the first's answer.
    answers = iter([(409, {"Retry-After": "0"}), (201, {})])
    with running_receiver(lambda call: next(answers)) as server:
        client_of(server.url).rotate_signing_secret(idempotency_key="rotate-1")
        assert [call.headers["idempotency-key"] for call in server.calls] == ["rotate-1"] * 2
    with running_receiver(lambda call: (409, {})) as server:
        with pytest.raises(Conflict):
            client_of(server.url).rotate_signing_secret(idempotency_key="rotate-1")
        assert len(server.calls) == 1


def test_every_filter_of_a_listing_is_sent_and_a_misspelt_one_is_refused_naming_it() -> None:
    def listed(call: Call) -> tuple[int, dict[str, str]]:
        return 200, {}

    def page(call: Call) -> bytes:
        return b'{"items": [], "next_cursor": null}'

    filters = {
        "status": "paused",
        "name": "nightly",
        "tag": "billing",
        "next_after": "2026-01-01T00:00:00Z",
        "next_before": "2026-02-01T00:00:00Z",
        "sort": "-next",
        "limit": 5,
    }
    with running_receiver(listed, page) as server:
        client = client_of(server.url)
        assert list(client.list(search="backup", **filters)) == []
        client.list_page(search="backup", cursor="c1", **filters)
        sent = {name: [str(value)] for name, value in filters.items()}
        assert [call.query for call in server.calls] == [
            {**sent, "q": ["backup"]},
            {**sent, "q": ["backup"], "cursor": ["c1"]},
        ]
        # Refused by the call itself (not when the iterator is first consumed), nothing sent.
        for misspelt, name in (
            (lambda: client.list(tags="billing"), "tags"),  # type: ignore[call-arg]
            (lambda: client.list_page(q="backup"), "q"),  # type: ignore[call-arg]
            (lambda: client.executions("a", state="failed"), "state"),  # type: ignore[call-arg]
        ):
            with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
                misspelt()
        assert len(server.calls) == 2


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_call_that_gets_no_answer_times_out(silent_server: str) -> None:
    client = SchedulerClient(silent_server, timeout=0.2, retries=0)
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as raised:
        client.get("a")
    assert time.monotonic() - started < 3
    assert raised.value.reason == "timed out"


def test_a_server_that_is_not_there_is_a_connection_failure() -> None:
    client = SchedulerClient(f"http://127.0.0.1:{free_port()}", retries=1, backoff_seconds=0.01)
    with pytest.raises(ConnectionFailed) as raised:
        client.trigger("a")
    assert raised.value.reason.endswith("Connection refused")


@pytest.mark.parametrize(
    "given",
    ["{url}", "{url}/", "{url}/scheduler-service/v1", "{url}/scheduler-service/v1/", "{host}"],
)
def test_the_base_url_may_carry_the_api_path_or_lack_its_scheme(given: str) -> None:
    def empty(call: Call) -> tuple[int, dict[str, str]]:
        return 200, {}

    def page(call: Call) -> bytes:
        return b'{"items": [], "next_cursor": null}'

    with running_receiver(empty, page) as receiver:
        url = given.format(url=receiver.url, host=receiver.url.removeprefix("http://"))
        assert list(client_of(url).list()) == []
        assert [call.path for call in receiver.calls] == ["/scheduler-service/v1/schedules"]


def test_the_options_of_a_call_are_sent_and_a_misspelt_one_is_refused_before_sending() -> None:
    def accepted(call: Call) -> tuple[int, dict[str, str]]:
        return 200, {}

    def answer(call: Call) -> bytes:
        return b'{"items": [], "next_cursor": null, "done": true, "dates": []}'

    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with running_receiver(accepted, answer) as server:
        client = client_of(server.url)
        client.update("a", {"name": "b"}, idempotency_key="k1", traceparent=trace)
        client.bulk_part("patch", {"tag": "t"}, patch={"name": "c"}, idempotency_key="k2")
        client.replace_calendar("days", dates=["2026-12-25"])
        list(client.executions("a", status="failed"))
        update, bulk, calendar, executions = server.calls
        assert update.headers["idempotency-key"] == "k1"
        assert update.headers["traceparent"] == trace and "tracestate" not in update.headers
        assert bulk.headers["idempotency-key"] == "k2"
        assert bulk.json() == {"action": "patch", "selector": {"tag": "t"}, "patch": {"name": "c"}}
        assert calendar.json() == {"description": "", "dates": ["2026-12-25"]}
        assert executions.query == {"status": ["failed"]}
        for misspelt in (
            lambda: client.create({"name": "x"}, idempotency_kye="k"),  # type: ignore[call-arg]
            lambda: client.bulk("pause", {"tag": "t"}, patches={}),  # type: ignore[call-arg]
            lambda: client.create_calendar("days", date=["2026-12-25"]),  # type: ignore[call-arg]
            lambda: client.executions_page("a", state="failed"),  # type: ignore[call-arg]
        ):
            with pytest.raises(TypeError, match="unexpected keyword argument"):
                misspelt()
        assert len(server.calls) == 4
