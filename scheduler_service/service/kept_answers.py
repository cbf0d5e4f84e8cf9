"""Answers kept for an ``Idempotency-Key`` (``IdempotencyStore``), as text, by the requests that
answer a repeat with what they first answered: a bulk operation's part, a signing-secret
rotation. (A create keeps its schedule's id and revision instead, before it enqueues:
``creating``.)

A repeat with the key and the same request (method, path, body: its fingerprint) gets the kept
answer, and does nothing again; with another request it is ``IdempotencyConflict`` (409). The
answer is kept once the work is done: of two repeats at once, both may do the work, and the
second answers what the first kept."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_service.service.creating import IdempotencyConflict, IdempotentRequest
from shared.ports import IdempotencyRecord, IdempotencyStore


@dataclass(frozen=True)
class KeptAnswer:
    text: str
    # Whether it answers an earlier request with the same key (``Idempotent-Replayed``).
    replayed: bool


@dataclass(frozen=True)
class KeptAnswers:
    store: IdempotencyStore
    # How long an answer is kept (``SCHEDULER_IDEMPOTENCY_TTL_SECONDS``).
    ttl: timedelta

    def answer(
        self,
        tenant: str,
        key: str,
        request: IdempotentRequest,
        now: datetime,
        work: Callable[[], str],
    ) -> KeptAnswer:
        """The answer kept for ``key`` (the record's key: ``request.key``, or one derived from
        it), or ``work``'s, done now and kept."""
        recorded = self.store.get_idempotency_record(tenant, key, now)
        if recorded is not None:
            return _again(recorded, request)
        text = work()
        record = IdempotencyRecord(
            tenant=tenant,
            key=key,
            fingerprint=request.fingerprint,
            schedule_id="",
            revision=0,
            next_schedule_time=None,
            timezone="",
            created_at=now,
            expires_at=now + self.ttl,
            answer=text,
        )
        in_force, saved = self.store.save_idempotency_record(record, now)
        return KeptAnswer(text, replayed=False) if saved else _again(in_force, request)


def _again(record: IdempotencyRecord, request: IdempotentRequest) -> KeptAnswer:
    if record.fingerprint != request.fingerprint or record.answer is None:
        raise IdempotencyConflict(
            f"Idempotency-Key {request.key!r} was used with another request; "
            "use a new key for a new request"
        )
    return KeptAnswer(record.answer, replayed=True)
