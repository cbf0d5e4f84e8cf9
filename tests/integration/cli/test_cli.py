"""The operator's command line against a served API: pages, readable values, help, and API keys
that go to the database the API reads, or nowhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_cli.main import main
from scheduler_client import InvalidRequest, SchedulerClient
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence, Schedule
from tests.support.api import ApiUnderTest, api_under_test
from tests.support.cli import run
from tests.support.harness import API
from tests.support.serving import serving

BODY: dict[str, Any] = {
    "name": "report",
    "schedule": {"cron": "0 9 * * *", "timezone": "Europe/Paris"},
    "payload": {"method": "POST", "url": "https://hooks.example.com/run"},
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ApiUnderTest, str]]:
    with api_under_test(tmp_path) as api, serving(api.app) as url:
        yield api, url


def create_daily(api: ApiUnderTest) -> Schedule:
    """Schedule ``daily`` (``BODY``) created and stored: as the store holds it."""
    assert api.client.put(f"{API}/schedule/daily", json=BODY).status_code == 202
    api.apply()
    stored = api.backends.store.get_schedule("default", "daily")
    assert stored is not None
    return stored


def test_list_says_when_more_exist_and_pages_through_them(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    for number in range(60):
        assert api.client.put(f"{API}/schedule/s{number:02d}", json=BODY).status_code == 202
    api.apply()

    code, out, err = run(capfd, "schedules", "list", "--url", url)
    assert code == 0
    assert len(out.splitlines()) == 1 + 50
    assert "50 shown; there are more" in err
    cursor = err.split("--cursor ")[1].split()[0]

    code, out, err = run(capfd, "schedules", "list", "--url", url, "--cursor", cursor)
    assert [line.split()[0] for line in out.splitlines()[1:]] == [f"s{n}" for n in range(50, 60)]
    assert err == ""

    code, out, err = run(capfd, "schedules", "list", "--url", url, "--all")
    assert (code, len(out.splitlines()), err) == (0, 1 + 60, "")


def test_list_searches_and_sorts_in_the_cli_and_the_client(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    for schedule_id, name in (
        ("a1", "Nightly report"),
        ("b2", "cleanup"),
        ("c3", "nightly export"),
    ):
        body = {**BODY, "name": name}
        assert api.client.put(f"{API}/schedule/{schedule_id}", json=body).status_code == 202
    api.apply()

    def listed(*options: str) -> list[str]:
        code, out, err = run(capfd, "schedules", "list", "--url", url, *options)
        assert code == 0, err
        return [line.split()[0] for line in out.splitlines()[1:]]

    assert listed("--search", "NIGHTLY", "--sort=-name") == ["a1", "c3"]
    assert listed("--sort=name", "--limit", "1", "--all") == ["b2", "c3", "a1"]
    with pytest.raises(SystemExit):
        run(capfd, "schedules", "list", "--url", url, "--sort", "newest")
    assert "invalid choice: 'newest'" in capfd.readouterr().err

    with SchedulerClient(url) as client:
        assert [item["id"] for item in client.list(sort="-created", limit=1)] == ["c3", "b2", "a1"]
        assert [item["id"] for item in client.list(search="cleanup")] == ["b2"]
        with pytest.raises(InvalidRequest) as refused:
            client.list_page(sort="newest")
        assert refused.value.messages_for("sort")


def test_list_shows_who_paused_a_paused_schedule(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    for schedule_id in ("held", "running"):
        assert api.client.put(f"{API}/schedule/{schedule_id}", json=BODY).status_code == 202
    api.apply()
    assert api.client.post(f"{API}/schedule/held/pause").status_code == 202
    api.apply()
    code, out, _ = run(capfd, "schedules", "list", "--url", url)
    header, *rows = out.splitlines()
    assert code == 0 and header.split()[:5] == ["ID", "NAME", "STATUS", "PAUSED", "BY"]
    assert [row.split()[:4] for row in rows] == [
        ["held", "report", "paused", "user"],
        ["running", "report", "active", "-"],
    ]


def test_get_and_history_print_readable_values(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    stored = create_daily(api)
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    assert code == 0
    assert "None" not in out
    assert any(line.split() == ["last_run_at:", "-"] for line in out.splitlines())
    [priority] = [line for line in out.splitlines() if line.startswith("priority:")]
    assert priority.split(None, 2)[1:] == [
        "5",
        "(of 0 to 9: the higher goes first when more is due than can fire at once)",
    ]

    store = api.backends.store
    now = api.clock.now()
    execution = store.begin_attempt(
        Occurrence("default", "daily", stored.revision, now), "x", now, now
    )
    assert execution is not None
    outcome = AttemptOutcome(
        ExecutionStatus.SUCCEEDED, now, answer=Answer(200), duration_ms=2.653588000043783
    )
    store.finish_attempt(execution, "x", outcome)
    code, out, _ = run(capfd, "executions", "daily", "--url", url)
    assert code == 0
    assert "2.653588" not in out
    _, row = out.splitlines()
    assert row.split()[1:4] == ["succeeded", "1", "200"]
    assert "2.7" in row.split()


def test_executions_with_an_occurrence_id_print_each_attempt(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    stored = create_daily(api)
    store = api.backends.store
    now = api.clock.now()
    occurrence = Occurrence("default", "daily", stored.revision, now)
    outcomes = [
        AttemptOutcome(
            ExecutionStatus.RETRYING,
            now,
            answer=Answer(
                status=503,
                status_line="HTTP/1.1 503 Service Unavailable",
                excerpt='{"error":\n "down for maintenance until further notice, sorry"}',
            ),
            error="HTTP 503",
        ),
        AttemptOutcome(
            ExecutionStatus.SUCCEEDED, now, answer=Answer(status=200, status_line="HTTP/1.1 200 OK")
        ),
    ]
    for outcome in outcomes:
        execution = store.begin_attempt(occurrence, "x", now, now)
        assert execution is not None
        store.finish_attempt(execution, "x", outcome)
    code, out, _ = run(capfd, "executions", "daily", occurrence.occurrence_id, "--url", url)
    assert code == 0
    header, first, second = out.splitlines()
    assert header.split()[:4] == ["#", "STARTED", "(UTC)", "STATUS"]
    assert first.split()[:1] + first.split()[2:4] == ["1", "retrying", "503"]
    assert 'HTTP/1.1 503 Service Unavailable {"error": "down' in first
    assert first.endswith("…")
    assert second.split()[:1] + second.split()[2:4] == ["2", "succeeded", "200"]
    code, out, _ = run(
        capfd, "executions", "daily", occurrence.occurrence_id, "--url", url, "--json"
    )
    assert [a["number"] for a in json.loads(out)["attempt_log"]] == [1, 2]
    code, _, err = run(capfd, "executions", "daily", "daily:soon", "--url", url)
    assert code == 1 and "occurrence_id" in err


def test_the_url_may_be_given_as_dev_prints_it_or_without_its_scheme(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    create_daily(api)
    host_port = url.removeprefix("http://")
    for given in (url, f"{url}/", f"{url}/scheduler-service/v1", host_port):
        code, out, err = run(capfd, "schedules", "list", "--url", given)
        assert (code, err) == (0, ""), given
        assert out.splitlines()[1].split()[0] == "daily"


def test_the_overlap_policy_is_set_from_the_body_file_and_shown_by_get(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api, url = served
    made = tmp_path / "schedule.json"
    made.write_text(json.dumps({**BODY, "overlap": "skip"}))
    code, _, err = run(capfd, "schedules", "create", "-f", str(made), "--id", "daily", "--url", url)
    assert code == 0, err
    api.apply()
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    assert code == 0 and ["overlap:", "skip"] in [line.split() for line in out.splitlines()]
    changes = tmp_path / "changes.json"
    changes.write_text('{"overlap": "buffer_one"}')
    assert run(capfd, "schedules", "update", "daily", "-f", str(changes), "--url", url)[0] == 0
    api.apply()
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    assert ["overlap:", "buffer_one"] in [line.split() for line in out.splitlines()]
    changes.write_text('{"overlap": "queue"}')
    code, _, err = run(capfd, "schedules", "update", "daily", "-f", str(changes), "--url", url)
    assert code == 1 and "  overlap: " in err


def test_pause_and_resume_print_one_line(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    create_daily(api)
    code, out, _ = run(capfd, "schedules", "pause", "daily", "--url", url)
    assert (code, out) == (0, "daily (report): paused by user\n")
    code, out, _ = run(capfd, "schedules", "resume", "daily", "--url", url)
    assert code == 0 and len(out.splitlines()) == 1
    assert out.startswith("daily (report): active, fires next at 20")
    code, out, _ = run(capfd, "schedules", "pause", "daily", "--url", url, "--json")
    assert json.loads(out)["status"] == "paused"


def test_pause_until_with_a_note_is_printed_and_shown_by_get(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    create_daily(api)
    until = "2099-01-02T03:04:05.000Z"
    code, out, err = run(
        capfd, "schedules", "pause", "daily", "--until", until, "--note", "freeze", "--url", url
    )
    assert (code, out) == (0, f"daily (report): paused by user until {until}: freeze\n"), err
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    lines = [line.split(maxsplit=1) for line in out.splitlines()]
    assert ["paused_until:", until] in lines and ["pause_note:", "freeze"] in lines
    assert ["pause_set_by:", "no key"] in lines
    run(capfd, "schedules", "resume", "daily", "--url", url)
    code, _, err = run(
        capfd, "schedules", "pause", "daily", "--until", "2001-01-01T00:00:00Z", "--url", url
    )
    assert code == 1 and "  until: 2001-01-01T00:00:00.000Z has passed" in err


def test_skip_the_next_occurrences_or_one_and_undo(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    create_daily(api)
    code, out, err = run(capfd, "schedules", "skip", "daily", "--count", "2", "--url", url)
    assert code == 0, err
    first, second = out.strip().split(": skips 2: ")[1].split(", ")
    assert out.startswith("daily (report): skips 2: ")
    code, out, _ = run(capfd, "schedules", "unskip", "daily", "--at", first, "--url", url)
    assert out == f"daily (report): skips 1: {second}\n"
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    assert ["skips:", f'["{second}"]'] in [line.split(maxsplit=1) for line in out.splitlines()]
    code, out, _ = run(capfd, "schedules", "unskip", "daily", "--url", url)
    assert out == "daily (report): skips nothing\n"
    half_past = second.replace(":00:00.000Z", ":30:00.000Z")
    code, _, err = run(capfd, "schedules", "skip", "daily", "--at", half_past, "--url", url)
    assert code == 1 and "  at: " in err and "not an occurrence" in err


def test_a_body_file_that_is_not_json_or_not_there_is_named(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api, url = served
    broken = tmp_path / "broken.json"
    broken.write_text('{"name": "x",\n "schedule": }')
    for action in (["create"], ["update", "daily"]):
        code, _, err = run(capfd, "schedules", *action, "-f", str(broken), "--url", url)
        assert code == 1
        assert err.startswith(f"scheduler: {broken}: not JSON: Expecting value at line 2"), err
        missing = tmp_path / "missing.json"
        code, _, err = run(capfd, "schedules", *action, "-f", str(missing), "--url", url)
        assert (code, err) == (1, f"scheduler: {missing}: No such file or directory\n")
    assert api.queued() == 0


def test_history_by_status(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str]
) -> None:
    api, url = served
    create_daily(api)
    store = api.backends.store
    now = api.clock.now()
    store.record_skips([(Occurrence("default", "daily", 1, now), "schedule paused")], now)
    code, out, _ = run(capfd, "executions", "daily", "--url", url, "--status", "skipped")
    assert code == 0 and out.splitlines()[1].split()[1] == "skipped"
    code, out, _ = run(capfd, "executions", "daily", "--url", url, "--status", "failed")
    assert (code, out.splitlines()[1:]) == (0, [])


def test_the_top_level_help_lists_every_command_in_plain_text(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capfd.readouterr().out
    assert "``" not in text
    for command in ("dev", "api", "processor", "poller", "executor", "schedules", "keys"):
        assert f"\n    {command} " in text


def test_dev_help_says_what_it_runs_and_shows_every_default(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as shown:
        main(["dev", "--help"])
    assert shown.value.code == 0
    text = " ".join(capfd.readouterr().out.split())
    for words in ("the API", "the processor, the poller and the executor", "SQLite", "Ctrl-C"):
        assert words in text, words
    for default in ("(default: 127.0.0.1)", "(default: 8080)", "(default: scheduler-data)"):
        assert default in text, default
    assert "0700" in text


def test_keys_outside_the_data_folder_refuse_and_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SCHEDULER_STORE_URL", raising=False)
    monkeypatch.delenv("SCHEDULER_QUEUE_URL", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run(capfd, "keys", "create", "acme")
    assert code == 2 and "key:" not in out
    assert "no database at" in err and "--data-dir" in err
    assert list(elsewhere.iterdir()) == []


def test_keys_find_the_database_of_scheduler_dev(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SCHEDULER_STORE_URL", raising=False)
    monkeypatch.delenv("SCHEDULER_QUEUE_URL", raising=False)
    data = tmp_path / "scheduler-data"
    data.mkdir()
    with api_under_test(data) as api:
        monkeypatch.chdir(tmp_path)
        code, out, _ = run(capfd, "keys", "create", "acme")
        assert code == 0 and out.startswith("key: ")
        monkeypatch.chdir(tmp_path.parent)
        code, _, _ = run(capfd, "keys", "create", "other", "--data-dir", str(data))
        assert code == 0
        tenants = sorted(key.tenant for key in api.backends.store.list_api_keys(None))
        assert tenants == ["acme", "other"]


def test_a_key_created_with_a_role_reads_and_is_refused_what_needs_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SCHEDULER_STORE_URL", raising=False)
    monkeypatch.delenv("SCHEDULER_QUEUE_URL", raising=False)
    monkeypatch.delenv("SCHEDULER_API_KEY", raising=False)
    data = tmp_path / "scheduler-data"
    data.mkdir()
    with api_under_test(data, api_auth="keys") as api, serving(api.app) as url:
        monkeypatch.chdir(tmp_path)
        code, out, _ = run(capfd, "keys", "create", "default", "--role", "read", "--name", "dash")
        assert code == 0 and "role: read" in out
        key = out.split("key: ")[1].split()[0]
        code, listed, _ = run(capfd, "keys", "list")
        assert code == 0 and " default  read " in listed
        code, out, err = run(capfd, "schedules", "list", "--url", url, "--api-key", key)
        assert code == 0, err
        code, out, err = run(capfd, "schedules", "pause", "daily", "--url", url, "--api-key", key)
        assert code == 1 and out == ""
        assert err.strip() == (
            "403 Forbidden: this needs a key with role write or admin; this key's role is read"
        )
        with pytest.raises(SystemExit) as refused:
            run(capfd, "keys", "create", "default", "--role", "owner")
        assert refused.value.code == 2 and "invalid choice: 'owner'" in capfd.readouterr().err


def test_every_kind_of_target_through_the_client_and_the_cli(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each kind created from a file by the CLI, listed with its target, and read back typed
    by the client (the OAuth client secret masked)."""
    api, url = served
    payloads: dict[str, dict[str, Any]] = {
        "call": {
            "method": "POST",
            "url": "https://hooks.example.com/run?at={{ occurrence.scheduled_time }}",
            "auth": {
                "type": "oauth2_client_credentials",
                "token_url": "https://auth.example.com/token",
                "client_id": "me",
                "client_secret": "cli-s3cret",
            },
            "expect": {"status": [200], "body_contains": "ok"},
        },
        "orders": {
            "kind": "sqs",
            "queue_url": "https://sqs.eu-west-1.amazonaws.com/123456789012/orders.fifo",
            "body": {"run": "{{ occurrence.id }}"},
        },
        "alerts": {"kind": "sns", "topic_arn": "arn:aws:sns:eu-west-1:123456789012:alerts"},
    }
    for schedule_id, payload in payloads.items():
        body = tmp_path / f"{schedule_id}.json"
        body.write_text(json.dumps({**BODY, "payload": payload}))
        code, _, err = run(
            capfd, "schedules", "create", "--id", schedule_id, "-f", str(body), "--url", url
        )
        assert code == 0, err
    api.apply()
    code, out, _ = run(capfd, "schedules", "list", "--url", url)
    assert code == 0 and out.splitlines()[0].split()[-1] == "TARGET"
    targets = {line.split()[0]: line.split("  ")[-1].strip() for line in out.splitlines()[1:]}
    assert targets == {
        "alerts": "SNS alerts",
        "call": "POST hooks.example.com/run?at={{ occurrence.scheduled_time }}",
        "orders": "SQS orders.fifo",
    }
    with SchedulerClient(url) as client:
        kinds = {item["id"]: item["payload"]["kind"] for item in client.list()}
        assert kinds == {"alerts": "sns", "call": "http", "orders": "sqs"}
        call = client.get("call")["payload"]
        assert call["kind"] == "http" and "auth" in call
        assert call["auth"]["client_id"] == "me" and call["auth"]["client_secret"] != "cli-s3cret"
        assert call.get("expect") == {"status": [200], "body_contains": "ok"}
        orders = client.get("orders")["payload"]
        assert orders["kind"] == "sqs" and orders["queue_url"].endswith("/orders.fifo")
    code, out, _ = run(capfd, "schedules", "get", "call", "--url", url)
    assert code == 0 and "cli-s3cret" not in out and '"kind": "http"' in out


