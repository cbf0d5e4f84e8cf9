"""The SSRF guard: which addresses a webhook may target.

A scheduler makes HTTP calls that its clients chose, from inside the network it runs in; without
a guard, a schedule could reach the cloud metadata service (169.254.169.254), an admin port on
loopback or any host of the private network. So by default a webhook may only target public
(globally routable, unicast) addresses. ``SCHEDULER_ALLOWED_NETWORKS`` opens chosen networks
(``scheduler dev`` opens loopback so its quick start can call a local server).

The check is made twice:
- when a schedule is accepted, on the host as written: an IP literal in any notation the system
  resolver would accept (``127.1``, ``2130706433``, ``0x7f.0.0.1``, ``[::ffff:127.0.0.1]``…) and
  the ``localhost`` names. Names are not resolved there: the API makes no DNS queries, and what a
  name resolves to then proves nothing about later;
- at fire time, by ``HttpSender``, on every address the host resolves to, and the connection is
  made to the addresses that were checked, so DNS cannot answer differently in between
  (rebinding).

A refusal names the rule that refused (private, loopback, link-local…) and the host as the
tenant wrote it, never the address a name resolved to: the refusal lands in the run history,
where an address would map the internal DNS of the network the executor runs in for any tenant.
The address is logged at DEBUG only (``target_refused``), for an operator.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# host name → the addresses it resolves to, as text (``socket.getaddrinfo``'s answers).
Resolver = Callable[[str], Sequence[str]]

LOCALHOST_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_LOOPBACK = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))
# What ``inet_aton`` may read as an IPv4 address: digits, hex digits, ``x`` and dots only.
_NUMERIC_HOST = re.compile(r"^[0-9a-fx.]+$")
# IPv6 prefixes that carry an IPv4 address a gateway will connect to (RFC 6052, RFC 8215).
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


class TargetRefused(ValueError):
    """The webhook's target is not allowed; ``str()`` names the host as written and the rule."""


def system_resolver(host: str) -> list[str]:
    """Every address ``host`` resolves to, in the system's order of preference."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


def literal_address(host: str) -> IPAddress | None:
    """The address a host names by itself, in any notation ``getaddrinfo`` accepts; else None."""
    name = host.strip("[]").rstrip(".").lower()
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(name):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return None
    return None


def non_public_reason(address: IPAddress) -> str | None:
    """The rule by which ``address`` is not a public unicast address (``"private"``,
    ``"loopback"``…: it reads after "is"), or None if it is one. It never names an address."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped
        if embedded is not None:
            return non_public_reason(embedded)
        carried = [address.sixtofour, *(address.teredo or ())]
        if any(address in network for network in _NAT64):
            carried.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        for inner in carried:
            if inner is not None and non_public_reason(inner) is not None:
                return "the IPv6 form (6to4, Teredo or NAT64) of a non-public IPv4 address"
    checks = (
        ("unspecified", address.is_unspecified),
        ("loopback", address.is_loopback),
        ("link-local (e.g. cloud metadata)", address.is_link_local),
        ("multicast", address.is_multicast),
        ("private", address.is_private),
        ("reserved", address.is_reserved),
        ("site-local", isinstance(address, ipaddress.IPv6Address) and address.is_site_local),
        ("not globally routable", not address.is_global),
    )
    for reason, applies in checks:
        if applies:
            return reason
    return None


class TargetPolicy:
    """Public unicast addresses, plus the networks ``allowed_networks`` opens."""

    def __init__(self, allowed_networks: Iterable[str] = ()) -> None:
        self.allowed = tuple(ipaddress.ip_network(n, strict=False) for n in allowed_networks)

    def refusal(self, address: IPAddress) -> str | None:
        """The rule by which a webhook may not connect to ``address`` (``non_public_reason``);
        None if it may."""
        plain = address
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            plain = address.ipv4_mapped
        if any(plain in network for network in self.allowed):
            return None
        return non_public_reason(plain)

    def check_url(self, url: str) -> None:
        """The check at creation: the host as written (see the module docstring).

        Raises ``TargetRefused`` for a refused literal address or ``localhost`` name, and
        ``ValueError`` for a URL whose host or port cannot be read.
        """
        parts = urlsplit(url)
        host = parts.hostname
        if not host:
            raise ValueError("the URL has no host")
        _ = parts.port  # ValueError for a port that is not a number from 0 to 65535
        try:
            # As the sender will: IDNA folds look-alikes (full-width digits, circled digits…)
            # into the ASCII they stand for, which may be a literal address.
            host = host if host.isascii() else host.encode("idna").decode("ascii")
        except UnicodeError:
            raise ValueError(f"{host!r} is not a valid host name") from None
        name = host.rstrip(".").lower()
        if name in LOCALHOST_NAMES or name.endswith(".localhost"):
            if all(self.refusal(address) for address in _LOOPBACK):
                raise TargetRefused(refused(host, "loopback"))
            return
        address = literal_address(host)
        if address is not None:
            rule = self.refusal(address)
            if rule is not None:
                raise TargetRefused(refused(host, rule, address))

    def resolve(self, host: str, resolver: Resolver) -> list[IPAddress]:
        """The check at fire time: the addresses to connect to, in the resolver's order, every
        answer of DNS checked.

        Raises ``TargetRefused`` if any address the host resolves to is refused (a name that
        answers both a public and a private address is not trusted with either), and ``OSError``
        if it does not resolve.
        """
        literal = literal_address(host)
        if literal is not None:
            rule = self.refusal(literal)
            if rule is not None:
                raise TargetRefused(refused(host, rule, literal))
            return [literal]
        addresses = list(
            dict.fromkeys(ipaddress.ip_address(text.split("%")[0]) for text in resolver(host))
        )
        if not addresses:
            raise OSError(f"{host} resolves to no address")
        for address in addresses:
            rule = self.refusal(address)
            if rule is not None:
                log.debug(
                    "refused target %s: it resolves to %s, which is %s",
                    host,
                    address,
                    rule,
                    extra={"event": "target_refused"},
                )
                raise TargetRefused(refused(host, rule, resolved=True))
        return addresses


def refused(host: str, rule: str, address: IPAddress | None = None, resolved: bool = False) -> str:
    """A refusal's message: the host as written and the rule. A host written as an address
    (``address``) is shown with it plainly when written in another notation (``0x7f.1``); a
    name that ``resolved`` to a refused address is not shown with it."""
    if resolved:
        subject = f"{host} resolves to an address that is"
    elif address is not None and host.strip("[]").lower() != str(address):
        subject = f"{host} ({address}) is"
    else:
        subject = f"{host} is"
    return (
        f"{subject} {rule}: webhooks may target only public addresses unless "
        "SCHEDULER_ALLOWED_NETWORKS allows it"
    )
