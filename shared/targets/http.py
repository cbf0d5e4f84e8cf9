"""The ``http`` kind of delivery target: an occurrence becomes a webhook call.

``Payload`` is the call (method, URL, query, headers, JSON body, one deadline), optionally with
OAuth 2.0 client credentials to fetch a bearer token for it (``OAuthClientCredentials``) and
the checks an answer must pass to count as a success (``ResponseCheck``: 2xx by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urlsplit

from jsonpointer import JsonPointer, JsonPointerException

from shared.jsonvalues import JSON, optional_int
from shared.ssrf import TargetRefused
from shared.targets.rules import TargetRules
from shared.templating import has_template, json_has_template, json_problems, text_problem

HTTP = "http"
OAUTH_CLIENT_CREDENTIALS = "oauth2_client_credentials"
CLIENT_AUTH_METHODS = ("basic", "body")
# How much of an answer's body a check reads at most (the sender reads no more anyway).
CHECKED_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class OAuthClientCredentials:
    """OAuth 2.0 client credentials (RFC 6749 §4.4): the executor asks ``token_url`` for a token
    with ``client_id`` and ``client_secret`` (HTTP Basic, or in the form body with
    ``client_auth="body"``) for ``scopes``, and sends it as ``Authorization: Bearer``."""

    token_url: str
    client_id: str
    client_secret: str
    scopes: tuple[str, ...] = ()
    client_auth: str = "basic"

    def to_document(self) -> dict[str, JSON]:
        return {
            "type": OAUTH_CLIENT_CREDENTIALS,
            "token_url": self.token_url,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "scopes": list(self.scopes),
            "client_auth": self.client_auth,
        }

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> OAuthClientCredentials:
        return cls(
            token_url=document["token_url"],
            client_id=document["client_id"],
            client_secret=document["client_secret"],
            scopes=tuple(document.get("scopes") or ()),
            client_auth=document.get("client_auth", "basic"),
        )


StatusRange = tuple[int, int]


@dataclass(frozen=True)
class ResponseCheck:
    """What an answer must be to count as a success: a status in ``statuses`` (inclusive
    ranges; 2xx by default) and, when set, the JSON value at ``json_pointer`` (RFC 6901) equal
    to ``json_equals``, and ``body_contains`` in the body; both read at most
    ``CHECKED_BODY_BYTES`` of it."""

    statuses: tuple[StatusRange, ...] = ((200, 299),)
    json_pointer: str | None = None
    json_equals: JSON = None
    body_contains: str | None = None

    @property
    def reads_body(self) -> bool:
        return self.json_pointer is not None or self.body_contains is not None

    def accepts_status(self, status: int) -> bool:
        return any(low <= status <= high for low, high in self.statuses)

    def to_document(self) -> dict[str, JSON]:
        document: dict[str, JSON] = {"status": [status_text(item) for item in self.statuses]}
        if self.json_pointer is not None:
            document["json"] = {"pointer": self.json_pointer, "equals": self.json_equals}
        if self.body_contains is not None:
            document["body_contains"] = self.body_contains
        return document

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> ResponseCheck:
        json_check = document.get("json")
        return cls(
            statuses=tuple(parse_status(item) for item in document.get("status") or ["2xx"]),
            json_pointer=json_check["pointer"] if json_check else None,
            json_equals=json_check["equals"] if json_check else None,
            body_contains=document.get("body_contains"),
        )


def parse_status(item: JSON) -> StatusRange:
    """``200`` → (200, 200); ``"2xx"`` → (200, 299). ``ValueError`` for anything else."""
    if isinstance(item, int) and not isinstance(item, bool) and 100 <= item <= 599:
        return (item, item)
    if isinstance(item, str) and len(item) == 3 and item[0] in "12345" and item[1:] == "xx":
        low = int(item[0]) * 100
        return (low, low + 99)
    raise ValueError(f'{item!r} is not a status: 100 to 599, or a class such as "2xx"')


def status_text(item: StatusRange) -> JSON:
    low, high = item
    return low if low == high else f"{low // 100}xx"


def pointer_problem(pointer: str) -> str | None:
    """Why ``pointer`` is not a JSON pointer (RFC 6901), or None."""
    try:
        JsonPointer(pointer)
    except JsonPointerException as exc:
        return f"not a JSON pointer (RFC 6901, such as /status or /items/0/ok): {exc}"
    return None


@dataclass(frozen=True)
class Payload:
    """The HTTP call an occurrence makes."""

    kind: ClassVar[str] = HTTP
    sealed_fields: ClassVar[tuple[str, ...]] = ("url", "headers", "queryParameters", "body", "auth")

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str | list[str]] = field(default_factory=dict)
    body: JSON = None
    timeout_seconds: float = 10.0
    # At most this many calls in flight to the URL's host (None: the executor's setting).
    calls_per_host: int | None = None
    auth: OAuthClientCredentials | None = None
    expect: ResponseCheck | None = None
    # Whether a value holds a placeholder (``shared.templating``): worked out when the payload
    # is made, stored with it, so a delivery without placeholders does no template work.
    templated: bool | None = None

    def __post_init__(self) -> None:
        if self.templated is None:
            object.__setattr__(self, "templated", self._has_template())

    def _has_template(self) -> bool:
        values = [self.url, *self.headers.values()]
        for value in self.query.values():
            values.extend(value if isinstance(value, list) else [value])
        return any(has_template(value) for value in values) or json_has_template(self.body)

    @property
    def location(self) -> str:
        return self.url

    def problems(self, rules: TargetRules) -> dict[str, str]:
        """What is wrong with the call as the domain sees it (the SSRF guard on the URL and the
        token URL as written, the placeholders, the checks), by field (``payload.…``)."""
        problems = self.template_problems()
        urls = [("payload.url", self.url)]
        if self.auth is not None:
            urls.append(("payload.auth.token_url", self.auth.token_url))
        for name, url in urls:
            if name in problems:
                continue
            try:
                rules.policy.check_url(url)
            except TargetRefused as exc:
                problems[name] = f"refused target: {exc}"
            except ValueError as exc:
                problems[name] = str(exc)
        if self.expect is not None and self.expect.json_pointer is not None:
            problem = pointer_problem(self.expect.json_pointer)
            if problem is not None:
                problems["payload.expect.json.pointer"] = problem
        return problems

    def template_problems(self) -> dict[str, str]:
        """The fields whose placeholders cannot be filled, each with why (``payload.…``)."""
        problems: dict[str, str] = {}
        if not self.templated:
            return problems
        parts = urlsplit(self.url)
        if has_template(parts._replace(query="").geturl()):
            problems["payload.url"] = "placeholders are filled in the query only"
        elif (problem := text_problem(parts.query)) is not None:
            problems["payload.url"] = problem
        for name, header in self.headers.items():
            if (problem := text_problem(header)) is not None:
                problems[f"payload.headers.{name}"] = problem
        for name, value in self.query.items():
            for item in value if isinstance(value, list) else [value]:
                if (problem := text_problem(item)) is not None:
                    problems[f"payload.queryParameters.{name}"] = problem
        problems.update(json_problems(self.body, "payload.body"))
        return problems

    def to_document(self) -> dict[str, JSON]:
        document: dict[str, JSON] = {
            "kind": HTTP,
            "method": self.method,
            "url": self.url,
            "headers": dict(self.headers),
            "queryParameters": dict(self.query),
            "body": self.body,
            "timeout_seconds": self.timeout_seconds,
        }
        if self.calls_per_host is not None:
            document["calls_per_host"] = self.calls_per_host
        if self.auth is not None:
            document["auth"] = self.auth.to_document()
        if self.expect is not None:
            document["expect"] = self.expect.to_document()
        if self.templated:
            document["templated"] = True
        return document

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Payload:
        auth = document.get("auth")
        expect = document.get("expect")
        return cls(
            method=document["method"],
            url=document["url"],
            headers=dict(document.get("headers") or {}),
            query=dict(document.get("queryParameters") or {}),
            body=document.get("body"),
            timeout_seconds=float(document.get("timeout_seconds", 10.0)),
            calls_per_host=optional_int(document.get("calls_per_host")),
            auth=OAuthClientCredentials.from_document(auth) if auth else None,
            expect=ResponseCheck.from_document(expect) if expect else None,
            # Stored before placeholders existed: never filled in.
            templated=bool(document.get("templated", False)),
        )
