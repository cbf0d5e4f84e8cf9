"""What an occurrence carries on queue 2 to fire (``shared.messages.carry``): sealed, for its
schedule's revision only, within the message bound, and read by executors old and new."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from shared.adapters.records import SCHEDULE_STATE, definition_fields
from shared.definition_codec import DefinitionCodec
from shared.messages import (
    CARRIED_MESSAGE_BYTES,
    carry,
    decode_occurrence,
    encode_occurrence,
    open_carried,
)
from shared.model import Occurrence, Payload, ScheduleDefinition, Timing
from shared.secrets import SecretBox, new_secret_key
from shared.store_rules import DEFINITION_FIELDS
from shared.tracing import TraceContext

BOX = SecretBox([new_secret_key()])
CODEC = DefinitionCodec(BOX)
AT = datetime(2030, 1, 1, 9, tzinfo=UTC)
DEFINITION = ScheduleDefinition(
    timing=Timing(timezone="UTC", at=AT),
    payload=Payload(
        "POST",
        "https://hooks.example.com/run?token=sk_live_abcdefghijklmnopqrstuvwx",
        headers={"Authorization": "Bearer sk_live_abcdefghijklmnopqrstuvwx"},
        body={"order": 42},
    ),
    name="invoice",
    request={"payload": {"url": "https://hooks.example.com/run"}},
    trace=TraceContext.new(),
)
# As the store keeps it: the text the poller carries.
STORED = CODEC.encode(DEFINITION)


def occurrence(tenant: str = "acme", revision: int = 3) -> Occurrence:
    return Occurrence(tenant, "s1", revision, AT)


def test_an_occurrence_carries_its_definition_sealed() -> None:
    sealed = carry("acme", "s1", 3, STORED, BOX)
    body = encode_occurrence(occurrence(), sealed)
    # Nothing of the payload reads in the message.
    assert "sk_live" not in body and "hooks.example.com" not in body and "invoice" not in body
    received = decode_occurrence(body)
    opened = open_carried(received, BOX)
    assert opened is not None
    assert opened.payload == DEFINITION.payload and opened.name == "invoice"
    # The request that made it is not carried, nor its trace: no fire reads them.
    assert opened.request == {} and opened.trace is None


def test_the_stored_text_travels_as_the_store_keeps_it() -> None:
    # Opened for its revision, it is the store's text itself: the secrets still sealed inside.
    received = decode_occurrence(
        encode_occurrence(occurrence(), carry("acme", "s1", 3, STORED, BOX))
    )
    assert received.carried is not None
    inner = BOX.open_text(received.carried, json.dumps(["carried", "acme", "s1", 3]))
    assert inner == STORED and "sk_live" not in inner


def test_a_definition_carried_by_a_poller_from_before_opens() -> None:
    # The definition unsealed, without its request and trace, sealed for its revision.
    document = DEFINITION.to_document()
    del document["request"], document["trace"]
    purpose = json.dumps(["carried", "acme", "s1", 3])
    sealed = BOX.seal_text(json.dumps(document), purpose)
    opened = open_carried(decode_occurrence(encode_occurrence(occurrence(), sealed)), BOX)
    assert opened is not None and opened.payload == DEFINITION.payload


def test_it_opens_for_its_own_tenant_schedule_and_revision_only() -> None:
    sealed = carry("acme", "s1", 3, STORED, BOX)
    for other in (occurrence(tenant="globex"), occurrence(revision=4)):
        moved = decode_occurrence(encode_occurrence(other, sealed))
        assert open_carried(moved, BOX) is None
    # Nor with another key (one since dropped): the executor reads the store then.
    assert (
        open_carried(
            decode_occurrence(encode_occurrence(occurrence(), sealed)),
            SecretBox([new_secret_key()]),
        )
        is None
    )


def test_a_message_too_large_to_carry_it_goes_without() -> None:
    large = ScheduleDefinition(
        timing=DEFINITION.timing,
        payload=Payload("POST", "https://hooks.example.com/run", body={"blob": "x" * 100_000}),
    )
    body = encode_occurrence(occurrence(), carry("acme", "s1", 3, CODEC.encode(large), BOX))
    assert len(body) <= CARRIED_MESSAGE_BYTES
    received = decode_occurrence(body)
    assert received.carried is None and open_carried(received, BOX) is None
    assert received == occurrence()


def test_messages_old_and_new_are_read_by_either() -> None:
    # A message from before the definition was carried: read as it was, nothing carried.
    old = json.loads(encode_occurrence(occurrence()))
    assert "carried" not in old
    assert decode_occurrence(json.dumps(old)).carried is None
    # A new message read by an older executor: the same occurrence, the part it ignores aside.
    new = json.loads(encode_occurrence(occurrence(), carry("acme", "s1", 3, STORED, BOX)))
    assert {key: value for key, value in new.items() if key != "carried"} == old


def test_a_read_of_states_leaves_out_every_field_of_the_definition() -> None:
    stored = definition_fields(DEFINITION, DefinitionCodec(BOX))
    assert set(stored) == set(DEFINITION_FIELDS)
    assert not set(SCHEDULE_STATE) & set(stored)
