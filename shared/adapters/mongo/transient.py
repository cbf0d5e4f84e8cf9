"""How a MongoDB hiccup is reported: as ``Transient`` (try again later)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pymongo.errors import ConnectionFailure, ExecutionTimeout, PyMongoError, WTimeoutError

from shared.errors import Transient


@contextmanager
def transient(action: str) -> Iterator[None]:
    """Backend hiccups (no server, timeouts, failover) become ``Transient``: retry later."""
    try:
        yield
    except (ConnectionFailure, ExecutionTimeout, WTimeoutError) as exc:
        raise Transient(f"mongodb {action}: {exc}") from exc
    except PyMongoError as exc:
        if exc.has_error_label("RetryableWriteError") or exc.has_error_label(
            "TransientTransactionError"
        ):
            raise Transient(f"mongodb {action}: {exc}") from exc
        raise
