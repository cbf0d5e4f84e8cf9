"""Logging: JSON lines for machines, or readable text for ``scheduler dev``.

Log calls pass context in ``extra`` (``event``, ``schedule_id``, ``occurrence_id``, ``tenant`` …);
the JSON formatter writes each as a field. Header values are never passed to a log call, and
as a second guard every line passes ``shared.redaction.redact`` as it is formatted.
HTTP and database client libraries log whole requests at DEBUG (urllib3 the request line with
its query, botocore and pymongo the messages and documents): they log at WARNING and above only,
whatever ``SCHEDULER_LOG_LEVEL`` says.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from shared.redaction import DEFAULT_SECRET_NAMES, redact

# Loggers of client libraries whose DEBUG and INFO lines quote requests, URLs or documents.
CLIENT_LOGGERS = (
    "urllib3",
    "requests",
    "aiohttp",
    "httpx",
    "httpcore",
    "botocore",
    "boto3",
    "s3transfer",
    "pymongo",
    "werkzeug",
)
# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


def _context(record: logging.LogRecord) -> dict[str, Any]:
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


class RedactingFormatter(logging.Formatter):
    """A formatter whose lines pass ``shared.redaction.redact`` with ``secret_patterns``."""

    def __init__(self, secret_patterns: tuple[str, ...] = DEFAULT_SECRET_NAMES) -> None:
        super().__init__()
        self.secret_patterns = secret_patterns

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.line(record), self.secret_patterns)

    def line(self, record: logging.LogRecord) -> str:
        raise NotImplementedError


class JsonFormatter(RedactingFormatter):
    def line(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update(_context(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(RedactingFormatter):
    def line(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        context = _context(record)
        context.pop("event", None)
        details = " ".join(f"{key}={value}" for key, value in context.items() if value is not None)
        line = f"{stamp} {record.levelname:<7} {record.getMessage()}"
        if details:
            line += f"  [{details}]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(
    log_format: str, level: str, secret_patterns: tuple[str, ...] = DEFAULT_SECRET_NAMES
) -> None:
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    handler.setFormatter(formatter(secret_patterns))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Their requests may carry webhook secrets; the development server's lines are noise.
    quiet = max(logging.WARNING, root.level)
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
