"""The store's reads of records, once for every backend: one record by its key, and the listings
of ``shared.store_queries``; a backend gives only ``fields`` (a row or document read as its
stored fields, ``shared.adapters.records``), ``read``, ``select`` and ``count``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import datetime
from operator import attrgetter
from typing import Any

from shared.adapters.records import (
    Fields,
    api_key_of,
    execution_of,
    idempotency_of,
    schedule_of,
)
from shared.definition_cache import DefinitionCache
from shared.definition_codec import DefinitionCodec
from shared.model import Execution, Schedule
from shared.ports import (
    ApiKey,
    DeadLetterRequest,
    HistoryRequest,
    IdempotencyRecord,
    Page,
    ScheduleFilter,
    ScheduleOrder,
    execution_page,
)
from shared.schedule_listing import Segment, ordered_page
from shared.store_queries import (
    Query,
    dead_letters_query,
    history_query,
    late_query,
    recorded_query,
    segment_query,
)


class Reads(ABC):
    definitions: DefinitionCodec

    @abstractmethod
    def fields(self, table: str, stored: Any) -> Fields:
        """The stored fields of a row or document of ``table``, as the backend read it."""

    def schedule_from(self, stored: Any, cache: DefinitionCache | None = None) -> Schedule:
        return schedule_of(self.fields("schedules", stored), self.definitions, cache)

    def execution_from(self, stored: Any) -> Execution:
        return execution_of(self.fields("executions", stored))

    def idempotency_from(self, stored: Any) -> IdempotencyRecord:
        return idempotency_of(self.fields("idempotency_keys", stored))

    def api_key_from(self, stored: Any) -> ApiKey:
        return api_key_of(self.fields("api_keys", stored))

    @abstractmethod
    def read(self, table: str, key: Mapping[str, Any]) -> Fields | None:
        """The stored fields of the record of ``table`` its key's fields find."""

    @abstractmethod
    def select(self, query: Query) -> list[Fields]:
        """The stored fields of the records ``query`` selects, in its order, its limit at most."""

    @abstractmethod
    def count(self, query: Query) -> int:
        """How many records ``query`` selects, its order and limit aside."""

    def get_schedule(self, tenant: str, schedule_id: str) -> Schedule | None:
        fields = self.read("schedules", {"tenant": tenant, "schedule_id": schedule_id})
        return None if fields is None else schedule_of(fields, self.definitions)

    def get_execution(self, tenant: str, occurrence_id: str) -> Execution | None:
        fields = self.read("executions", {"tenant": tenant, "occurrence_id": occurrence_id})
        return None if fields is None else execution_of(fields)

    def list_schedules(
        self, tenant: str, query: ScheduleFilter, limit: int, cursor: str | None
    ) -> Page[Schedule]:
        return ordered_page(query, limit, cursor, lambda segment: self._segment(tenant, segment))

    def count_matching(self, tenant: str, query: ScheduleFilter) -> int:
        by_id = replace(query, order=ScheduleOrder.ID, descending=False)
        selection = segment_query(tenant, Segment(by_id, False, None, 0))
        return 0 if selection is None else self.count(selection)

    def _segment(self, tenant: str, segment: Segment) -> list[Schedule]:
        query = segment_query(tenant, segment)
        if query is None:
            return []
        return [schedule_of(fields, self.definitions) for fields in self.select(query)]

    def list_executions(self, history: HistoryRequest) -> Page[Execution]:
        return self._page(history_query(history), history.limit)

    def list_dead_letters(self, request: DeadLetterRequest) -> Page[Execution]:
        query = dead_letters_query(request)
        return Page([]) if query is None else self._page(query, request.limit)

    def late_schedules(self, now: datetime, limit: int) -> list[Schedule]:
        found = self.select(late_query(now, limit))
        return [schedule_of(fields, self.definitions) for fields in found]

    def recorded_occurrences(
        self, tenant: str, schedule_id: str, occurrence_ids: Collection[str]
    ) -> set[str]:
        if not occurrence_ids:
            return set()
        query = recorded_query(tenant, schedule_id, occurrence_ids)
        return {fields["occurrence_id"] for fields in self.select(query)}

    def _page(self, query: Query, limit: int) -> Page[Execution]:
        found = [execution_of(fields) for fields in self.select(query)]
        return execution_page(found, limit, attrgetter(query.moment))
