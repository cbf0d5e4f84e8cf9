"""Calling the (async) webhook sender from a synchronous test."""

from __future__ import annotations

import asyncio

from shared.adapters.http_sender import HttpSender
from shared.ports import WebhookError, WebhookRequest, WebhookResponse


async def send_all(
    sender: HttpSender, *requests: WebhookRequest
) -> list[WebhookResponse | WebhookError]:
    """Each call in turn on one loop (so a connection can be reused), then close the sender."""
    outcomes: list[WebhookResponse | WebhookError] = []
    try:
        for request in requests:
            try:
                outcomes.append(await sender.send(request))
            except WebhookError as exc:
                outcomes.append(exc)
    finally:
        await sender.close()
    return outcomes


def send(sender: HttpSender, *requests: WebhookRequest) -> list[WebhookResponse | WebhookError]:
    """``send_all`` on a loop of its own."""
    return asyncio.run(send_all(sender, *requests))


def response_of(outcome: WebhookResponse | WebhookError) -> WebhookResponse:
    """The response, or the sender's error raised."""
    if isinstance(outcome, WebhookError):
        raise outcome
    return outcome
