"""``/scheduler-service/v1/dead-letters``: the tenant's occurrences that failed for good (every
attempt used, or an answer that is not retried), to look at, replay or discard.

They are the execution records that ended ``failed``, as the schedules' histories show them: a
listing per tenant, whatever the queue's own dead-letter queue holds (which also receives
messages that could not be decoded, with no tenant to show them to).
"""

from __future__ import annotations

from typing import Any

from flask import g

from scheduler_service.auth import request_actor
from scheduler_service.presenting.run_schemas import (
    DeadLetterPageSchema,
    DiscardedSchema,
    ReplayedSchema,
)
from scheduler_service.presenting.views import PageView, Replayed, masked_execution
from scheduler_service.requests.paths import check_occurrence_id
from scheduler_service.requests.queries import ListDeadLettersQuery, encode_cursor
from scheduler_service.routes.common import Blueprint, page_size, service
from shared.model import Execution
from shared.ports import DeadLetterRequest, Role

blp = Blueprint(
    "dead_letters",
    __name__,
    url_prefix="/scheduler-service/v1",
    description="Dead letters: occurrences that failed for good; replay or discard them",
)

NO_DEAD_LETTER = "No dead letter by that id (never failed, or replayed or discarded already)"


@blp.listing("/dead-letters", ListDeadLettersQuery, DeadLetterPageSchema, "listDeadLetters")
def list_dead_letters(query: dict[str, Any]) -> PageView[Execution]:
    """The tenant's dead letters, the latest failure first: which schedule, which occurrence,
    why (HTTP status, error) and when."""
    scheduler = service()
    page = scheduler.reads.list_dead_letters(
        DeadLetterRequest(g.tenant, page_size(query), query.get("cursor"))
    )
    secret_patterns = scheduler.settings.secret_headers
    return PageView(
        [masked_execution(item, secret_patterns) for item in page.items],
        encode_cursor(page.next_cursor, "d"),
    )


@blp.route("/dead-letters/<occurrence_id>/replay", methods=["POST"])
@blp.requires(Role.WRITE)
@blp.response(202, ReplayedSchema)
@blp.doc(operationId="replayDeadLetter")
@blp.problem(409, "The schedule is deleted: a replay would not fire")
@blp.problem(404, NO_DEAD_LETTER)
@blp.problems(400)
def replay_dead_letter(occurrence_id: str) -> Replayed:
    """Replay a dead letter now

    The same occurrence id and `Idempotency-Key`, the schedule's current payload, recorded in
    its history as one more attempt. It leaves the list; if it fails again it is back. Even
    while the schedule is paused. A malformed occurrence id is a 400 naming `occurrence_id`."""
    check_occurrence_id(occurrence_id)
    return Replayed(service().runs.replay(g.tenant, occurrence_id, request_actor()))


@blp.route("/dead-letters/<occurrence_id>", methods=["DELETE"])
@blp.requires(Role.WRITE)
@blp.response(200, DiscardedSchema)
@blp.doc(operationId="discardDeadLetter")
@blp.problem(404, NO_DEAD_LETTER)
@blp.problems(400)
def discard_dead_letter(occurrence_id: str) -> dict[str, str]:
    """Discard a dead letter

    Off the list for good; it stays `failed` in the history. A malformed occurrence id is a 400
    naming `occurrence_id`."""
    check_occurrence_id(occurrence_id)
    service().runs.discard(g.tenant, occurrence_id)
    return {"id": occurrence_id}
