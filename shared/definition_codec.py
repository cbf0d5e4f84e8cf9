"""A schedule's definition as it is written down: its document (``ScheduleDefinition``'s
``to_document``) with its secrets sealed (``shared.secrets.SecretBox``); as a document in a
queue 1 message, as JSON text in a store.

The text, not a nested document, in MongoDB too: client-chosen keys (metadata, headers, query
parameters, the raw request) may contain ``.`` or start with ``$``, which MongoDB restricts in
stored field names. Every writer and reader of a definition goes through here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from shared.model import JSON, ScheduleDefinition
from shared.schedule_listing import target_of
from shared.secrets import SecretBox


class DefinitionCodec:
    def __init__(self, secrets: SecretBox) -> None:
        self.secrets = secrets

    def to_document(self, definition: ScheduleDefinition) -> dict[str, JSON]:
        return self.secrets.seal(definition.to_document(), definition.payload.sealed_fields)

    def from_document(self, document: Mapping[str, JSON]) -> ScheduleDefinition:
        """``ConfigurationError`` when no configured key opens it."""
        return ScheduleDefinition.from_document(self.secrets.open(document))

    def encode(self, definition: ScheduleDefinition) -> str:
        return json.dumps(self.to_document(definition), separators=(",", ":"))

    def decode(self, text: str) -> ScheduleDefinition:
        return self.from_document(json.loads(text))

    def target(self, text: str) -> str:
        """What a store keeps unsealed beside the text, for search: its target's host."""
        return target_of(self.decode(text).payload.location)

    def resealed(self, text: str) -> str | None:
        """The text sealed with the first key, or ``None`` when it already is."""
        document = json.loads(text)
        if self.secrets.sealed_by_first(document):
            return None
        return json.dumps(self.to_document(self.from_document(document)), separators=(",", ":"))
