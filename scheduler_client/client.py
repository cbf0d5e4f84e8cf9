"""``SchedulerClient``: every call of the API, over one urllib3 connection pool.

Retries: a request that never reached the server (connection refused or reset before it was
sent) is retried whatever the call. A call whose repeat cannot do anything twice is also retried
after a timeout, a reset mid-answer, a 429, 502, 503 or 504, with exponential backoff that
honours ``Retry-After``: reads, ``replace`` (a PUT), ``update`` (a PATCH), ``pause``,
``resume``, ``preview``, ``backfill``, and ``create`` and ``rotate_signing_secret``, which
send an ``Idempotency-Key`` so that a repeat answers the same schedule or secret.
``bulk`` sends one ``Idempotency-Key`` with each of its parts, so a retried part answers as it
first did. A call with an ``Idempotency-Key`` is also repeated after a 409 with
``Retry-After`` (the first request with its key still at work), to get that one's answer.
``trigger`` (each call is one more run), ``delete``, ``replay`` and ``discard`` (a repeat of
one that was applied answers 404), ``create_calendar`` and ``delete_calendar`` are never
repeated once sent; ``replace_calendar`` (a PUT) is.
"""

from __future__ import annotations

from scheduler_client._bulk import BULK_IDS, Bulk
from scheduler_client._calendars import Calendars
from scheduler_client._dead_letters import DeadLetters
from scheduler_client._schedules import Schedules
from scheduler_client._signing_secrets import SigningSecrets
from scheduler_client._transport import API_PREFIX, RETRY_STATUSES, api_base

__all__ = ["API_PREFIX", "BULK_IDS", "RETRY_STATUSES", "SchedulerClient", "api_base"]


class SchedulerClient(Schedules, Bulk, DeadLetters, SigningSecrets, Calendars):
    """A client of one scheduler API.

    ``base_url`` is where the API listens (``http://127.0.0.1:8080``; the API's base path, as
    ``scheduler dev`` prints it, and a missing ``http://`` are fine too); ``api_key`` is sent as
    ``X-API-Key`` (``None`` for ``scheduler dev``, which needs none). ``timeout`` bounds
    connecting and then each read, in seconds; ``retries`` is how many times a call may be
    repeated (see the module's docstring for which), ``backoff_seconds`` the first pause.
    """
