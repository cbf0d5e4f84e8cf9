"""Recognising secrets in text: names that say a value is secret, values shaped like
credentials, and ``redact`` for free text (log lines, error messages).

No I/O and no domain imports: the model, the logs and ``shared.secrets`` all use it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable

MASK = "********"
# Names whose values are secret, as case-insensitive shell patterns (SCHEDULER_SECRET_HEADERS).
DEFAULT_SECRET_NAMES: tuple[str, ...] = (
    "*authorization*",
    "*authentication*",
    "*auth",
    "*cookie*",
    "key",
    "*token*",
    "*-key",
    "*_key",
    "*apikey*",
    "*secret*",
    "*password*",
    "*passwd*",
    "pwd",
    "*credential*",
    "*signature*",
    "sig",
    "*session*",
)

# "Basic …", "Bearer …", "Digest …", "Token …" and the other registered HTTP auth schemes.
_SCHEME_NAMES = (
    "basic",
    "bearer",
    "digest",
    "token",
    "negotiate",
    "ntlm",
    "hoba",
    "mutual",
    "vapid",
    "dpop",
    "gnap",
    "aws4-hmac-sha256",
    "scram-sha-1",
    "scram-sha-256",
)
_SCHEME_WORDS = "|".join(re.escape(name) for name in _SCHEME_NAMES)
_AUTH_SCHEME = re.compile(rf"\b(?:{_SCHEME_WORDS})\s+(?=\S)", re.IGNORECASE)
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# Tokens whose prefix says what they are: GitHub, GitLab, Slack, Stripe, OpenAI-style "sk-",
# AWS access key ids, Google API keys, Standard Webhooks secrets.
_KNOWN_TOKEN = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|glpat-[\w-]{20,}|xox[abposr]-[\w-]{10,}"
    r"|[sr]k_(?:live|test)_\w{10,}|sk-[\w-]{20,}|AKIA[0-9A-Z]{16}|AIza[\w-]{35}"
    r"|whsec_[A-Za-z0-9+/=]{16,})"
)
# A long run of base64 or hex characters (padding only at its end) may be a key; whether it
# looks random enough, ``_random_looking`` decides.
_LONG_RUN = re.compile(r"[A-Za-z0-9+/_-]{32,}={0,2}")
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_secret_name(name: str, patterns: Iterable[str]) -> bool:
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern.lower()) for pattern in patterns)


def _random_looking(run: str) -> bool:
    """Hex with letters and digits, or base64 mixing digits and both cases with few separators
    (a slug like ``nightly-report-2026`` has many, a random key about one in 32)."""
    core = run.rstrip("=")
    if _UUID.fullmatch(core):
        return False  # an id, not a key
    digits = sum(c.isdigit() for c in core)
    if _HEX.fullmatch(core):
        return 0 < digits < len(core)
    upper = sum(c.isupper() for c in core)
    lower = sum(c.islower() for c in core)
    separators = sum(c in "-_" for c in core)
    return digits >= 2 and upper >= 2 and lower >= 2 and separators * 8 <= len(core)


def _credential_looking(text: str) -> bool:
    """After an auth scheme in free text: not a word (``token expired``) but a credential."""
    mixed = any(c.islower() for c in text) and any(c.isupper() for c in text)
    return len(text) >= 6 and (mixed or any(not c.isalpha() for c in text))


def looks_secret(value: str) -> bool:
    """A credential by its shape, whatever its name: an auth scheme with credentials, a JWT, a
    known token prefix, or a long random-looking string."""
    if _AUTH_SCHEME.match(value.strip()) or _JWT.search(value) or _KNOWN_TOKEN.search(value):
        return True
    return any(_random_looking(run) for run in _LONG_RUN.findall(value))


# Values end at a quote or a backslash: a JSON line's escapes stay whole.
_USERINFO = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)(?P<user>[^/@\s:\"'\\]*):[^/@\s\"'\\]+@")
_SCHEME_CREDENTIAL = re.compile(
    rf"(?P<scheme>\b(?:{_SCHEME_WORDS}))\s+(?P<credential>[^\s\"'\\,;]+)", re.IGNORECASE
)
# Each starts only where a name or a run starts, so a long line is scanned once.
_PAIR = re.compile(r"(?<![\w.~-])(?P<name>[\w.~-]+)=(?P<value>[^&\s\"'\\,;#]+)")
_KNOWN_TOKEN_START = re.compile(r"(?<![\w-])" + _KNOWN_TOKEN.pattern)
_KNOWN_PREFIXES = (
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "k_live_",
    "k_test_",
    "sk-",
    "AKIA",
    "AIza",
    "whsec_",
)
_LONG_RUN_START = re.compile(r"(?<![A-Za-z0-9+/_=-])" + _LONG_RUN.pattern)


def _mask_named(
    pattern: re.Pattern[str],
    text: str,
    patterns: tuple[str, ...],
    masked: Callable[[re.Match[str]], str],
) -> str:
    """``text`` with each match of ``pattern`` whose ``name`` group is a secret name (by
    ``patterns``) replaced by ``masked`` of it."""
    return pattern.sub(
        lambda match: masked(match) if is_secret_name(match["name"], patterns) else match[0], text
    )


def redact(text: str, patterns: Iterable[str] = DEFAULT_SECRET_NAMES) -> str:
    """``text`` (a log line, an error message) with anything that looks secret masked:
    passwords in URLs, ``name=value`` pairs with a secret name, credentials after an HTTP auth
    scheme, JWTs, known token prefixes and long random-looking strings."""
    patterns = tuple(patterns)
    if "://" in text and "@" in text:
        text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    if "=" in text:
        text = _mask_named(_PAIR, text, patterns, lambda m: f"{m['name']}={MASK}")
    lowered = text.lower()
    if any(scheme in lowered for scheme in _SCHEME_NAMES):
        text = _SCHEME_CREDENTIAL.sub(
            lambda m: f"{m['scheme']} {MASK}" if _credential_looking(m["credential"]) else m[0],
            text,
        )
    if "eyJ" in text:
        text = _JWT.sub(MASK, text)
    if any(prefix in text for prefix in _KNOWN_PREFIXES):
        text = _KNOWN_TOKEN_START.sub(MASK, text)
    return _LONG_RUN_START.sub(lambda m: MASK if _random_looking(m[0]) else m[0], text)


# A JSON member whose value is a string: ``"name": "value"`` (escapes kept whole).
_JSON_MEMBER = re.compile(r'"(?P<name>[\w.~-]+)"(?P<colon>\s*:\s*)"(?P<value>(?:[^"\\]|\\.)*)"')


def redact_body(text: str, patterns: Iterable[str] = DEFAULT_SECRET_NAMES) -> str:
    """``redact`` for the start of an HTTP body, which may be JSON cut short: also the string
    values of members with a secret name (``"access_token": "…"``)."""
    patterns = tuple(patterns)
    if '"' in text:
        text = _mask_named(
            _JSON_MEMBER, text, patterns, lambda m: f'"{m["name"]}"{m["colon"]}"{MASK}"'
        )
    return redact(text, patterns)
