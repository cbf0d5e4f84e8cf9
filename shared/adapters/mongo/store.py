"""The production store on MongoDB (pymongo): every store port, each part in its own module.

Documents mirror the SQLite adapter's rows: collection ``schedules`` keyed
``_id = "<tenant>/<schedule_id>"``, collection ``executions`` keyed
``_id = "<tenant>/<occurrence_id>"``, ``idempotency_keys`` keyed ``_id = "<tenant>/<key>"``,
``api_keys`` keyed by the key's SHA-256, ``schedule_slots`` (quota reservations),
``signing_secrets`` keyed by the tenant, ``calendars`` keyed ``_id = "<tenant>/<name>"`` and
``changes`` keyed ``_id = "<tenant>/<schedule_id>/<seq>"``. Every instant is a BSON date
(milliseconds, UTC).

Every mutation is one guarded, atomic update: the filter states the condition under which the
change applies (a newer revision, the lease owner, a status), so concurrent workers never
read-then-write. Where an upsert's filter does not match an existing document, MongoDB tries to
insert a second document with the same ``_id`` and fails with ``DuplicateKeyError``: that is how
"exists but the guard refused" is told apart from "did not exist".

The hot paths work in batches, a constant number of commands per batch whatever its size
(``tests/integration/store/test_mongo_round_trips.py``): a claim, the advances, the executor's
version check, begin and settle. Each item of a batch keeps its own guard; which guards matched
is read back by a token that only that call writes (``claim_token``, ``advance_token``,
``begin_token``, ``finish_token``), and only when the matched count says that some did not.

No update filter uses ``$or``: where a change applies in several cases, each case is its own
guarded update (or the case is a ``$nor``, which it gets right). That is as atomic, and it keeps
the adapter right on nx-27017 (0.8.1), a wire server we test against, which applies an update
whose filter has ``$or`` to a document with another ``_id``.
"""

from __future__ import annotations

from shared.adapters.mongo.api_keys import MongoApiKeys
from shared.adapters.mongo.calendars import MongoCalendars
from shared.adapters.mongo.changes import MongoChanges
from shared.adapters.mongo.claims import MongoClaims
from shared.adapters.mongo.executions import MongoExecutions
from shared.adapters.mongo.idempotency import MongoIdempotency
from shared.adapters.mongo.quota import MongoQuota
from shared.adapters.mongo.schedules import MongoSchedules
from shared.adapters.mongo.signing_secrets import MongoSigningSecrets
from shared.ports import Store


class MongoStore(
    MongoSchedules,
    MongoClaims,
    MongoQuota,
    MongoExecutions,
    MongoIdempotency,
    MongoApiKeys,
    MongoSigningSecrets,
    MongoCalendars,
    MongoChanges,
    Store,
):
    """Every store port on one MongoDB database (``MongoBacked``: the client and the sealing)."""
