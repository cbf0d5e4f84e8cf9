"""A schedule's secrets: sealed at rest and on queue 1, masked in every answer, kept out of logs.

The secret parts of a payload are the URL (its query and path may carry credentials),
the headers, the query parameters and the body. ``SecretBox`` seals them together into one
value (AES-256-GCM, authenticated encryption from ``cryptography``) wherever a definition is
written down: the store's row or document and queue 1's message; queue 2 carries a
revision's definition sealed whole (``shared.messages.carry``). Several keys may be
configured: the first seals, every one opens, so a key is rotated by putting a new one first,
resealing what is stored (``Store.reseal_definitions``, ``scheduler reseal``), and dropping the
old one. ``shared.definition_codec`` is how a definition is written down and read back with
them. Beside the sealed value the store keeps the URL's host and port, for search
(``shared.schedule_listing.target_of``): no answer masks them.

A definition written before sealing existed (a plain payload) is still read as it is, and is
sealed the next time the schedule is written (a replace, or a reseal).

Answers show a payload masked: a value (of a header, a query parameter, the URL's query or path,
a member of a JSON body) is replaced by ``MASK`` when its name matches a secret pattern
(``SCHEDULER_SECRET_HEADERS``) or when the value itself looks like a credential (an HTTP
authentication scheme with its credentials, a JWT, a well-known token prefix, a long random
string). A replace may send a masked value back as it was shown: the stored value is kept.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shared.errors import ConfigurationError, InvalidInput
from shared.model import JSON, FailureHook, Payload
from shared.redaction import MASK, is_secret_name, looks_secret, redact
from shared.targets import DeliveryPayload, payload_body
from shared.targets.sqs import QueuePayload

# A payload's secret fields (each kind's ``sealed_fields``) are sealed together into this one.
SEALED = "sealed"
UNREADABLE = "is masked: send the value itself, or the stored schedule's masked value as shown"
KEY_BYTES = 32
NONCE_BYTES = 12


def mask_value(name: str, value: Any, patterns: Iterable[str]) -> Any:
    """``MASK`` for a secret name; for another name, each value that looks secret."""
    if is_secret_name(name, patterns):
        return MASK
    if isinstance(value, list):
        return [MASK if isinstance(item, str) and looks_secret(item) else item for item in value]
    return MASK if isinstance(value, str) and looks_secret(value) else value


def mask_pairs(pairs: Mapping[str, Any], patterns: Iterable[str]) -> dict[str, Any]:
    patterns = tuple(patterns)
    return {name: mask_value(name, value, patterns) for name, value in pairs.items()}


def mask_url(url: str, patterns: Iterable[str]) -> str:
    """The URL with the values of secret query parameters and token-shaped path segments
    masked. (Credentials in the URL itself are refused at creation.)"""
    patterns = tuple(patterns)
    parts = urlsplit(url)
    path = "/".join(MASK if looks_secret(segment) else segment for segment in parts.path.split("/"))
    query = parts.query
    pairs = parse_qsl(query, keep_blank_values=True)
    masked = [(name, mask_value(name, value, patterns)) for name, value in pairs]
    if masked != pairs:
        query = urlencode(masked, safe="*")
    return urlunsplit(parts._replace(path=path, query=query))


def mask_body(body: JSON, patterns: Iterable[str]) -> JSON:
    """A JSON body with the values of secret-named members masked, and each string that looks
    secret masked whole or, in text such as a form (``client_secret=…``), in part."""
    patterns = tuple(patterns)
    if isinstance(body, dict):
        return {
            name: MASK if is_secret_name(name, patterns) else mask_body(value, patterns)
            for name, value in body.items()
        }
    if isinstance(body, list):
        return [mask_body(item, patterns) for item in body]
    if isinstance(body, str):
        return MASK if looks_secret(body) else redact(body, patterns)
    return body


def masked_payload(payload: DeliveryPayload, patterns: Iterable[str]) -> dict[str, JSON]:
    """The payload as an answer shows it (an OAuth client secret always masked)."""
    patterns = tuple(patterns)
    document = payload_body(payload)
    document["body"] = mask_body(payload.body, patterns)
    if isinstance(payload, Payload):
        document["url"] = mask_url(payload.url, patterns)
        document["headers"] = mask_pairs(payload.headers, patterns)
        document["queryParameters"] = mask_pairs(payload.query, patterns)
        if payload.auth is not None:
            document["auth"]["client_secret"] = MASK
    elif isinstance(payload, QueuePayload):
        document["queue_url"] = mask_url(payload.queue_url, patterns)
    return document


def masked_hook(hook: FailureHook | None, patterns: Iterable[str]) -> dict[str, JSON] | None:
    """The ``on_failure`` hook as an answer shows it."""
    if hook is None:
        return None
    patterns = tuple(patterns)
    return {"url": mask_url(hook.url, patterns), "headers": mask_pairs(hook.headers, patterns)}


def keep_masked_hook(
    hook: FailureHook | None, stored: FailureHook | None, patterns: Iterable[str]
) -> FailureHook | None:
    """``hook`` as sent; the stored one when it was sent back masked exactly as an answer
    showed it. A mask that matches nothing stored is refused (``InvalidInput`` naming
    ``on_failure``), as in ``keep_masked_secrets``."""
    if hook is None or not carries_mask(hook):
        return hook
    if stored is not None and hook.to_document() == masked_hook(stored, patterns):
        return stored
    raise InvalidInput(
        {"on_failure": "is masked: send the values themselves, or the stored ones as shown"}
    )


def _contains_mask(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_contains_mask(item) for item in value.values())
    if isinstance(value, list):
        return any(_contains_mask(item) for item in value)
    return isinstance(value, str) and MASK in value


def carries_mask(part: DeliveryPayload | FailureHook) -> bool:
    """Whether a value of the payload's URL, headers, query parameters, body or OAuth client
    secret (of a queue's URL or a message's body), or of the ``on_failure`` hook's URL or
    headers, holds ``MASK``."""
    if isinstance(part, FailureHook):
        return _contains_mask(part.to_document())
    if isinstance(part, Payload):
        values = [part.url, *part.headers.values(), *part.query.values(), part.body]
        if part.auth is not None:
            values.append(part.auth.client_secret)
    elif isinstance(part, QueuePayload):
        values = [part.queue_url, part.body]
    else:
        values = [part.body]
    return any(_contains_mask(value) for value in values)


def keep_masked_secrets(
    payload: DeliveryPayload, stored: DeliveryPayload | None, patterns: Iterable[str]
) -> DeliveryPayload:
    """``payload`` with each value sent back masked, exactly as an answer showed the stored
    one, replaced by the stored value: a replace can keep a secret it cannot read.

    A mask that matches nothing stored is refused (``InvalidInput`` naming the field): it would
    otherwise be sent to the target as the literal ``********``.
    """
    patterns = tuple(patterns)
    errors: dict[str, str] = {}
    same_kind = stored if stored is not None and stored.kind == payload.kind else None
    body = payload.body
    if _contains_mask(body):
        if same_kind is not None and mask_body(same_kind.body, patterns) == body:
            body = same_kind.body
        else:
            errors["payload.body"] = UNREADABLE
    if isinstance(payload, Payload):
        kept = _keep_http(payload, same_kind if isinstance(same_kind, Payload) else None, patterns)
        errors.update(kept[1])
        result: DeliveryPayload = replace(kept[0], body=body, templated=None)
    elif isinstance(payload, QueuePayload):
        queue_url = payload.queue_url
        if MASK in queue_url:
            if isinstance(same_kind, QueuePayload) and (
                mask_url(same_kind.queue_url, patterns) == queue_url
            ):
                queue_url = same_kind.queue_url
            else:
                errors["payload.queue_url"] = UNREADABLE
        result = replace(payload, queue_url=queue_url, body=body, templated=None)
    else:
        result = replace(payload, body=body, templated=None)
    if errors:
        raise InvalidInput(errors)
    # Whether it holds placeholders is worked out anew, from the values kept.
    return result


def _keep_http(
    payload: Payload, stored: Payload | None, patterns: tuple[str, ...]
) -> tuple[Payload, dict[str, str]]:
    """The HTTP payload's URL, headers, query parameters and OAuth client secret, each kept
    as stored where it came back masked; and the fields whose mask matches nothing stored."""
    errors: dict[str, str] = {}

    def kept(field: str, name: str, value: Any, stored_pairs: Mapping[str, Any]) -> Any:
        if not _contains_mask(value):
            return value
        fold = field == "headers"
        for stored_name, stored_value in stored_pairs.items():
            same = stored_name.lower() == name.lower() if fold else stored_name == name
            if same and mask_value(stored_name, stored_value, patterns) == value:
                return stored_value
        errors[f"payload.{field}.{name}"] = UNREADABLE
        return value

    url = payload.url
    if MASK in url:
        if stored is not None and mask_url(stored.url, patterns) == url:
            url = stored.url
        else:
            errors["payload.url"] = UNREADABLE
    headers = {
        name: kept("headers", name, value, stored.headers if stored else {})
        for name, value in payload.headers.items()
    }
    query = {
        name: kept("queryParameters", name, value, stored.query if stored else {})
        for name, value in payload.query.items()
    }
    auth = payload.auth
    if auth is not None and auth.client_secret == MASK:
        if stored is not None and stored.auth is not None:
            auth = replace(auth, client_secret=stored.auth.client_secret)
        else:
            errors["payload.auth.client_secret"] = UNREADABLE
    return Payload(
        method=payload.method,
        url=url,
        headers=headers,
        query=query,
        body=payload.body,
        timeout_seconds=payload.timeout_seconds,
        calls_per_host=payload.calls_per_host,
        auth=auth,
        expect=payload.expect,
    ), errors


class SecretBox:
    """Seals and opens the secret parts of payloads with the configured keys (first seals).

    A sealed value is ``<key id>.<URL-safe base64 of nonce, ciphertext and tag>``, AES-256-GCM
    with a random 96-bit nonce. The key id (the first 8 hex digits of the key's SHA-256) names
    the key that opens it, so opening tries that one key only.
    """

    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise ConfigurationError("SCHEDULER_SECRET_KEYS: no key")
        raw_keys = [_key_bytes(key) for key in keys]
        self._ciphers = {_key_id(raw): AESGCM(raw) for raw in raw_keys}
        self._sealing_id = _key_id(raw_keys[0])

    def seal(self, document: Mapping[str, JSON], fields: Collection[str]) -> dict[str, JSON]:
        """A definition's document (``ScheduleDefinition.to_document``) with its payload's
        secret parts (``fields``: its kind's ``sealed_fields``) sealed, and its ``on_failure``
        hook (URL and headers) sealed whole."""
        sealed = dict(document)
        payload = dict(sealed["payload"])
        secret = {name: payload.pop(name) for name in fields if name in payload}
        payload[SEALED] = self._seal(secret)
        sealed["payload"] = payload
        if sealed.get("on_failure") is not None:
            sealed["on_failure"] = {SEALED: self._seal(sealed["on_failure"])}
        return sealed

    def open(self, document: Mapping[str, JSON]) -> dict[str, JSON]:
        """The plain document of one written by ``seal``; one written before sealing existed
        is already plain. ``ConfigurationError`` when no configured key opens it."""
        opened = dict(document)
        payload = opened.get("payload")
        if isinstance(payload, Mapping) and SEALED in payload:
            plain = {name: value for name, value in payload.items() if name != SEALED}
            plain.update(json.loads(self._open(payload[SEALED])))
            opened["payload"] = plain
        hook = opened.get("on_failure")
        if isinstance(hook, Mapping) and SEALED in hook:
            opened["on_failure"] = json.loads(self._open(hook[SEALED]))
        return opened

    def sealed_by_first(self, document: Mapping[str, JSON]) -> bool:
        """Whether ``document``'s payload is sealed with the first key (the one that seals)."""
        payload = document.get("payload")
        sealed = payload.get(SEALED) if isinstance(payload, Mapping) else None
        return isinstance(sealed, str) and sealed.startswith(f"{self._sealing_id}.")

    def seal_text(self, text: str, purpose: str) -> str:
        """``text`` sealed for ``purpose`` (authenticated with it: it opens for no other)."""
        return self._seal_bytes(text.encode(), purpose.encode())

    def open_text(self, sealed: str, purpose: str) -> str | None:
        """What ``seal_text`` sealed for ``purpose``; ``None`` if no configured key opens it
        for that purpose (altered, sealed for another, or with a key since dropped)."""
        try:
            return self._open(sealed, purpose.encode()).decode()
        except (ConfigurationError, UnicodeDecodeError):
            return None

    def _seal(self, secret: JSON) -> str:
        return self._seal_bytes(json.dumps(secret, separators=(",", ":")).encode(), None)

    def _seal_bytes(self, plain: bytes, associated: bytes | None) -> str:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self._sealing_id].encrypt(nonce, plain, associated)
        token = base64.urlsafe_b64encode(nonce + sealed).decode("ascii")
        return f"{self._sealing_id}.{token}"

    def _open(self, sealed: str, associated: bytes | None = None) -> bytes:
        key_id, _, token = sealed.partition(".")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise ConfigurationError(
                f"a schedule's payload is sealed with key {key_id!r}, which is not in "
                "SCHEDULER_SECRET_KEYS"
            )
        try:
            raw = base64.urlsafe_b64decode(token)
            return cipher.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated)
        except (InvalidTag, ValueError) as exc:
            raise ConfigurationError(
                f"a schedule's sealed payload does not open with key {key_id!r}: it was altered"
            ) from exc


def _key_bytes(key: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(key.strip())
    except ValueError:
        raw = b""
    if len(raw) != KEY_BYTES:
        raise ConfigurationError(
            "SCHEDULER_SECRET_KEYS: each key is 32 bytes in URL-safe base64 (44 characters), as "
            "`scheduler secret-key` prints"
        )
    return raw


def _key_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:8]


def new_secret_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def write_private(path: Path, text: str) -> None:
    """Create ``path`` readable by its owner only (0600), from the first byte on."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def key_file_keys(path: Path) -> tuple[str, ...]:
    """The keys in ``path``, one a line, newest first; a new file with one key if missing.

    Several processes may start at once: the new file is written aside and linked into place,
    so the first one wins and none reads a half-written file."""
    if not path.exists():
        # Beside the database, as private as it: the folder holds secrets.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = path.with_name(f".{path.name}.{os.getpid()}")
        draft.unlink(missing_ok=True)
        write_private(draft, new_secret_key() + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made it first
        finally:
            draft.unlink()
    keys = tuple(line.strip() for line in path.read_text().splitlines() if line.strip())
    if not keys:
        raise ConfigurationError(f"{path}: no secret key in the file")
    return keys
