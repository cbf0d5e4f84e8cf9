"""One exception family for the whole service.

- ``InvalidInput``: the caller's fault; the API answers 400 naming every bad field.
- ``NotFound``: an unknown (or deleted, or other tenant's) resource; the API answers 404.
- ``Transient``: a backend hiccup; the work is retried later, nothing is lost.
- ``PoisonMessage``: a queue message that can never be decoded; it is dead-lettered.
"""

from __future__ import annotations

from collections.abc import Mapping


class SchedulerError(Exception):
    """Base class of every error this service raises on purpose."""


class InvalidInput(SchedulerError, ValueError):
    """Input that can never be accepted. ``fields`` maps a dotted field path to its messages."""

    def __init__(self, fields: Mapping[str, list[str] | str]) -> None:
        self.fields: dict[str, list[str]] = {
            name: [messages] if isinstance(messages, str) else list(messages)
            for name, messages in fields.items()
        }
        summary = "; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in self.fields.items())
        super().__init__(summary)


class NotFound(SchedulerError, LookupError):
    """The resource does not exist, is deleted, or belongs to another tenant."""


class Transient(SchedulerError):
    """A temporary failure of a backend; retrying later may succeed."""


class PoisonMessage(SchedulerError):
    """A queue message that cannot be decoded; it goes to the dead-letter queue."""


class ConfigurationError(SchedulerError):
    """A setting is missing or malformed; the process refuses to start."""
