"""The API's application layer: what each endpoint does, without HTTP.

One object per concern, over the same backends (every operation in one place, named by what it
does, as procrastinate's manager holds them):

- ``checks`` (``DefinitionChecks``): the domain checks a definition passes, and previews;
- ``creation`` (``Creation``): creates and replaces through queue 1, with idempotency and the
  tenant's quota;
- ``changes`` (``StateChanges``): pause, resume and delete, applied to the store at once;
- ``bulk`` (``Bulk``): pause, resume, delete or patch every schedule a selector matches, a page
  at a time, through ``changes`` and ``creation``;
- ``runs`` (``ManualRuns``): trigger, backfill, and a dead letter's replay or discard, straight
  onto queue 2;
- ``reads`` (``Reads``): schedules, histories, change histories and dead letters as stored;
- ``recorder`` (``ChangeRecorder``): every change to a schedule, recorded in its change history
  (``recording``'s docstring says how to record one);
- ``signing`` (``shared.signing.SigningSecrets``): the tenant's signing secrets, rotated;
- ``kept_answers`` (``KeptAnswers``): what a bulk part or a rotation answered an
  ``Idempotency-Key``, answered again to a repeat;
- ``calendars`` (``Calendars``): the tenant's business calendars.

Every operation takes the caller's tenant: a schedule of another tenant is ``NotFound``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from scheduler_service.service.bulk import Bulk
from scheduler_service.service.calendars import Calendars
from scheduler_service.service.changes import StateChanges
from scheduler_service.service.checks import DefinitionChecks
from scheduler_service.service.creating import Creation
from scheduler_service.service.kept_answers import KeptAnswers
from scheduler_service.service.reading import Reads
from scheduler_service.service.recording import ChangeRecorder
from scheduler_service.service.revisions import RevisionClock
from scheduler_service.service.running import ManualRuns
from shared.ports import Clock, Queues, Store
from shared.ports.spans import NoSpans, Spans
from shared.secrets import SecretBox
from shared.settings import Settings
from shared.signing import SigningSecrets


@dataclass(eq=False)
class ScheduleService:
    """The application layer of one API process: its concerns, and what routes and pages read
    beside them (the settings, the clock, the secret box that seals the console's session)."""

    store: Store
    queues: Queues
    settings: Settings
    clock: Clock
    secret_box: SecretBox
    spans: Spans = field(default_factory=NoSpans)
    reads: Reads = field(init=False)
    checks: DefinitionChecks = field(init=False)
    recorder: ChangeRecorder = field(init=False)
    creation: Creation = field(init=False)
    changes: StateChanges = field(init=False)
    kept_answers: KeptAnswers = field(init=False)
    bulk: Bulk = field(init=False)
    runs: ManualRuns = field(init=False)
    signing: SigningSecrets = field(init=False)
    calendars: Calendars = field(init=False)

    def __post_init__(self) -> None:
        store, queues, settings, clock = self.store, self.queues, self.settings, self.clock
        # Revisions order a schedule's creates, replaces and state changes alike.
        revisions = RevisionClock()
        self.reads = Reads(store, clock)
        self.checks = DefinitionChecks(settings, clock, store)
        self.recorder = ChangeRecorder(store, clock, revisions, settings.secret_headers)
        self.creation = Creation(
            store,
            queues,
            settings,
            clock,
            self.secret_box,
            self.checks,
            revisions,
            self.recorder,
            self.spans,
        )
        self.changes = StateChanges(store, clock, revisions, self.reads, self.recorder)
        self.kept_answers = KeptAnswers(store, timedelta(seconds=settings.idempotency_ttl_seconds))
        self.bulk = Bulk(store, clock, settings, self.changes, self.creation, self.kept_answers)
        self.runs = ManualRuns(store, queues, clock, self.reads, self.recorder)
        self.signing = SigningSecrets(
            store,
            self.secret_box,
            clock,
            deployment_signs=bool(settings.webhook_secret),
            overlap=timedelta(seconds=settings.signing_overlap_seconds),
        )
        self.calendars = Calendars(store, clock)
