"""The checks a definition passes before it is accepted, and a preview of a timing's times.

The domain's checks (``shared.validation``, ``shared.ssrf``, each payload kind's ``problems``)
with this deployment's settings: the minimum interval, the networks a target may be in, where
AWS targets are sent, the deliveries a message gets. Each
names the field it refuses by its canonical name (``schedule.cron``, ``payload.url``); the
routes name it as the body did (``scheduler_service.requests.schedule.as_sent``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shared.calendars import BusinessCalendar, CalendarRule
from shared.describe import describe
from shared.errors import InvalidInput
from shared.model import FailureHook, Payload, RetryPolicy, Timing
from shared.ports import CalendarStore, Clock
from shared.recurrence import SEARCH_HORIZON, Bounded, OneTime, TooMuchWork, cpu_budget, instant_in
from shared.settings import Settings
from shared.ssrf import TargetPolicy, TargetRefused
from shared.targets.rules import TargetRules
from shared.targets.sns import TopicPayload
from shared.targets.sqs import QueuePayload
from shared.timeutil import iso_z, load_zone
from shared.validation import check_timing


@dataclass(frozen=True)
class Preview:
    """A timing's times (in its timezone) and what it says in English."""

    times: list[datetime]
    timezone: str
    description: str


class DefinitionChecks:
    def __init__(self, settings: Settings, clock: Clock, calendars: CalendarStore) -> None:
        """``calendars``: the tenant's calendars a schedule's ``calendar`` names, read fresh at
        every check (a name that is not there is refused)."""
        self.settings = settings
        self.clock = clock
        self.calendars = calendars
        self.targets = TargetPolicy(settings.allowed_networks)
        self.rules = TargetRules(
            self.targets,
            own_aws_endpoint=bool(settings.target_aws_endpoint_url),
            own_queue_names=settings.own_queue_names,
        )

    def check(
        self,
        timing: Timing,
        now: datetime,
        schedule_id: str | None = None,
        calendar: BusinessCalendar | None = None,
    ) -> Bounded:
        """The recurrence of a parsed timing on the business days of ``calendar`` (if given),
        its domain checks passed (``shared.validation``); a cron line's ``H`` spreads by
        ``schedule_id``."""
        return check_timing(
            timing,
            now,
            timedelta(seconds=self.settings.min_interval_seconds),
            schedule_id=schedule_id,
            calendar=calendar,
        )

    def business_calendar(self, tenant: str, rule: CalendarRule | None) -> BusinessCalendar | None:
        """The calendars ``rule`` names, read from the tenant's; ``InvalidInput`` naming
        ``calendar.exclude.<i>`` (its place in the body: a rule names each calendar once) for
        each the tenant has none of (another tenant's included)."""
        if rule is None:
            return None
        found = self.calendars.get_calendars(tenant, rule.exclude)
        missing = {
            f"calendar.exclude.{index}": f"no calendar {name!r}: make it with POST /calendars"
            for index, name in enumerate(rule.exclude)
            if name not in found
        }
        if missing:
            raise InvalidInput(missing)
        return BusinessCalendar.of(rule, found.values())

    def check_retry(self, retry: RetryPolicy) -> None:
        if retry.max_attempts > self.settings.max_receives:
            # Each attempt is a delivery of the message; past max_receives the queue itself
            # dead-letters it, before the attempts run out.
            raise InvalidInput(
                {
                    "retry.max_attempts": f"at most {self.settings.max_receives} here "
                    "(SCHEDULER_MAX_RECEIVES, the deliveries a message gets)"
                }
            )

    def check_target(self, url: str, field: str = "payload.url") -> None:
        """The SSRF guard at creation: the URL's host as written (``shared.ssrf``)."""
        try:
            self.targets.check_url(url)
        except TargetRefused as exc:
            raise InvalidInput({field: f"refused target: {exc}"}) from None
        except ValueError as exc:
            raise InvalidInput({field: str(exc)}) from None

    def domain_errors(
        self,
        parts: Mapping[str, Any],
        now: datetime,
        schedule_id: str | None = None,
        tenant: str | None = None,
    ) -> dict[str, list[str]]:
        """The domain checks of a body's parts that were read (``schedule`` as a ``Timing``,
        ``payload``, ``retry``), every bad field named (by its canonical name): so a body with
        a bad field elsewhere still learns that its cron line is bad, in the same answer. A
        one-time schedule's time that has passed is one, unless ``parts["fire_if_past"]``."""
        recurrence, errors = self.domain_checks(parts, now, schedule_id, tenant)
        if recurrence is not None and not parts.get("fire_if_past"):
            for name, message in self.passed(parts["schedule"], recurrence, now).items():
                errors[name] = [message]
        return errors

    def domain_checks(
        self,
        parts: Mapping[str, Any],
        now: datetime,
        schedule_id: str | None,
        tenant: str | None = None,
    ) -> tuple[Bounded | None, dict[str, list[str]]]:
        """``domain_errors``, and the recurrence of a ``schedule`` that passed its checks (on
        the business days of its ``calendar``, the tenant's calendars it names)."""
        recurrence: Bounded | None = None
        errors: dict[str, list[str]] = {}
        calendar: BusinessCalendar | None = None
        if isinstance(parts.get("calendar"), CalendarRule) and tenant is not None:
            try:
                calendar = self.business_calendar(tenant, parts["calendar"])
            except InvalidInput as exc:
                errors.update(exc.fields)
        # A part that was not read is absent, or left as the partial dict marshmallow read.
        if isinstance(parts.get("schedule"), Timing) and not errors:
            try:
                recurrence = self.check(parts["schedule"], now, schedule_id, calendar)
            except InvalidInput as exc:
                errors.update(exc.fields)
        checks: list[Callable[[], object]] = []
        if isinstance(parts.get("payload"), Payload | QueuePayload | TopicPayload):
            for name, message in parts["payload"].problems(self.rules).items():
                errors[name] = [message]
        if isinstance(parts.get("on_failure"), FailureHook):
            checks.append(lambda: self.check_target(parts["on_failure"].url, "on_failure.url"))
        if isinstance(parts.get("retry"), RetryPolicy):
            checks.append(lambda: self.check_retry(parts["retry"]))
        for check in checks:
            try:
                check()
            except InvalidInput as exc:
                errors.update(exc.fields)
        return recurrence, errors

    def passed(self, timing: Timing, recurrence: Bounded, now: datetime) -> dict[str, str]:
        """``schedule.at`` and why, when a one-time schedule's time passed more than the
        misfire threshold ago (it would fire at once, which a caller must ask for)."""
        if not isinstance(recurrence.inner, OneTime):
            return {}
        at = recurrence.inner.at
        if now - at <= timedelta(seconds=self.settings.misfire_threshold_seconds):
            return {}
        # at, or an EventBridge at(…) cron line.
        return {
            f"schedule.{timing.kind}": f"{iso_z(at)} has passed; to fire it once now anyway, "
            'add "fire_if_past": true to schedule'
        }

    def preview(
        self,
        timing: Timing,
        count: int,
        after: datetime | None = None,
        before: datetime | None = None,
        schedule_id: str | None = None,
        calendar: BusinessCalendar | None = None,
    ) -> Preview:
        """The first ``count`` times of the timing accepted now, or at ``after``; or, with
        ``before``, its last ``count`` times before that moment (what should have fired), oldest
        first. ``after`` and ``before`` are wall times in the timing's zone, or instants. The
        timing is checked as a create would check it, within one CPU budget with its times."""
        if after is not None and before is not None:
            raise InvalidInput({"before": "give after or before, not both"})
        zone = load_zone(timing.timezone)
        try:
            with cpu_budget():
                if before is not None:
                    moment = instant_in(before, zone)
                    # As if accepted a search horizon earlier, so that its times up to now count.
                    recurrence = self.check(timing, _search_back(moment), schedule_id, calendar)
                    times = recurrence.before(moment, count)
                else:
                    accepted_at = self.clock.now() if after is None else instant_in(after, zone)
                    recurrence = self.check(timing, accepted_at, schedule_id, calendar)
                    times = list(recurrence.upcoming(accepted_at, count))
        except TooMuchWork as exc:
            raise InvalidInput({f"schedule.{timing.kind}": str(exc)}) from None
        return Preview(times, timing.timezone, describe(timing))


def _search_back(moment: datetime) -> datetime:
    try:
        return moment - SEARCH_HORIZON
    except OverflowError:
        raise InvalidInput({"before": "too early: after the year 9"}) from None
