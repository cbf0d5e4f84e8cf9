"""Backfill: run the occurrences of a past range that did not run, from a form."""

from __future__ import annotations

from datetime import datetime

from flask import g, request

from scheduler_service.console.forms import ZONE_NAMES, time_zones
from scheduler_service.console.pages import blp, page, service, view_of
from scheduler_service.roles import requires
from shared.backfill import Backfill
from shared.errors import InvalidInput
from shared.model import MisfirePolicy
from shared.ports import Role
from shared.timeutil import load_zone, parse_iso, resolve_local

POLICIES = {
    MisfirePolicy.FIRE_ALL.value: "each occurrence that did not run",
    MisfirePolicy.FIRE_ONCE.value: "only the latest of them",
}


def wall_instant(name: str, zone: str, errors: dict[str, list[str]]) -> datetime | None:
    """The instant of the form's local wall time ``name`` in ``zone``."""
    text = request.form.get(name, "").strip()
    try:
        wall = parse_iso(text)
        if wall.tzinfo is not None:
            raise ValueError(text)
        return resolve_local(wall, load_zone(zone))
    except (ValueError, OverflowError):
        errors[name] = ["a date and time, e.g. 2026-05-01T09:00"]
        return None


@blp.route("/schedules/<schedule_id>/backfill", methods=["GET", "POST"])
@requires(Role.WRITE)
def backfill(schedule_id: str) -> tuple[str, int]:
    """A range of past time in a zone (the schedule's unless another is picked), and which of
    its occurrences run: what ``POST /schedule/{id}/backfill`` takes; what it queued and what it
    left out, and why, is shown below."""
    stored = service().reads.get(g.tenant, schedule_id)
    view = view_of(stored)
    values = {"zone": view["timezone"], "policy": MisfirePolicy.FIRE_ALL.value}
    errors: dict[str, list[str]] = {}
    done: Backfill | None = None
    if request.method == "POST":
        values = {name: request.form.get(name, "").strip() for name in ("from", "to", "zone")}
        values["policy"] = request.form.get("policy", "")
        if values["zone"] not in ZONE_NAMES:
            errors["zone"] = ["pick a time zone of the list"]
        if values["policy"] not in POLICIES:
            errors["policy"] = [f"one of {', '.join(POLICIES)}"]
        start = wall_instant("from", values["zone"], errors) if not errors else None
        end = wall_instant("to", values["zone"], errors) if not errors else None
        if start is not None and end is not None and not errors:
            try:
                done = service().runs.backfill(
                    g.tenant, schedule_id, start, end, MisfirePolicy(values["policy"])
                )
            except InvalidInput as exc:
                errors.update(exc.fields)
    html = page(
        "console/backfill.html",
        schedule=view,
        values=values,
        errors=errors,
        done=done,
        policies=POLICIES,
        zones=time_zones(),
    )
    return html, 422 if errors else 200
