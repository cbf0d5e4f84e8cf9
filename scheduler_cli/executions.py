"""``scheduler executions ID [OCCURRENCE]``: a schedule's run history through the API, a page
at a time, or one occurrence with its every attempt."""

from __future__ import annotations

import argparse
from typing import Any

from scheduler_cli.operator import Shown, Trace, client_options, pages, paging
from scheduler_client import SchedulerClient

EXECUTION_COLUMNS = (
    ("scheduled_time", "SCHEDULED (UTC)"),
    ("status", "STATUS"),
    ("attempts", "ATTEMPTS"),
    ("http_status", "HTTP"),
    ("lateness_ms", "LATE (ms)"),
    ("retry_delay_ms", "RETRIED AFTER (ms)"),
    ("duration_ms", "TOOK (ms)"),
    ("error", "ERROR"),
)

ATTEMPT_COLUMNS = (
    ("number", "#"),
    ("started_at", "STARTED (UTC)"),
    ("status", "STATUS"),
    ("http_status", "HTTP"),
    ("duration_ms", "TOOK (ms)"),
    ("error", "ERROR"),
    ("answer", "ANSWER"),
)
# How much of an answer's body a table shows (all of it with --json).
ANSWER_WIDTH = 60


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    executions = commands.add_parser(
        "executions",
        help="a schedule's run history via the API; with an occurrence id, its every attempt",
    )
    executions.add_argument("id")
    executions.add_argument(
        "occurrence", nargs="?", help="an occurrence id from the history: its attempts"
    )
    executions.add_argument(
        "--status",
        choices=["running", "retrying", "succeeded", "failed", "skipped"],
        help="only the records in this status (skipped: the superseded ones too)",
    )
    executions.add_argument("--limit", type=int, default=20, help="runs per page (20)")
    paging(executions)
    client_options(executions)


def request(client: SchedulerClient, args: argparse.Namespace, trace: Trace) -> Shown:
    if args.occurrence:
        answer: Any = client.execution(args.id, args.occurrence)
        return Shown(
            answer, [_attempt_row(item) for item in answer["attempt_log"]], ATTEMPT_COLUMNS
        )

    def history(cursor: str | None) -> Any:
        return client.executions_page(args.id, status=args.status, limit=args.limit, cursor=cursor)

    answer = pages(history, args)
    return Shown(answer, answer["items"], EXECUTION_COLUMNS)


def _attempt_row(attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempt with what the webhook answered on one line: status line, then the start of
    its body."""
    parts = [attempt.get("response_status_line"), attempt.get("response_excerpt")]
    answer = " ".join(" ".join(str(part).split()) for part in parts if part)
    if len(answer) > ANSWER_WIDTH:
        answer = answer[: ANSWER_WIDTH - 1] + "…"
    return {**attempt, "answer": answer or None}
