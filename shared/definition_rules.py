"""What a schedule's definition may hold, whatever brings it (the API, the console, the CLI):
the years and time zones it may name, its jitter, its pause after failures, and the call it
makes (method, URL, headers, query, metadata). Each check raises ``ValueError`` saying what is
wrong; a message names a header, never its value (it may be a secret). The API turns each into
a ``400`` naming the field (``scheduler_service.requests``)."""

from __future__ import annotations

import functools
import json
import re
import zoneinfo
from typing import Any
from urllib.parse import urlsplit

from shared.timeutil import load_zone

# Times a schedule may name. Past 9000 a local time with its zone's offset no longer fits in a
# datetime; before 1970 nothing can be scheduled. A schedule without an end simply omits it.
FIRST_YEAR, LAST_YEAR = 1970, 9000

# The most occurrences a schedule may be limited to: far beyond any real need, and small enough
# for every store to keep as a 64-bit integer.
MAX_OCCURRENCES = 1_000_000_000

# The widest jitter window: with the default look-ahead (300 s) an occurrence is still sent
# within SQS's longest delay (900 s) of its firing.
MAX_JITTER_SECONDS = 600

# The most failed occurrences in a row a schedule may wait for before it pauses itself.
MAX_PAUSE_AFTER_FAILURES = 1000

# The longest a schedule may wait before an occurrence that has not started is told of as late
# (``alert.late_after_seconds``): a week.
MAX_LATE_AFTER_SECONDS = 7 * 86_400

# ``managed_by``: what keeps the schedule (``scheduler apply`` of a repository's files, a
# deployment tool), so that a prune removes only its own schedules.
MANAGED_BY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,99}\Z")
MANAGED_BY_RULE = (
    "1 to 100 characters: letters, digits, . _ : / @ -, starting with a letter or digit"
)

# Limits of the call a schedule makes.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
MAX_URL_LENGTH = 2048
MAX_HEADERS = 50
MAX_HEADER_VALUE_LENGTH = 8192
MAX_QUERY_PARAMETERS = 100
MAX_QUERY_NAME_LENGTH = 256
MAX_QUERY_VALUE_LENGTH = 2048
MAX_METADATA_BYTES = 16 * 1024
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")
# Headers the scheduler sets on every call (shared.webhooks): a schedule cannot set them.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "idempotency-key",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
    }
)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# A placeholder in a URL's query (``shared.templating``): the spaces inside its braces are its
# own, not the URL's.
_PLACEHOLDER = re.compile(r"\{\{[ \t]{0,8}[A-Za-z0-9_.]{1,64}[ \t]{0,8}\}\}")


def check_year(year: int) -> None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(
            f"the year must be between {FIRST_YEAR} and {LAST_YEAR} (for no end, leave it out)"
        )


@functools.cache
def region_zones() -> frozenset[str]:
    """The IANA zone names a schedule may use: the tz database's zones and links, without the
    files that are not zones of a region (``localtime``, ``posixrules``, ``Factory``) nor the
    ``posix/`` and ``right/`` (leap-second) copies."""
    return frozenset(
        name
        for name in zoneinfo.available_timezones()
        if name not in {"localtime", "posixrules", "Factory"}
        and not name.startswith(("posix/", "right/"))
    )


def check_zone_name(value: str) -> None:
    if value not in region_zones():
        raise ValueError(
            f"unknown time zone {value[:64]!r}: give an IANA name such as 'Europe/Paris' or 'UTC'"
        )
    load_zone(value)


def check_http_url(value: str) -> None:
    """An ``http://`` or ``https://`` URL with a host, no credentials, nothing to encode (but
    the spaces inside a placeholder's braces)."""
    if _CONTROL.search(value) or " " in _PLACEHOLDER.sub("", value):
        raise ValueError("the URL has spaces or control characters; percent-encode them")
    try:
        parts = urlsplit(value)
        _ = parts.port  # ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise ValueError(f"not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must be an http:// or https:// URL")
    if not parts.hostname:
        raise ValueError("the URL has no host")
    if parts.username or parts.password:
        raise ValueError("credentials in the URL are not allowed; use headers")


def check_single_line(value: str) -> None:
    if _CONTROL.search(value):
        raise ValueError("control characters are not allowed")


def check_method(value: str) -> None:
    if value.upper() not in METHODS:
        raise ValueError(f"unknown method {value!r}; use one of {', '.join(METHODS)}")


def check_headers(value: dict[str, Any]) -> None:
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    for name, header in value.items():
        if not HEADER_NAME.match(name):
            raise ValueError(f"invalid header name {name[:64]!r}")
        if name.lower() in RESERVED_HEADERS:
            raise ValueError(f"header {name!r} is set by the scheduler")
        if not isinstance(header, str) or _CONTROL.search(header):
            raise ValueError(f"header {name!r} must be a single-line string")
        if len(header) > MAX_HEADER_VALUE_LENGTH:
            raise ValueError(f"header {name!r} is longer than {MAX_HEADER_VALUE_LENGTH} characters")
        try:
            header.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(
                f"header {name!r} has characters HTTP headers cannot carry (use ASCII)"
            ) from None


def check_query(value: dict[str, Any]) -> None:
    if len(value) > MAX_QUERY_PARAMETERS:
        raise ValueError(f"at most {MAX_QUERY_PARAMETERS} query parameters")
    for name, item in value.items():
        if len(name) > MAX_QUERY_NAME_LENGTH:
            raise ValueError(
                f"a query parameter name is longer than {MAX_QUERY_NAME_LENGTH} characters"
            )
        items = item if isinstance(item, list) else [item]
        if len(items) > MAX_QUERY_PARAMETERS:
            raise ValueError(f"query parameter {name!r} has too many values")
        for element in items:
            if not isinstance(element, str | int | float | bool) or element is None:
                raise ValueError(f"query parameter {name!r} must be a string or number")
            if len(str(element)) > MAX_QUERY_VALUE_LENGTH:
                raise ValueError(
                    f"query parameter {name!r} has a value over {MAX_QUERY_VALUE_LENGTH} chars"
                )


def check_metadata(value: dict[str, Any]) -> None:
    size = len(json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"at most {MAX_METADATA_BYTES} bytes of JSON (got {size})")
