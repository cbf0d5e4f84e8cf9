"""Storage: bytes per stored schedule and per execution record (and per queued occurrence).

``--count`` schedules are stored the way the processor stores them (``apply_definition``, one
each), each gets one execution record the way the executor writes it (``begin_attempt`` then
``finish_attempt`` succeeded), and ``--count`` occurrence messages are put on queue 2. Then:
SQLite's ``dbstat`` (pages used by each table and index, so free space is not counted), or
MongoDB's ``collStats`` (data size, storage size after compression, index sizes).

    python -m bench.storage
    python -m bench.storage --store-url mongodb://127.0.0.1:27017
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import backend, common_arguments, report, table
from bench.seed import TENANT, one_time_definition
from shared.backends import open_backends
from shared.messages import encode_occurrence
from shared.model import Answer, AttemptOutcome, ExecutionStatus, Occurrence
from shared.ports import OutgoingMessage

HOOK = "http://127.0.0.1:9/hook"


def fill(backends: Any, count: int) -> None:
    store = backends.store
    now = datetime.now(UTC).replace(microsecond=0)
    messages = []
    for index in range(count):
        at = now + timedelta(days=1, seconds=index)
        schedule_id = f"storage-{index:08d}"
        store.apply_definition(
            (TENANT, schedule_id, 1, one_time_definition(HOOK, at, f"bench-{index}"), at, now)
        )
        occurrence = Occurrence(TENANT, schedule_id, 1, at)
        execution = store.begin_attempt(occurrence, "bench", now, now + timedelta(seconds=40))
        assert execution is not None
        store.finish_attempt(
            execution,
            "bench",
            AttemptOutcome(
                ExecutionStatus.SUCCEEDED, now + timedelta(milliseconds=3), Answer(200), 2.5
            ),
        )
        store.record_run(TENANT, schedule_id, True, now)
        messages.append(OutgoingMessage(encode_occurrence(occurrence), 0))
    backends.queues.occurrences.send(messages)


def measure_sqlite(store: Any, count: int) -> dict[str, Any]:
    connection = store.db.connection()
    sizes = {
        row["name"]: row["bytes"]
        for row in connection.execute(
            "SELECT name, sum(pgsize - unused) AS bytes FROM dbstat GROUP BY name"
        ).fetchall()
    }
    # Every index with its table, so an index added later is counted without editing this.
    table_of = {
        row["name"]: row["tbl_name"]
        for row in connection.execute("SELECT name, tbl_name FROM sqlite_schema").fetchall()
    }
    definition = connection.execute("SELECT avg(length(definition)) FROM schedules").fetchone()[0]

    def per_record(table: str) -> dict[str, Any]:
        indexes = {
            name: size
            for name, size in sizes.items()
            if table_of.get(name) == table and name != table
        }
        row = sizes.get(table, 0) / count
        index_bytes = sum(indexes.values()) / count
        return {
            "row": row,
            "indexes": index_bytes,
            "total": row + index_bytes,
            "index_bytes": {name: size / count for name, size in indexes.items()},
        }

    return {
        "schedule": {**per_record("schedules"), "definition_json": definition},
        "execution": per_record("executions"),
        "queued_occurrence": per_record("queue_messages"),
        "objects": sizes,
    }


def measure_mongo(store: Any, count: int) -> dict[str, Any]:
    database = store.schedules.database
    result: dict[str, Any] = {}
    for name, collection in (("schedule", "schedules"), ("execution", "executions")):
        stats = database.command("collStats", collection)
        result[name] = {
            "row": stats["size"] / count,
            "stored_compressed": stats.get("storageSize", 0) / count,
            "indexes": stats.get("totalIndexSize", 0) / count,
            "total": (stats.get("storageSize", 0) + stats.get("totalIndexSize", 0)) / count,
            "index_sizes": stats.get("indexSizes", {}),
        }
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__)
    common_arguments(parser)
    parser.add_argument("--count", type=int, default=10_000)
    args = parser.parse_args(argv)
    from shared.adapters.mongo.store import MongoStore

    with backend(args.store_url, args.queue_url) as where:
        backends = open_backends(where.settings())
        try:
            fill(backends, args.count)
            if isinstance(backends.store, MongoStore):
                sizes = measure_mongo(backends.store, args.count)
            else:
                sizes = measure_sqlite(backends.store, args.count)
        finally:
            backends.close()
    rows = [
        [what, where.label, figures["row"], figures["indexes"], figures["total"]]
        for what, figures in sizes.items()
        if what != "objects"
    ]
    print(table(["bytes per", "backend", "record", "indexes", "total"], rows))
    result = {"backend": where.label, "count": args.count, "bytes": sizes}
    report("storage", result, args.json)
    return result


if __name__ == "__main__":
    main()
