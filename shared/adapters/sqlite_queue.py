"""The embedded queue on SQLite, with SQS's semantics (delay, visibility, receive count, DLQ)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence

from shared.adapters.sqlite.db import SqliteDatabase
from shared.ports import MessageQueue, OutgoingMessage, QueueDepth, QueueSpec, ReceivedMessage
from shared.timeutil import from_epoch_ms

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    body TEXT NOT NULL,
    visible_ms INTEGER NOT NULL,
    sent_ms INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    receipt TEXT
);
CREATE INDEX IF NOT EXISTS queue_messages_visible ON queue_messages (queue, visible_ms);
"""

# How often an empty long poll looks again; a read, not a write lock.
POLL_STEP_SECONDS = 0.01
# A message received too often already, when there is a dead-letter queue (in a receive).
OVER = "(?1 AND receive_count >= ?2)"
# Messages deleted by one statement.
DELETES_PER_STATEMENT = 500


def _now_ms() -> int:
    return int(time.time() * 1000)


class SqliteQueue(MessageQueue):
    def __init__(self, database: SqliteDatabase, spec: QueueSpec) -> None:
        super().__init__(spec)
        self.db = database
        self._stop = threading.Event()
        # Whether the last receive took a full batch (then the next needs no first look).
        self._busy = False

    def create(self) -> None:
        self.db.connection().executescript(SCHEMA)

    def send(self, messages: Sequence[OutgoingMessage]) -> None:
        if not messages:
            return
        now = _now_ms()
        self._write_rows(
            "INSERT INTO queue_messages (queue, body, visible_ms, sent_ms) VALUES (?, ?, ?, ?)",
            [
                (self.name, message.body, now + int(message.delay_seconds * 1000), now)
                for message in messages
            ],
        )

    def _write_rows(self, statement: str, rows: Sequence[Sequence[object]]) -> None:
        # One statement over every row, in one transaction.
        with self.db.write() as connection:
            connection.executemany(statement, rows)

    def receive(
        self, max_messages: int, wait_seconds: float, visibility_timeout: float
    ) -> list[ReceivedMessage]:
        deadline = time.monotonic() + wait_seconds
        while True:
            received = self._receive_now(max_messages, visibility_timeout)
            remaining = deadline - time.monotonic()
            if received or remaining <= 0 or self._stop.is_set():
                return received
            self._stop.wait(min(POLL_STEP_SECONDS, remaining))

    def _receive_now(self, max_messages: int, visibility_timeout: float) -> list[ReceivedMessage]:
        now = _now_ms()
        # A cheap read first: most polls of an idle queue find nothing and need no write lock.
        # After a full batch the queue is busy: straight to the write.
        if not self._busy and (
            self.db.connection()
            .execute(
                "SELECT 1 FROM queue_messages WHERE queue = ? AND visible_ms <= ? LIMIT 1",
                (self.name, now),
            )
            .fetchone()
            is None
        ):
            return []
        receipt = uuid.uuid4().hex
        # One statement for the batch, a transaction of its own: the earliest visible messages
        # become invisible for the visibility timeout, under one receipt (the id tells them
        # apart); those received too often already go to the dead-letter queue instead. Exactly
        # in order of visibility, then as sent (the index's order), where SQS's standard queues
        # give about the order sent: what the poller's order by priority relies on is only that.
        rows = self.db.write_one(
            f"UPDATE queue_messages SET queue = CASE WHEN {OVER} THEN ?3 ELSE queue END,"
            f" receipt = CASE WHEN {OVER} THEN NULL ELSE ?4 END,"
            f" visible_ms = CASE WHEN {OVER} THEN ?5 ELSE ?6 END,"
            f" receive_count = CASE WHEN {OVER} THEN 0 ELSE receive_count + 1 END"
            " WHERE id IN (SELECT id FROM queue_messages"
            " WHERE queue = ?7 AND visible_ms <= ?5 ORDER BY visible_ms LIMIT ?8)"
            " RETURNING id, body, receive_count, sent_ms, queue",
            (
                self.spec.dead_letter_queue is not None,
                self.spec.max_receives,
                self.spec.dead_letter_queue,
                receipt,
                now,
                now + int(visibility_timeout * 1000),
                self.name,
                max_messages,
            ),
        )
        self._busy = len(rows) == max_messages
        return [
            ReceivedMessage(
                message_id=str(row["id"]),
                body=row["body"],
                receipt_handle=f"{row['id']}:{receipt}",
                receive_count=row["receive_count"],
                sent_at=from_epoch_ms(row["sent_ms"]),
            )
            for row in sorted(rows, key=lambda row: row["id"])
            if row["queue"] == self.name
        ]

    def delete(self, receipt_handles: Sequence[str]) -> None:
        if not receipt_handles:
            return
        handles = list(receipt_handles)
        # One statement per chunk: the ids find the rows, the whole handle (``id:receipt``)
        # makes sure each is still the delivery it names.
        for start in range(0, len(handles), DELETES_PER_STATEMENT):
            chunk = handles[start : start + DELETES_PER_STATEMENT]
            marks = ", ".join("?" * len(chunk))
            self.db.write_one(
                f"DELETE FROM queue_messages WHERE id IN ({marks})"
                f" AND id || ':' || receipt IN ({marks})",
                [*(handle.split(":", 1)[0] for handle in chunk), *chunk],
            )

    def change_visibility(self, receipt_handle: str, timeout_seconds: float) -> None:
        self.change_visibilities([(receipt_handle, timeout_seconds)])

    def change_visibilities(self, changes: Sequence[tuple[str, float]]) -> None:
        if not changes:
            return
        now = _now_ms()
        self._write_rows(
            "UPDATE queue_messages SET visible_ms = ? WHERE id = ? AND receipt = ?",
            [(now + int(seconds * 1000), *handle.split(":", 1)) for handle, seconds in changes],
        )

    def depth(self) -> QueueDepth:
        now = _now_ms()
        row = (
            self.db.connection()
            .execute(
                "SELECT"
                " coalesce(sum(visible_ms <= ?), 0) AS visible,"
                " coalesce(sum(visible_ms > ? AND receipt IS NOT NULL), 0) AS in_flight,"
                " coalesce(sum(visible_ms > ? AND receipt IS NULL), 0) AS delayed"
                " FROM queue_messages WHERE queue = ?",
                (now, now, now, self.name),
            )
            .fetchone()
        )
        return QueueDepth(row["visible"], row["in_flight"], row["delayed"])

    def close(self) -> None:
        self._stop.set()
