"""Requests a web page could make on a visitor's behalf: the ``Host`` asked for and the
``Origin`` of unsafe requests, checked before anything else (the API's and the console's alike).

Without keys (``SCHEDULER_API_AUTH=none``, what ``scheduler dev`` runs) whatever reaches the port
may act, and a page the developer visits reaches it through their browser, two ways:

- a cross-site request (a form, a ``fetch`` without CORS) carries the page's ``Origin``: an
  unsafe method (``POST``, ``PUT``, ``PATCH``, ``DELETE``) whose ``Origin`` is not the request's
  own is refused with 403, keys or not (no browser client of this API is on another origin: it
  allows no CORS);
- DNS rebinding (a name of the attacker's made to resolve to 127.0.0.1) makes the page
  same-origin, so it could also read the answers; its requests carry ``Host: <that name>``. A
  host the server does not answer for is refused with 421: it answers for IP address literals
  (no name to rebind), ``localhost`` and the names in ``SCHEDULER_ALLOWED_HOSTS`` (``*``: any).

The host check applies while requests need no key, and always once ``SCHEDULER_ALLOWED_HOSTS``
is set. With keys a rebinding page has none (the console's cookie is never sent to another
name), while a proxy or load balancer in front passes its own name, which would otherwise have
to be listed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
ANY_HOST = "*"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: its status, title and detail (a problem document's)."""

    status: int
    title: str
    detail: str


class BrowserGuard:
    """The host and origin checks of the module docstring, for every request of one app."""

    def __init__(self, allowed_hosts: tuple[str, ...], keys_required: Callable[[], bool]) -> None:
        """``allowed_hosts``: ``SCHEDULER_ALLOWED_HOSTS``; ``keys_required``: whether requests
        need a key now (the authenticator's answer)."""
        self.names = frozenset(name.lower().rstrip(".") for name in allowed_hosts)
        self.keys_required = keys_required

    def refusal(self, method: str, host: str, origin: str | None) -> Refusal | None:
        """Why a request for ``host`` (its ``Host`` header) from ``origin`` is refused, or
        ``None``."""
        if (self.names or not self.keys_required()) and not self.answers_for(host):
            return Refusal(
                421,
                "Misdirected Request",
                f"this server does not answer for host {host!r}: it answers for IP addresses, "
                "localhost and the names in SCHEDULER_ALLOWED_HOSTS",
            )
        if method in UNSAFE_METHODS and origin is not None and not same_origin(origin, host):
            return Refusal(
                403,
                "Forbidden",
                f"a {method} from origin {origin!r} is refused: only requests from this "
                "server's own pages, or without an Origin (not from a browser), may change it",
            )
        return None

    def answers_for(self, host: str) -> bool:
        if ANY_HOST in self.names:
            return True
        name = _hostname(host)
        if name is None:
            return False
        if name == "localhost" or name in self.names:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


def same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` (an ``Origin`` header) names the host and port of ``host`` (the
    request's ``Host``). The scheme is left out: behind a proxy that ends TLS the request
    arrives over plain HTTP from a page served over HTTPS."""
    try:
        parts = urlsplit(origin)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        asked = urlsplit(f"//{host}")
        asked_port = asked.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or parts.hostname is None:
        return False  # "null" (a sandboxed frame, a file), or no web origin at all
    return (parts.hostname, port) == (asked.hostname, asked_port)


def _hostname(host: str) -> str | None:
    """The name or address of a ``Host`` header, lowercased, without port or brackets."""
    try:
        name = urlsplit(f"//{host}").hostname
    except ValueError:
        return None
    return name.rstrip(".") if name else None
