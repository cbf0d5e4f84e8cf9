"""The bulk calls of ``SchedulerClient``: one action on every schedule a selector matches."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Unpack, cast

from scheduler_client._transport import Transport, only_known
from scheduler_client.types import BulkDone, BulkDryRun, BulkOptions, BulkSelector

# The ids of each outcome ``bulk`` keeps of all its parts.
BULK_IDS = 1000
_BULK_COUNTS = ("matched", "changed", "unchanged", "failed")
_BULK_LISTS = ("changed_ids", "unchanged_ids", "failures")


class Bulk(Transport):
    def bulk(self, action: str, selector: BulkSelector, **options: Unpack[BulkOptions]) -> BulkDone:
        """Pause, resume, delete or patch (``action``) every schedule ``selector`` matches,
        following the API's parts to the end (``bulk_part``); the counts of every part summed
        and the first ids of each outcome. One ``Idempotency-Key`` (a fresh one unless given)
        goes with every part, so a part tried again answers as it first did."""
        only_known("bulk", options, BulkOptions)
        each = options | {"idempotency_key": options.get("idempotency_key") or str(uuid.uuid4())}
        total: dict[str, Any] = {name: 0 for name in _BULK_COUNTS}
        total |= {name: [] for name in _BULK_LISTS}
        token: str | None = None
        while True:
            part: dict[str, Any] = dict(self.bulk_part(action, selector, token=token, **each))
            for name in _BULK_COUNTS:
                total[name] += part[name]
            for name in _BULK_LISTS:
                total[name] = (total[name] + part[name])[:BULK_IDS]
            total["parts"] = total.get("parts", 0) + 1
            token = part.get("continue")
            if part["done"] or not token:
                return cast(BulkDone, {**total, "done": True, "continue": None})

    def bulk_part(
        self,
        action: str,
        selector: BulkSelector,
        *,
        token: str | None = None,
        **options: Unpack[BulkOptions],
    ) -> BulkDone:
        """One part of ``bulk``, from ``token`` (the ``continue`` of the part before): its
        answer, ``done`` false with a ``continue`` when more remain."""
        only_known("bulk_part", options, BulkOptions)
        body = _bulk_body(action, selector, options.get("patch"))
        if token is not None:
            body["continue"] = token
        key = options.get("idempotency_key")
        headers = {"Idempotency-Key": key} if key else {}
        answer = self._call(
            "POST", "/schedules/bulk", body=body, headers=headers, idempotent=bool(headers)
        )
        return cast(BulkDone, answer)

    def bulk_dry_run(
        self, action: str, selector: BulkSelector, *, patch: Mapping[str, Any] | None = None
    ) -> BulkDryRun:
        """How many schedules a bulk ``action`` on ``selector`` would go over, and the first
        few; changes nothing (a ``patch`` action needs its ``patch``)."""
        body = {**_bulk_body(action, selector, patch), "dry_run": True}
        return cast(BulkDryRun, self._call("POST", "/schedules/bulk", body=body, idempotent=True))


def _bulk_body(
    action: str, selector: BulkSelector, patch: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The body of ``POST /schedules/bulk``: ``action`` on what ``selector`` matches, with its
    ``patch`` if it has one."""
    body: dict[str, Any] = {"action": action, "selector": dict(selector)}
    if patch is not None:
        body["patch"] = dict(patch)
    return body
