"""Answers kept for an ``Idempotency-Key`` (``IdempotencyStore``), as text, by the requests that
answer a repeat with what they first answered: a bulk operation's part, a signing-secret
rotation. (A create keeps its schedule's id and revision instead, before it enqueues:
``creating``.)

A request claims its key before it works, as a create does before it enqueues: it saves the
key's record without an answer (one atomic save: of concurrent requests with the key, exactly
one wins), works, then gives the record its answer. A repeat with the key and the same request
(method, path, body: its fingerprint) gets the kept answer, and does nothing again; while the
first still works, ``IdempotencyInProgress`` (409 with ``Retry-After``: nothing is done twice,
and no API thread waits on another); with another request it is ``IdempotencyConflict`` (409).
A claim whose work fails is forgotten, for a repeat to try again; one whose process died
expires after ``CLAIM_TTL``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_service.service.creating import IdempotencyConflict, IdempotentRequest
from shared.ports import IdempotencyRecord, IdempotencyStore

# How long a claim holds its key without an answer: far longer than the work of a request (a
# bulk part stops after ``bulk.TIME_BUDGET``, 2 s), so that only a claim whose process died
# lets a repeat work again.
CLAIM_TTL = timedelta(seconds=60)
# The seconds a repeat that came while the first was working is told to wait (``Retry-After``).
RETRY_AFTER_SECONDS = 1


class IdempotencyInProgress(IdempotencyConflict):
    """A repeat of an ``Idempotency-Key`` whose first request is still working: the API answers
    409 with ``Retry-After``; repeated then, it gets the first's answer."""


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
        it), or ``work``'s, done now (once the key is claimed) and kept."""
        recorded = self.store.get_idempotency_record(tenant, key, now)
        if recorded is not None:
            return _again(recorded, request)
        claim = IdempotencyRecord(
            tenant=tenant,
            key=key,
            fingerprint=request.fingerprint,
            schedule_id="",
            revision=0,
            next_schedule_time=None,
            timezone="",
            created_at=now,
            expires_at=now + CLAIM_TTL,
        )
        in_force, claimed = self.store.save_idempotency_record(claim, now)
        if not claimed:
            return _again(in_force, request)
        try:
            text = work()
        except BaseException:
            # Nothing to answer again: a repeat must be free to try. If even this fails, the
            # claim expires.
            with contextlib.suppress(Exception):
                self.store.delete_idempotency_record(tenant, key, request.fingerprint)
            raise
        # Kept for the TTL from when the request came, as a create's record is. If the claim
        # expired meanwhile (a process stalled past CLAIM_TTL), the answer is still this one.
        self.store.keep_idempotency_answer(tenant, key, request.fingerprint, text, now + self.ttl)
        return KeptAnswer(text, replayed=False)


def _again(record: IdempotencyRecord, request: IdempotentRequest) -> KeptAnswer:
    if record.fingerprint != request.fingerprint:
        raise IdempotencyConflict(
            f"Idempotency-Key {request.key!r} was used with another request; "
            "use a new key for a new request"
        )
    if record.answer is None:
        raise IdempotencyInProgress(
            f"Idempotency-Key {request.key!r}: the first request with this key is still being "
            f"worked on; repeat it after {RETRY_AFTER_SECONDS} s for its answer"
        )
    return KeptAnswer(record.answer, replayed=True)
