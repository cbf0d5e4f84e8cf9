"""The ``on_failure`` hook is sealed with the payload wherever a definition is written down
(the store, queue 1), opens back whole, and is masked in answers; a payload sent back masked
keeps all its other fields."""

from __future__ import annotations

import pytest

from shared.definition_codec import DefinitionCodec
from shared.errors import InvalidInput
from shared.model import Every, FailureHook, Payload, ScheduleDefinition, Timing, Unit
from shared.redaction import MASK
from shared.secrets import (
    SecretBox,
    keep_masked_hook,
    keep_masked_secrets,
    masked_hook,
    masked_payload,
    new_secret_key,
)

HOOK = FailureHook("https://alerts.example.com/x?token=abc123", {"Authorization": "Bearer k"})


def definition(hook: FailureHook | None) -> ScheduleDefinition:
    return ScheduleDefinition(
        timing=Timing(timezone="UTC", interval=Every(1, Unit.HOUR)),
        payload=Payload("POST", "https://hooks.example.com/run"),
        on_failure=hook,
    )


def test_the_hook_is_sealed_and_opens_back_whole() -> None:
    codec = DefinitionCodec(SecretBox([new_secret_key()]))
    text = codec.encode(definition(HOOK))
    assert "alerts.example.com" not in text and "Bearer k" not in text
    assert codec.decode(text).on_failure == HOOK
    assert codec.decode(codec.encode(definition(None))).on_failure is None


def test_an_answer_masks_the_hook_and_a_replace_may_send_the_mask_back() -> None:
    shown = masked_hook(HOOK, ["authorization", "*token*"])
    assert shown == {
        "url": f"https://alerts.example.com/x?token={MASK}",
        "headers": {"Authorization": MASK},
    }
    assert shown is not None
    sent_back = FailureHook.from_document(shown)
    assert keep_masked_hook(sent_back, HOOK, ["authorization", "*token*"]) == HOOK
    with pytest.raises(InvalidInput) as refused:
        keep_masked_hook(sent_back, None, ["authorization", "*token*"])
    assert list(refused.value.fields) == ["on_failure"]


def test_a_payload_sent_back_masked_keeps_its_calls_per_host() -> None:
    stored = Payload(
        "POST", "https://hooks.example.com/run", {"Authorization": "Bearer k"}, calls_per_host=4
    )
    sent_back = Payload.from_document(masked_payload(stored, ["authorization"]))
    assert keep_masked_secrets(sent_back, stored, ["authorization"]) == stored
