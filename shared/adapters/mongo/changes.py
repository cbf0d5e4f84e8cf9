"""The MongoDB store's change history: collection ``changes``, one document a change keyed
``_id = "<tenant>/<schedule_id>/<seq>"`` (``shared.ports.ChangeStore``). A batch is one unordered
``insert_many``: a change written again is a duplicate key, left as first written. Read newest
first by ``(tenant, schedule_id, seq)``; expired by a TTL index on ``at`` that follows the
execution retention (``shared.adapters.mongo.indexes.expire_after``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pymongo import DESCENDING
from pymongo.collection import Collection
from pymongo.errors import BulkWriteError

from shared.adapters.mongo.schedules import duplicates
from shared.adapters.mongo.transient import transient
from shared.changes import Actor, Change, ChangeAction, fields_of
from shared.formats import change_cursor, parse_change_cursor
from shared.ports import ChangeStore, Page
from shared.timeutil import utc_ms

Document = dict[str, Any]


class MongoChanges(ChangeStore):
    changes: Collection[Document]

    def record_changes(self, changes: Sequence[Change]) -> None:
        if not changes:
            return
        with transient("record_changes"):
            try:
                self.changes.insert_many([_document(change) for change in changes], ordered=False)
            except BulkWriteError as exc:
                duplicates(exc)

    def list_changes(
        self, tenant: str, schedule_id: str, limit: int, cursor: str | None
    ) -> Page[Change]:
        selector: Document = {"tenant": tenant, "schedule_id": schedule_id}
        if cursor is not None:
            selector["seq"] = {"$lt": parse_change_cursor(cursor)}
        with transient("list_changes"):
            found = list(self.changes.find(selector).sort("seq", DESCENDING).limit(limit + 1))
        items = [_change(document) for document in found[:limit]]
        return Page(items, change_cursor(items[-1].seq) if len(found) > limit else None)

    def purge_changes(self, before: datetime, limit: int) -> int:
        return 0


def _document(change: Change) -> Document:
    return {
        "_id": f"{change.tenant}/{change.schedule_id}/{change.seq}",
        "tenant": change.tenant,
        "schedule_id": change.schedule_id,
        "seq": change.seq,
        "revision": change.revision,
        "at": utc_ms(change.at),
        "action": change.action.value,
        "actor": change.actor.to_document(),
        "fields": [item.to_document() for item in change.fields],
    }


def _change(document: Document) -> Change:
    return Change(
        document["tenant"],
        document["schedule_id"],
        document["seq"],
        document["revision"],
        document["at"],
        ChangeAction(document["action"]),
        Actor.from_document(document["actor"]),
        fields_of(document["fields"]),
    )