def test_an_alert_is_set_from_the_body_file_and_shown_by_get(
    served: tuple[ApiUnderTest, str], capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    api, url = served
    made = tmp_path / "schedule.json"
    hook = {"on_failure": "https://alerts.example.com/in"}
    made.write_text(json.dumps({**BODY, **hook, "alert": {"late_after_seconds": 90}}))
    code, _, err = run(capfd, "schedules", "create", "-f", str(made), "--id", "daily", "--url", url)
    assert code == 0, err
    api.apply()
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    lines = [line.split(None, 1) for line in out.splitlines()]
    assert code == 0 and ["alert:", '{"late_after_seconds": 90}'] in lines
    changes = tmp_path / "changes.json"
    changes.write_text('{"alert": {"late_after_seconds": 0}}')
    code, _, err = run(capfd, "schedules", "update", "daily", "-f", str(changes), "--url", url)
    assert code == 1 and "  alert.late_after_seconds: " in err
    changes.write_text('{"alert": null}')
    assert run(capfd, "schedules", "update", "daily", "-f", str(changes), "--url", url)[0] == 0
    api.apply()
    code, out, _ = run(capfd, "schedules", "get", "daily", "--url", url)
    assert ["alert:", "-"] in [line.split() for line in out.splitlines()]


def test_create_and_update_continue_the_trace_of_traceparent_in_the_environment(
    served: tuple[ApiUnderTest, str],
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenTelemetry's carriers for processes: a script run inside a trace passes TRACEPARENT
    (and TRACESTATE) to the commands it runs; the schedule's calls continue that trace."""
    api, url = served
    body = tmp_path / "body.json"
    body.write_text(json.dumps(BODY))
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    monkeypatch.setenv("TRACEPARENT", f"00-{trace_id}-00f067aa0ba902b7-01")
    monkeypatch.setenv("TRACESTATE", "congo=t61")
    code, _, err = run(
        capfd, "schedules", "create", "--id", "traced", "-f", str(body), "--url", url
    )
    assert (code, err) == (0, "")
    api.apply()
    assert api.client.get(f"{API}/schedule/traced").get_json()["trace_id"] == trace_id
    stored = api.backends.store.get_schedule("default", "traced")
    assert stored is not None and stored.definition is not None
    assert stored.definition.trace is not None and stored.definition.trace.state == "congo=t61"

    monkeypatch.delenv("TRACEPARENT")
    code, _, err = run(capfd, "schedules", "update", "traced", "-f", str(body), "--url", url)
    assert (code, err) == (0, "")
    api.apply()
    assert api.client.get(f"{API}/schedule/traced").get_json()["trace_id"] not in (None, trace_id)
