"""The MongoDB store's calendars: collection ``calendars``, one document a calendar
(``_id`` ``"<tenant>/<name>"``), its dates a list of ISO dates, replaced by compare-and-set on
``revision``. A read of several names is one ``find``; a tenant's listing reads the
``(tenant, name)`` index; the schedules naming a calendar, the ``(tenant, calendars,
schedule_id)`` index of ``schedules``."""

from __future__ import annotations

from collections.abc import Collection as Names
from datetime import date, datetime
from typing import Any, cast

from pymongo import ASCENDING
from pymongo.collection import Collection
from pymongo.errors import DuplicateKeyError

from shared.adapters.mongo.documents import instant
from shared.adapters.mongo.transient import transient
from shared.ports import Calendar, CalendarStore
from shared.timeutil import utc_ms

Document = dict[str, Any]
_LIVE = ["active", "paused"]


class MongoCalendars(CalendarStore):
    calendars: Collection[Document]
    schedules: Collection[Document]

    def get_calendars(self, tenant: str, names: Names[str]) -> dict[str, Calendar]:
        wanted = sorted({_key(tenant, name) for name in names})
        if not wanted:
            return {}
        with transient("get_calendars"):
            documents = list(self.calendars.find({"_id": {"$in": wanted}}))
        return {document["name"]: _calendar(document) for document in documents}

    def list_calendars(self, tenant: str) -> list[Calendar]:
        with transient("list_calendars"):
            documents = list(self.calendars.find({"tenant": tenant}).sort("name", ASCENDING))
        return [_calendar(document) for document in documents]

    def create_calendar(self, calendar: Calendar) -> bool:
        with transient("create_calendar"):
            try:
                self.calendars.insert_one(
                    {"_id": _key(calendar.tenant, calendar.name), **_fields(calendar)}
                )
            except DuplicateKeyError:
                return False
        return True

    def replace_calendar(self, calendar: Calendar) -> bool:
        with transient("replace_calendar"):
            result = self.calendars.update_one(
                {"_id": _key(calendar.tenant, calendar.name), "revision": calendar.revision - 1},
                {"$set": _fields(calendar)},
            )
        return result.matched_count == 1

    def delete_calendar(self, tenant: str, name: str) -> bool:
        with transient("delete_calendar"):
            result = self.calendars.delete_one({"_id": _key(tenant, name)})
        return result.deleted_count == 1

    def schedules_naming(self, tenant: str, name: str, limit: int) -> list[str]:
        selector = {"tenant": tenant, "calendars": name, "status": {"$in": _LIVE}}
        with transient("schedules_naming"):
            found = self.schedules.find(selector, {"schedule_id": 1})
            documents = list(found.sort("schedule_id", ASCENDING).limit(limit))
        return [document["schedule_id"] for document in documents]

    def recheck_schedules(self, tenant: str, name: str, at: datetime) -> int:
        moment = utc_ms(at)
        with transient("recheck_schedules"):
            result = self.schedules.update_many(
                {
                    "tenant": tenant,
                    "calendars": name,
                    "status": "active",
                    "next_schedule_time": {"$gt": moment},
                },
                {"$set": {"next_schedule_time": moment}},
            )
        return result.modified_count


def _key(tenant: str, name: str) -> str:
    return f"{tenant}/{name}"


def _fields(calendar: Calendar) -> Document:
    return {
        "tenant": calendar.tenant,
        "name": calendar.name,
        "revision": calendar.revision,
        "description": calendar.description,
        "dates": [day.isoformat() for day in calendar.dates],
        "updated_at": utc_ms(calendar.updated_at),
    }


def _calendar(document: Document) -> Calendar:
    return Calendar(
        tenant=document["tenant"],
        name=document["name"],
        dates=tuple(date.fromisoformat(day) for day in document["dates"]),
        revision=document["revision"],
        # A date (nx-27017 answers one its update wrote as text: ``instant`` reads either).
        updated_at=cast(datetime, instant(document["updated_at"])),
        description=document.get("description", ""),
    )
