"""The kinds of delivery target, one module each, registered once in ``KINDS``.

A schedule's ``payload`` is one of them, told apart by its ``kind`` (``http`` when absent: every
payload stored before there were kinds). Each kind is a frozen dataclass with the same
members: ``kind`` and ``sealed_fields`` (what ``shared.secrets`` seals at rest),
``body``, ``timeout_seconds``, ``calls_per_host``, ``templated``, ``location`` (what the
store keeps the host of, for search), ``problems(rules)`` (the domain's checks, by field),
``to_document`` and ``from_document``. The executor delivers each through the adapter its
kind names (``shared.adapters.targets``).

Adding a kind: its module here and its line in ``KINDS``; its adapter in ``shared/adapters/``
and its line in ``shared.adapters.targets.ADAPTERS``; its request schema in the API.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from shared.jsonvalues import JSON
from shared.targets.http import HTTP, Payload
from shared.targets.sns import SNS, TopicPayload
from shared.targets.sqs import SQS, QueuePayload

DeliveryPayload = Payload | QueuePayload | TopicPayload

KINDS: dict[str, Callable[[Mapping[str, JSON]], DeliveryPayload]] = {
    HTTP: Payload.from_document,
    SQS: QueuePayload.from_document,
    SNS: TopicPayload.from_document,
}


def payload_from_document(document: Mapping[str, JSON]) -> DeliveryPayload:
    """The payload a stored document describes (``http`` when it names no kind)."""
    return KINDS[document.get("kind", HTTP)](document)


def payload_body(payload: DeliveryPayload) -> dict[str, JSON]:
    """The payload as a request body gives it (what the API shows, masked, and a ``PATCH``
    merges onto): its document without what the service works out itself."""
    document = payload.to_document()
    document.pop("templated", None)
    return document


def summary(document: Mapping[str, JSON]) -> str:
    """A payload document (an answer's: secrets masked) in a few words, for a list or a
    table: ``POST example.com/hook``, ``SQS orders.fifo``, ``SNS alerts``."""
    kind = document.get("kind", HTTP)
    if kind == SQS:
        return f"SQS {str(document.get('queue_url', '')).rstrip('/').rpartition('/')[2]}"
    if kind == SNS:
        return f"SNS {str(document.get('topic_arn', '')).rpartition(':')[2]}"
    url = str(document.get("url", "")).split("://", 1)[-1]
    return f"{document.get('method', '')} {url}"
