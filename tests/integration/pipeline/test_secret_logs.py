"""Secrets out of logs at any level, and ``scheduler reseal`` after a key rotation."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduler_cli.main import main
from shared.adapters.http_sender import HttpSender
from shared.backends import open_backends
from shared.logs import CLIENT_LOGGERS, configure_logging
from shared.model import Every, Payload, ScheduleDefinition, Timing, Unit
from shared.ports import WebhookRequest, WebhookResponse
from shared.secrets import new_secret_key
from shared.settings import Settings
from shared.ssrf import TargetPolicy
from tests.support.receiver import running_receiver


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in CLIENT_LOGGERS}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, previous in levels.items():
        logging.getLogger(name).setLevel(previous)


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_no_log_line_carries_a_secret_even_at_debug(
    restored_logging: None, capsys: pytest.CaptureFixture[str], log_format: str
) -> None:
    configure_logging(log_format, "DEBUG")
    sender = HttpSender(policy=TargetPolicy(("127.0.0.0/8",)))

    async def call(url: str) -> WebhookResponse:
        try:
            headers = {"Authorization": "Bearer header-secret-2"}
            return await sender.send(WebhookRequest("GET", url, headers, None, 5.0))
        finally:
            await sender.close()

    with running_receiver() as receiver:
        answer = asyncio.run(call(f"{receiver.url}/hook?key=query-secret-1&page=2"))
    assert answer.status == 200
    log = logging.getLogger("execution_worker")
    log.debug('calling "%s"', f"{receiver.url}/hook?token=query-secret-3")
    try:
        raise ValueError("Authorization: Bearer header-secret-4")
    except ValueError:
        log.exception("attempt failed", extra={"error": "url /x?api_key=query-secret-5"})
    written = capsys.readouterr().err
    assert "calling" in written and "attempt failed" in written
    for secret in ("query-secret-1", "header-secret-2", "query-secret-3", "header-secret-4"):
        assert secret not in written
    assert "query-secret-5" not in written
    if log_format == "json":  # masking left every line valid JSON
        assert all(json.loads(line) for line in written.splitlines() if line.startswith("{"))


def test_scheduler_reseal_reseals_the_store_its_settings_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = new_secret_key(), new_secret_key()
    url = f"sqlite:///{tmp_path / 'scheduler.db'}"
    for name, value in (("STORE_URL", url), ("QUEUE_URL", url), ("SECRET_KEYS", old)):
        monkeypatch.setenv(f"SCHEDULER_{name}", value)
    backends = open_backends(Settings.from_env())
    definition = ScheduleDefinition(
        timing=Timing(timezone="UTC", interval=Every(1, Unit.HOUR)),
        payload=Payload("POST", "https://h.example/run", headers={"X-Api-Key": "k3y-value"}),
    )
    backends.store.apply_definition(
        ("t", "s1", 1, definition, None, datetime(2026, 1, 1, tzinfo=UTC))
    )
    backends.close()
    monkeypatch.setenv("SCHEDULER_SECRET_KEYS", f"{new},{old}")
    assert main(["reseal"]) == 0
    assert "1 schedules sealed anew" in capsys.readouterr().out
    monkeypatch.setenv("SCHEDULER_SECRET_KEYS", new)
    backends = open_backends(Settings.from_env())
    try:
        stored = backends.store.get_schedule("t", "s1")
        assert stored is not None and stored.definition == definition
    finally:
        backends.close()
