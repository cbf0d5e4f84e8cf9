"""Failure notifications: a schedule's ``on_failure`` webhook, told when one of its occurrences
is dead-lettered or when it pauses itself (``pause_after_failures``); and, for a schedule with
an ``alert``, when one is late or missed (``shared.lateness``: the pollers send those, with a
``Notifier`` of their own, ``polling_worker.alerts``).

The settler finds them after the outcomes are recorded (``Settler._after_failures``) and hands
them to the ``Notifier``, which sends them on the executor's event loop through its webhook
sender (the SSRF guard at connection time, as for every call), signed as every call is
(Standard Webhooks, with the secrets of the schedule's tenant). Best effort: each is one ``POST``
with a short timeout,
at most ``NOTIFY_CONCURRENCY`` in flight, at most ``NOTIFY_BACKLOG`` waiting (more are
dropped); what becomes of each is reported to a ``NotificationObserver`` (the executor's
observer; the pollers' ``NotificationReports``): logged, and counted in
``scheduler_failure_notifications_total``. One that fails is never retried. The settler never
waits for them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from shared.adapters.http_target import SignerFor
from shared.executions import nominal_time
from shared.lateness import LATE, MISSED
from shared.metrics import FAILURE_NOTIFICATIONS, OCCURRENCE_ALERTS
from shared.model import FailureHook, Occurrence, Schedule
from shared.ports import Clock, WebhookError, WebhookRequest, WebhookSender
from shared.redaction import redact
from shared.timeutil import iso_z
from shared.webhooks import USER_AGENT, WebhookSigner

log = logging.getLogger(__name__)

NOTIFY_TIMEOUT_SECONDS = 5.0
NOTIFY_CONCURRENCY = 8
NOTIFY_BACKLOG = 1000

DEAD_LETTERED = "occurrence.dead_lettered"
PAUSED = "schedule.paused"


@dataclass(frozen=True)
class FailureEvent:
    """What a failure notification says: an occurrence dead-lettered, or the schedule paused
    by the failure of ``occurrence_id`` (its ``consecutive_failures`` in a row)."""

    type: str
    hook: FailureHook
    tenant: str
    schedule_id: str
    occurrence_id: str
    error: str | None
    http_status: int | None
    at: datetime
    consecutive_failures: int | None = None
    # Of a late or missed occurrence: its time, and the schedule's ``late_after_seconds``.
    scheduled_time: datetime | None = None
    late_after_seconds: int | None = None

    @property
    def message_id(self) -> str:
        """The ``webhook-id``: the same for every delivery of one event."""
        return f"{self.type}:{self.occurrence_id}"

    def body(self) -> str:
        document = {
            "type": self.type,
            "schedule_id": self.schedule_id,
            "occurrence_id": self.occurrence_id,
            "error": self.error,
            "http_status": self.http_status,
            "time": iso_z(self.at),
        }
        if self.consecutive_failures is not None:
            document["consecutive_failures"] = self.consecutive_failures
        if self.scheduled_time is not None:
            document["scheduled_time"] = iso_z(self.scheduled_time)
        if self.late_after_seconds is not None:
            document["late_after_seconds"] = self.late_after_seconds
        return json.dumps(document, separators=(",", ":"))


def alert_event(
    schedule: Schedule, kind: str, occurrence_id: str, scheduled_time: datetime, now: datetime
) -> FailureEvent:
    """A late or missed occurrence of ``schedule``, told at its ``on_failure`` hook."""
    definition = schedule.live_definition
    assert definition.on_failure is not None and definition.alert is not None
    after = definition.alert.late_after_seconds
    why = (
        f"not started {after} s after its time" if kind == LATE else "dropped by the misfire policy"
    )
    return FailureEvent(
        type=kind,
        hook=definition.on_failure,
        tenant=schedule.tenant,
        schedule_id=schedule.schedule_id,
        occurrence_id=occurrence_id,
        error=why,
        http_status=None,
        at=now,
        scheduled_time=scheduled_time,
        late_after_seconds=after,
    )


def missed_events(
    schedule: Schedule, dropped: Sequence[Occurrence], now: datetime
) -> list[FailureEvent]:
    """``occurrence.missed`` of each occurrence of ``schedule`` dropped, if it has an alert."""
    definition = schedule.definition
    if definition is None or definition.alert is None or definition.on_failure is None:
        return []
    return [
        alert_event(schedule, MISSED, item.occurrence_id, _nominal(item), now) for item in dropped
    ]


def _nominal(occurrence: Occurrence) -> datetime:
    """The occurrence's time before jitter (its id keeps it)."""
    return nominal_time(occurrence.occurrence_id) or occurrence.scheduled_time


