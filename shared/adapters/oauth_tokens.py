"""Bearer tokens for webhook calls: OAuth 2.0 client credentials (RFC 6749 §4.4).

The executor asks a schedule's token endpoint for a token through its webhook sender (so the
SSRF guard, one deadline and no redirects apply to the token URL as to any call), keeps it
until shortly before it expires (``expires_in`` less a tenth, at most ``EARLY_SECONDS``; an
answer without ``expires_in`` is kept ``DEFAULT_LIFETIME_SECONDS``), and asks again when a
webhook answers 401 to a token it had kept (``forget``). Calls that need the same token at once
share one request. Tokens are kept per tenant, endpoint, client, secret and scopes, the
``MAX_TOKENS`` used last; a token is never logged, never recorded, and never quoted in an error
(an error quotes the endpoint's ``error`` and ``error_description`` only).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote_plus, urlencode

from shared.ports import CallFailed, Clock, WebhookError, WebhookRequest, WebhookSender
from shared.redaction import redact
from shared.targets.http import OAuthClientCredentials
from shared.webhooks import USER_AGENT

EARLY_SECONDS = 60.0
DEFAULT_LIFETIME_SECONDS = 300.0
MAX_TOKENS = 10_000
# A token endpoint's answer is read up to this size.
ANSWER_BYTES = 16 * 1024
QUOTED = 200


class TokenError(CallFailed):
    """No token: the endpoint refused, answered something that is not a token, or did not
    answer. ``retryable`` as a webhook call's failure would be."""


@dataclass(frozen=True)
class Token:
    value: str
    expires_at: datetime


TokenKey = tuple[str, str, str, str, tuple[str, ...], str]


def token_key(tenant: str, auth: OAuthClientCredentials) -> TokenKey:
    secret = hashlib.sha256(auth.client_secret.encode()).hexdigest()
    return (tenant, auth.token_url, auth.client_id, secret, auth.scopes, auth.client_auth)


def token_request(auth: OAuthClientCredentials, timeout_seconds: float) -> WebhookRequest:
    form = {"grant_type": "client_credentials"}
    if auth.scopes:
        form["scope"] = " ".join(auth.scopes)
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    if auth.client_auth == "body":
        form.update(client_id=auth.client_id, client_secret=auth.client_secret)
    else:
        # RFC 6749 §2.3.1: each form-encoded, then joined and base64-encoded.
        pair = f"{quote_plus(auth.client_id)}:{quote_plus(auth.client_secret)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    return WebhookRequest(
        method="POST",
        url=auth.token_url,
        headers=headers,
        body=urlencode(form).encode(),
        timeout_seconds=timeout_seconds,
        body_bytes=ANSWER_BYTES,
    )


class TokenSource:
    """The tokens of one executor (see the module docstring); used on its event loop."""

    def __init__(self, sender: WebhookSender, clock: Clock, max_tokens: int = MAX_TOKENS) -> None:
        self.sender = sender
        self.clock = clock
        self.max_tokens = max_tokens
        self._tokens: OrderedDict[TokenKey, Token] = OrderedDict()
        self._fetching: dict[TokenKey, asyncio.Future[Token]] = {}

    async def token(
        self, tenant: str, auth: OAuthClientCredentials, timeout_seconds: float
    ) -> tuple[str, bool]:
        """A token for ``auth`` and whether it was kept from before (a 401 to a kept token is
        worth one more try with a new one). ``TokenError`` when there is none."""
        key = token_key(tenant, auth)
        kept = self._tokens.get(key)
        if kept is not None and kept.expires_at > self.clock.now():
            self._tokens.move_to_end(key)
            return kept.value, True
        fetching = self._fetching.get(key)
        if fetching is not None:
            return (await asyncio.shield(fetching)).value, False
        future: asyncio.Future[Token] = asyncio.get_running_loop().create_future()
        self._fetching[key] = future
        try:
            token = await self._fetch(auth, timeout_seconds)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                # Cancelled: those waiting were not.
                exc = TokenError("token endpoint: the request was abandoned", retryable=True)
            future.set_exception(exc)
            # Those waiting see it; nobody else needs to.
            future.exception()
            raise
        else:
            future.set_result(token)
            self._keep(key, token)
            return token.value, False
        finally:
            del self._fetching[key]

    def forget(self, tenant: str, auth: OAuthClientCredentials, value: str) -> None:
        """Drop a kept token the webhook refused (unless a newer one replaced it already)."""
        key = token_key(tenant, auth)
        kept = self._tokens.get(key)
        if kept is not None and kept.value == value:
            del self._tokens[key]

    def _keep(self, key: TokenKey, token: Token) -> None:
        self._tokens[key] = token
        self._tokens.move_to_end(key)
        while len(self._tokens) > self.max_tokens:
            self._tokens.popitem(last=False)

    async def _fetch(self, auth: OAuthClientCredentials, timeout_seconds: float) -> Token:
        asked = self.clock.now()
        try:
            answer = await self.sender.send(token_request(auth, timeout_seconds))
        except WebhookError as exc:
            raise TokenError(f"token endpoint: {exc}", retryable=exc.retryable) from None
        document = _json(answer.body) if answer.body_complete else None
        if not 200 <= answer.status < 300:
            retryable = answer.status >= 500 or answer.status in (408, 429)
            raise TokenError(
                f"token endpoint: HTTP {answer.status}{_oauth_error(document)}",
                retryable=retryable,
            )
        if not isinstance(document, dict):
            raise TokenError("token endpoint: the answer is not a JSON object", retryable=True)
        value = document.get("access_token")
        kind = document.get("token_type")
        if not isinstance(value, str) or not value or not _header_safe(value):
            raise TokenError(
                "token endpoint: the answer has no usable access_token", retryable=True
            )
        if not isinstance(kind, str) or kind.lower() != "bearer":
            raise TokenError(
                "token endpoint: the token is not a bearer token (token_type)", retryable=False
            )
        return Token(value, asked + timedelta(seconds=_lifetime(document.get("expires_in"))))


def _lifetime(expires_in: object) -> float:
    """How long to keep a token: until a tenth of its life (at most ``EARLY_SECONDS``) before
    it expires."""
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = int(expires_in)
    if not isinstance(expires_in, int | float) or isinstance(expires_in, bool):
        return DEFAULT_LIFETIME_SECONDS
    seconds = max(0.0, float(expires_in))
    return seconds - min(EARLY_SECONDS, seconds / 10)


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _oauth_error(document: object) -> str:
    """``: invalid_client (the description)`` of an OAuth error answer, else nothing."""
    if not isinstance(document, dict) or not isinstance(document.get("error"), str):
        return ""
    text = document["error"]
    description = document.get("error_description")
    if isinstance(description, str) and description:
        text = f"{text} ({description})"
    return ": " + redact(text[:QUOTED])


def _header_safe(value: str) -> bool:
    return value.isascii() and value.isprintable()
