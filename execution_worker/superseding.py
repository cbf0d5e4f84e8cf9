"""Occurrences superseded by a change, pause or delete: said once per change, counted each.

The poller sends occurrences up to the look-ahead (5 minutes) ahead of their time; a change of
their schedule meanwhile makes each of them a skip at its moment, one after the other. They are
not runs: recorded ``superseded`` (histories list them only when asked for skipped records),
counted on their schedule and by ``scheduler_occurrences_superseded_total``, and logged once per
change by each executor, not once per occurrence.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from shared.decisions import Superseded
from shared.metrics import OCCURRENCES_SUPERSEDED
from shared.model import Occurrence

log = logging.getLogger(__name__)

# The changes an executor remembers having logged, the latest ones: more than can be in flight
# at once (a change's occurrences come within the look-ahead), few enough to cost nothing.
REMEMBERED_CHANGES = 4096


class SupersededLog:
    """Counts each superseded occurrence and logs the first it meets of each change."""

    def __init__(self, remembered: int = REMEMBERED_CHANGES) -> None:
        self.remembered = remembered
        self._logged: OrderedDict[tuple[str, str, str, tuple[int, int]], None] = OrderedDict()
        self._counters = {
            cause: OCCURRENCES_SUPERSEDED.labels(cause)
            for cause in ("changed", "paused", "deleted", "skipped")
        }

    def tell(self, occurrence: Occurrence, change: Superseded) -> None:
        self._counters[change.cause].inc()
        key = (occurrence.tenant, occurrence.schedule_id, change.cause, change.change)
        if key in self._logged:
            return
        self._logged[key] = None
        if len(self._logged) > self.remembered:
            self._logged.popitem(last=False)
        log.info(
            "occurrences of %s sent before it was %s are skipped, not called (%s)",
            occurrence.schedule_id,
            change.cause,
            change.reason,
            extra={
                "event": "occurrences_superseded",
                "tenant": occurrence.tenant,
                "schedule_id": occurrence.schedule_id,
                "reason": change.reason,
                "occurrence_id": occurrence.occurrence_id,
            },
        )