def notification_request(
    event: FailureEvent, signer: WebhookSigner | None, now: datetime
) -> WebhookRequest:
    body = event.body()
    headers = dict(event.hook.headers)
    headers.update({"User-Agent": USER_AGENT, "Content-Type": "application/json"})
    if signer is not None:
        headers["webhook-id"] = event.message_id
        headers["webhook-timestamp"] = str(int(now.timestamp()))
        headers["webhook-signature"] = signer.sign(event.message_id, now, body)
    return WebhookRequest(
        method="POST",
        url=event.hook.url,
        headers=headers,
        body=body.encode(),
        timeout_seconds=NOTIFY_TIMEOUT_SECONDS,
    )


class NotificationObserver(Protocol):
    """What a ``Notifier`` reports to, from any thread: what became of each notification."""

    def notification_sent(self, event: FailureEvent) -> None: ...

    def notification_failed(self, event: FailureEvent, problem: str) -> None: ...

    def notifications_dropped(self, events: Sequence[FailureEvent], why: str) -> None: ...


class NotificationReports:
    """A ``NotificationObserver`` that counts each notification in
    ``scheduler_failure_notifications_total`` and logs it (metrics and logs: thread-safe)."""

    def notification_sent(self, event: FailureEvent) -> None:
        FAILURE_NOTIFICATIONS.labels("sent").inc()
        log.info("failure notification sent: %s", event.type, extra=_notification(event))

    def notification_failed(self, event: FailureEvent, problem: str) -> None:
        FAILURE_NOTIFICATIONS.labels("failed").inc()
        log.warning(
            "failure notification not delivered (not retried): %s",
            problem,
            extra={
                **_notification(event),
                "event": "failure_notification_failed",
                "error": problem,
            },
        )

    def notifications_dropped(self, events: Sequence[FailureEvent], why: str) -> None:
        for event in events:
            FAILURE_NOTIFICATIONS.labels("dropped").inc()
            log.warning(
                "failure notification dropped: %s",
                why,
                extra={**_notification(event), "event": "failure_notification_dropped"},
            )


def _notification(event: FailureEvent) -> dict[str, Any]:
    return {
        "event": "failure_notification_sent",
        "notification": event.type,
        "tenant": event.tenant,
        "schedule_id": event.schedule_id,
        "occurrence_id": event.occurrence_id,
    }


class Notifier:
    """Sends failure notifications on an event loop, best effort (see the module docstring)."""

    def __init__(
        self,
        sender: WebhookSender,
        signers: SignerFor,
        clock: Clock,
        concurrency: int = NOTIFY_CONCURRENCY,
        backlog: int = NOTIFY_BACKLOG,
        observer: NotificationObserver | None = None,
    ) -> None:
        self.sender = sender
        self.signers = signers
        self.clock = clock
        self.observer = observer or NotificationReports()
        self.backlog = backlog
        self._slots = asyncio.Semaphore(concurrency)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Send on ``loop`` from now on (the executor's, while it serves)."""
        self._loop = loop

    def notify(self, events: Sequence[FailureEvent]) -> None:
        """Hand events over to be sent; from any thread, never waits."""
        for event in events:
            if event.type in (LATE, MISSED):
                OCCURRENCE_ALERTS.labels(event.tenant, event.type).inc()
        loop = self._loop
        if loop is None or loop.is_closed():
            self.observer.notifications_dropped(events, "no event loop")
            return
        loop.call_soon_threadsafe(self._start, list(events))

    def _start(self, events: list[FailureEvent]) -> None:
        for event in events:
            if len(self._tasks) >= self.backlog:
                self.observer.notifications_dropped([event], "backlog full")
                continue
            task = asyncio.ensure_future(self._send(event))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, event: FailureEvent) -> None:
        async with self._slots:
            signer = self.signers(event.tenant)
            request = notification_request(event, signer, self.clock.now())
            problem: str | None = None
            try:
                response = await self.sender.send(request)
            except WebhookError as exc:
                problem = redact(str(exc))
            else:
                if not 200 <= response.status < 300:
                    problem = f"HTTP {response.status}"
        if problem is None:
            self.observer.notification_sent(event)
        else:
            self.observer.notification_failed(event, problem)

    async def wait(self, timeout: float) -> None:
        """Give the notifications in flight up to ``timeout`` seconds to finish."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
