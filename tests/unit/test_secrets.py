"""What counts as a secret, and where it must not show: answers, error texts, log lines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scheduler_cli.main import main
from scheduler_service.presenting.views import execution_view
from shared.errors import ConfigurationError, PoisonMessage
from shared.messages import DefinitionMutation, decode_mutation, encode_mutation
from shared.model import (
    Answer,
    AttemptOutcome,
    Every,
    Execution,
    ExecutionStatus,
    Payload,
    ScheduleDefinition,
    Timing,
    Unit,
)
from shared.redaction import DEFAULT_SECRET_NAMES, looks_secret, redact, redact_body
from shared.secrets import SecretBox, mask_url, new_secret_key
from shared.settings import Settings

MASK = "********"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhY21lIn0.c2lnbmF0dXJlLW9mLWp3dA"


@pytest.mark.parametrize(
    "value",
    [
        "Basic fdastvhjasbc",
        "Bearer s3cr3t",
        'Digest username="a", response="6629fae49393a05397450978507c4ef1"',
        "Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
        "bearer lower-case-scheme",
        JWT,
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "AKIAIOSFODNN7EXAMPLE",
        "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",  # 40 hex digits
        "q8ZtR2vLx9NwK4pFh7YcB3mJ6sDg1QaE0uWoTi5n",  # 40 random base64 characters
    ],
)
def test_credentials_are_recognised_by_their_shape(value: str) -> None:
    assert looks_secret(value)


@pytest.mark.parametrize(
    "value",
    [
        "application/json",
        "visible-trace",
        "2026-03-08T07:30:00Z",
        "550e8400-e29b-41d4-a716-446655440000",  # an id
        "nightly-billing-report-for-the-finance-team",
        "Nightly-Billing-Report-2026-for-the-Finance-Team",
        "42",
    ],
)
def test_ordinary_values_are_shown(value: str) -> None:
    assert not looks_secret(value)


def test_urls_are_masked_in_query_values_and_token_shaped_path_segments() -> None:
    url = f"https://h.example/v1/{JWT}/run/550e8400-e29b-41d4-a716-446655440000?key=abc&page=2"
    assert mask_url(url, DEFAULT_SECRET_NAMES) == (
        f"https://h.example/v1/{MASK}/run/550e8400-e29b-41d4-a716-446655440000?key={MASK}&page=2"
    )


def test_a_log_lines_ordinary_context_is_left_alone() -> None:
    line = (
        "20:32:16.903 INFO    definition applied  [tenant=default "
        "schedule_id=2b3f951d-a549-48da-a7aa-e100e87bf361 revision=1795379536887080 "
        "next_schedule_time=2026-11-22T20:32:17.885Z occurrence_id=2b3f951d-a549-48da-a7aa-"
        "e100e87bf361:2026-11-22T20:32:18.885Z logger=execution_worker.worker]"
    )
    assert redact(line) == line


def test_free_text_is_redacted() -> None:
    text = (
        "GET /hook?key=s3cret&page=2 HTTP/1.1; Authorization: Bearer abc.DEF-123; "
        f"jwt {JWT}; mongodb+srv://user:pa55@db.example/x; invalid token received"
    )
    assert redact(text) == (
        f"GET /hook?key={MASK}&page=2 HTTP/1.1; Authorization: Bearer {MASK}; "
        f"jwt {MASK}; mongodb+srv://user:{MASK}@db.example/x; invalid token received"
    )


def test_an_execution_error_quoting_the_url_is_masked_in_the_history() -> None:
    execution = Execution(
        tenant="t",
        occurrence_id="s1:x",
        schedule_id="s1",
        scheduled_time=datetime(2026, 1, 1, tzinfo=UTC),
        status=ExecutionStatus.FAILED,
        attempts=1,
        revision=1,
        error="MaxRetryError: Max retries exceeded with url: /hook?token=s3cret-token (timeout)",
    )
    view = execution_view(execution, DEFAULT_SECRET_NAMES)
    assert (
        view["error"]
        == f"MaxRetryError: Max retries exceeded with url: /hook?token={MASK} (timeout)"
    )


def mutation() -> DefinitionMutation:
    definition = ScheduleDefinition(
        timing=Timing(timezone="UTC", interval=Every(1, Unit.HOUR)),
        payload=Payload("POST", "https://h.example/run", headers={"X-Api-Key": "k3y-value"}),
    )
    return DefinitionMutation("t", "s1", 1, datetime(2026, 1, 1, tzinfo=UTC), definition)


def test_a_queue_1_message_opens_only_with_a_configured_key() -> None:
    box = SecretBox([new_secret_key()])
    body = encode_mutation(mutation(), box)
    assert "k3y-value" not in body
    assert decode_mutation(body, box) == mutation()
    with pytest.raises(PoisonMessage, match="SCHEDULER_SECRET_KEYS"):
        decode_mutation(body, SecretBox([new_secret_key()]))


def test_keys_are_required_with_mongodb_checked_and_never_shown() -> None:
    mongo = {"store_url": "mongodb://db.example/", "queue_url": "sqs://"}
    with pytest.raises(ConfigurationError, match="SCHEDULER_SECRET_KEYS"):
        Settings.from_env({}, **mongo)
    with pytest.raises(ConfigurationError, match="SCHEDULER_SECRET_KEYS") as refused:
        Settings.from_env({"SCHEDULER_SECRET_KEYS": "not-a-key-but-a-secret"}, **mongo)
    assert "not-a-key-but-a-secret" not in str(refused.value)
    key = new_secret_key()
    settings = Settings.from_env({"SCHEDULER_SECRET_KEYS": key}, **mongo)
    assert settings.secret_keys == (key,)
    assert key not in repr(settings)


def test_scheduler_secret_key_prints_a_new_key_the_settings_accept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = []
    for _ in range(2):
        assert main(["secret-key"]) == 0
        keys.append(capsys.readouterr().out.strip())
    assert keys[0] != keys[1]
    mongo = {"store_url": "mongodb://db.example/", "queue_url": "sqs://"}
    settings = Settings.from_env({"SCHEDULER_SECRET_KEYS": ",".join(keys)}, **mongo)
    assert settings.secret_keys == tuple(keys)


def test_an_altered_sealed_payload_does_not_open() -> None:
    box = SecretBox([new_secret_key()])
    definition = mutation().definition
    document = box.seal(definition.to_document(), definition.payload.sealed_fields)
    key_id, token = document["payload"]["sealed"].split(".")
    flipped = token[:20] + ("A" if token[20] != "A" else "B") + token[21:]
    document["payload"]["sealed"] = f"{key_id}.{flipped}"
    with pytest.raises(ConfigurationError, match="altered"):
        box.open(document)


def test_sealed_text_opens_only_for_its_purpose_and_with_its_keys() -> None:
    old, new = new_secret_key(), new_secret_key()
    sealed = SecretBox([old]).seal_text("sk_live_key", "console-session")
    assert "sk_live_key" not in sealed
    assert SecretBox([new, old]).open_text(sealed, "console-session") == "sk_live_key"
    assert SecretBox([old]).open_text(sealed, "another") is None
    assert SecretBox([new]).open_text(sealed, "console-session") is None
    key_id, token = sealed.split(".")
    flipped = token[:20] + ("A" if token[20] != "A" else "B") + token[21:]
    for altered in (f"{key_id}.{flipped}", f"{key_id}.!!", "", "sk_live_key"):
        assert SecretBox([old]).open_text(altered, "console-session") is None


def test_an_attempts_error_is_recorded_redacted() -> None:
    outcome = AttemptOutcome(
        ExecutionStatus.RETRYING,
        datetime(2026, 1, 1, tzinfo=UTC),
        error="InvalidURL: https://h.example/hook?api_key=s3cret-key&page=2",
    )
    assert outcome.error == f"InvalidURL: https://h.example/hook?api_key={MASK}&page=2"


def test_the_start_of_an_answers_body_is_kept_with_its_secrets_masked() -> None:
    outcome = AttemptOutcome(
        ExecutionStatus.RETRYING,
        datetime(2026, 3, 8, tzinfo=UTC),
        answer=Answer(
            status=401,
            excerpt='{"user": "ann", "password" : "hunter2", "note": "say \\"hi\\"", "tok',
        ),
    )
    assert outcome.answer.excerpt == (
        '{"user": "ann", "password" : "********", "note": "say \\"hi\\"", "tok'
    )
    assert redact_body("client_secret=abc&user=ann") == "client_secret=********&user=ann"
    assert redact_body('{"session_id": "x"}', ["*_id"]) == '{"session_id": "********"}'
