"""The embedded store on SQLite (``scheduler dev``, tests, benchmarks): every store port, each
part in its own module, over one database file."""

from __future__ import annotations

from shared.adapters.sqlite.api_keys import SqliteApiKeys
from shared.adapters.sqlite.calendars import SqliteCalendars
from shared.adapters.sqlite.changes import SqliteChanges
from shared.adapters.sqlite.executions import SqliteExecutions
from shared.adapters.sqlite.idempotency import SqliteIdempotency
from shared.adapters.sqlite.quota import SqliteQuota
from shared.adapters.sqlite.schedules import SqliteSchedules
from shared.adapters.sqlite.signing_secrets import SqliteSigningSecrets
from shared.ports import Store


class SqliteStore(
    SqliteSchedules,
    SqliteQuota,
    SqliteExecutions,
    SqliteIdempotency,
    SqliteApiKeys,
    SqliteSigningSecrets,
    SqliteCalendars,
    SqliteChanges,
    Store,
):
    """Every store port on one SQLite file (``SqliteBacked``: the file and the sealing)."""
