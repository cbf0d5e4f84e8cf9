"""The poller's alerts (a schedule's ``alert``): ``occurrence.late`` for occurrences that have
not started ``late_after_seconds`` after their time, found from the store (``shared.lateness``)
so that they are told of when every executor is stopped or frozen; ``occurrence.missed`` for
those the misfire policy drops when the poller plans them.

They go to the schedule's ``on_failure`` hook, signed with its tenant's secrets, as the
executor's failure notifications do: the same ``Notifier`` (``shared.notifying``), here on an
event loop of its own (``AlertSender``), best effort and never retried, counted and logged as the
executor's are (``NotificationReports``). Each is told once: a late one by the checker
whose move of the schedule's cursor applied, a missed one by the poller whose skip made its
record.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from datetime import datetime

from shared.calendar_reads import schedules_calendars
from shared.lateness import LATE, late_walk
from shared.notifying import (
    NOTIFY_TIMEOUT_SECONDS,
    FailureEvent,
    NotificationReports,
    Notifier,
    alert_event,
)
from shared.ports import Clock, Store, WebhookSender
from shared.recurrence import TooMuchWork
from shared.tenant_signers import TenantSigners

log = logging.getLogger(__name__)

# The most schedules one check looks at; more wait for the next check.
LATE_BATCH = 100


class AlertSender:
    """Sends alerts from the poller's thread: signs them with the tenants' secrets (read
    from the store first, in the caller's thread) and sends them on an event loop of its own,
    never waiting for them."""

    def __init__(self, sender: WebhookSender, signers: TenantSigners, clock: Clock) -> None:
        self.sender = sender
        self.signers = signers
        self.notifier = Notifier(sender, signers.signer, clock, observer=NotificationReports())
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def send(self, events: Sequence[FailureEvent]) -> None:
        if not events:
            return
        self.signers.refresh({event.tenant for event in events})
        self._running()
        self.notifier.notify(events)

    def _running(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            self.notifier.attach(loop)
            self._thread = threading.Thread(target=loop.run_forever, name="alerts", daemon=True)
            self._thread.start()
            self._loop = loop
        return self._loop

    def close(self) -> None:
        """Give the alerts in flight a few seconds, then stop the loop."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def finish() -> None:
            await self.notifier.wait(NOTIFY_TIMEOUT_SECONDS)
            await self.sender.close()

        try:
            asyncio.run_coroutine_threadsafe(finish(), loop).result(NOTIFY_TIMEOUT_SECONDS + 1)
        except Exception:
            # Best effort, as every alert: the stop goes on.
            log.warning("alerts in flight not finished at stop", extra={"event": "alerts_stop"})
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()
        self._loop = self._thread = None


class LateChecks:
    """Finds the occurrences not started ``late_after_seconds`` after their time and tells
    of each once (see the module docstring)."""

    def __init__(self, store: Store, alerts: AlertSender) -> None:
        self.store = store
        self.alerts = alerts

    def check(self, now: datetime) -> int:
        """One check of the schedules due to be checked by ``now``; how many were late."""
        events: list[FailureEvent] = []
        schedules = self.store.late_schedules(now, LATE_BATCH)
        # The calendars they name, as they are now: one read per tenant.
        calendars = schedules_calendars(self.store, schedules)
        for schedule in schedules:
            try:
                walk = late_walk(
                    schedule, now, calendars.get((schedule.tenant, schedule.schedule_id))
                )
            except (TooMuchWork, ValueError) as exc:
                log.warning(
                    "lateness of schedule %s not checked: %s",
                    schedule.schedule_id,
                    exc,
                    extra={"event": "late_check_failed", "tenant": schedule.tenant},
                )
                continue
            recorded = self.store.recorded_occurrences(
                schedule.tenant, schedule.schedule_id, [item for item, _ in walk.due]
            )
            # Told only by the check whose move applies: another poller's, or a claim, may
            # come first; the schedule is then checked again.
            if not self.store.move_late_check(schedule, walk.next_check_at):
                continue
            events.extend(
                alert_event(schedule, LATE, item, moment, now)
                for item, moment in walk.due
                if item not in recorded
            )
        self.alerts.send(events)
        return len(events)
