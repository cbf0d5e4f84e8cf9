"""The list of schedules: search, sort, filters and pages (its row and bulk actions are
in ``schedule_actions`` and ``bulk_actions``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from flask import g, request

from scheduler_service.console.pages import (
    Paging,
    blp,
    can,
    page,
    service,
    this_page,
    view_of,
)
from scheduler_service.roles import requires
from scheduler_service.service.bulk import Selector
from shared.errors import InvalidInput
from shared.model import LISTED_STATUSES, ScheduleStatus
from shared.ports import Role, ScheduleFilter, ScheduleOrder
from shared.schedule_listing import SEARCH_LENGTH
from shared.schedule_listing import SORTS as LISTING_SORTS
from shared.timeutil import UTC, parse_iso, utc_ms

# The list's orders, as the menu shows them: its ?sort= value (shared.schedule_listing.SORTS)
# → the store's order, descending, and the words.
SORTS: dict[str, tuple[ScheduleOrder, bool, str]] = {
    value: (*LISTING_SORTS[value], words)
    for value, words in (
        ("name", "Name, A to Z"),
        ("-name", "Name, Z to A"),
        ("next", "Next fire, soonest first"),
        ("-next", "Next fire, latest first"),
        ("-created", "Newest first"),
        ("created", "Oldest first"),
        ("id", "Id"),
    )
}
PAGE_SIZES = (25, 50, 100, 200)
DEFAULT_PAGE_SIZE = 50
LIST_PARAMETERS = ("q", "status", "tag", "sort", "per_page", "next_after", "next_before")
# The parameters that say what was just done, not what the list shows.
NOTICES = ("bulk", "done", "missing", "deleted", "unchanged", "failed")


def instant_filter(
    name: str, errors: dict[str, list[str]], args: Mapping[str, str]
) -> datetime | None:
    text = args.get(name, "").strip()
    if not text:
        return None
    try:
        moment = parse_iso(text)
        if moment.tzinfo is None:
            raise ValueError(text)
        return utc_ms(moment.astimezone(UTC))
    except (ValueError, OverflowError):
        errors[name] = ["an ISO-8601 instant with its offset, e.g. 2026-05-01T09:00Z"]
        return None


def list_selection(
    errors: dict[str, list[str]], args: Mapping[str, str] | None = None
) -> tuple[ScheduleFilter, int]:
    """The filter, order and page size of the list's query (or of ``args``: a form that
    carries it), each bad parameter in ``errors``."""
    args = request.args if args is None else args
    status = args.get("status", "")
    if status not in ("", *LISTED_STATUSES):
        errors["status"] = [f"one of {', '.join(LISTED_STATUSES)}"]
    sort = args.get("sort", "name")
    if sort not in SORTS:
        errors["sort"] = [f"one of {', '.join(SORTS)}"]
    per_page = args.get("per_page", str(DEFAULT_PAGE_SIZE))
    if per_page not in {str(size) for size in PAGE_SIZES}:
        errors["per_page"] = [f"one of {', '.join(map(str, PAGE_SIZES))}"]
    search = args.get("q", "").strip()
    if len(search) > SEARCH_LENGTH:
        errors["q"] = [f"at most {SEARCH_LENGTH} characters"]
    order, descending, _ = SORTS.get(sort, SORTS["name"])
    selection = ScheduleFilter(
        status=ScheduleStatus(status) if status and "status" not in errors else None,
        tag=args.get("tag", "").strip() or None,
        next_after=instant_filter("next_after", errors, args),
        next_before=instant_filter("next_before", errors, args),
        search=search or None,
        order=order,
        descending=descending,
    )
    return selection, int(per_page) if "per_page" not in errors else DEFAULT_PAGE_SIZE


@blp.route("/schedules")
@requires(Role.READ)
def schedules() -> tuple[str, int]:
    errors: dict[str, list[str]] = {}
    selection, per_page = list_selection(errors)
    cursor = request.args.get("cursor") or None
    items: list[dict[str, Any]] = []
    next_cursor = None
    matching = None
    if not errors:
        try:
            found = service().reads.list_schedules(g.tenant, selection, per_page, cursor)
        except InvalidInput as exc:
            errors.update(exc.fields)
        else:
            items = [view_of(schedule) for schedule in found.items]
            next_cursor = found.next_cursor
            selector = Selector.of_listing(selection)
            if items and can(Role.WRITE.value) and not selector.empty:
                matching = service().bulk.count(g.tenant, selector)
    filters = {name: request.args.get(name, "") for name in LIST_PARAMETERS}
    return (
        page(
            "console/schedules.html",
            items=items,
            filters=filters,
            kept={name: value for name, value in filters.items() if value},
            errors=errors,
            paging=Paging(cursor, next_cursor),
            sorts=SORTS,
            page_sizes=PAGE_SIZES,
            statuses=LISTED_STATUSES,
            here=this_page(*NOTICES),
            matching=matching,
        ),
        400 if errors else 200,
    )
