"""Tests talk only to loopback: a guard that makes any other connection, or any DNS query, fail.

``loopback_only()`` patches ``socket.socket.connect``/``connect_ex`` and ``socket.getaddrinfo``:
a connection to an address outside 127.0.0.0/8 and ::1, or resolving a name other than
``localhost``, raises ``NonLoopbackConnection`` instead of reaching the network. Every attempted
address is recorded, so a test can assert that a refused target was never even tried.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest


class NonLoopbackConnection(AssertionError):
    """A test tried to reach something other than loopback."""


@dataclass
class Attempts:
    connects: list[str] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@contextmanager
def loopback_only() -> Iterator[Attempts]:
    attempts = Attempts()
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex
    original_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        if isinstance(address, tuple):
            host = str(address[0])
            attempts.connects.append(host)
            if not _is_loopback(host):
                raise NonLoopbackConnection(f"a test tried to connect to {address!r}")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        original_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return original_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        attempts.lookups.append(name)
        if name != "localhost" and not _is_loopback(name):
            raise NonLoopbackConnection(f"a test tried to resolve {name!r}")
        return original_getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", connect)
        patch.setattr(socket.socket, "connect_ex", connect_ex)
        patch.setattr(socket, "getaddrinfo", getaddrinfo)
        yield attempts
