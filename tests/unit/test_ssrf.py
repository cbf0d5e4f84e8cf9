"""The SSRF guard's rules, with a stubbed resolver: no test here resolves or connects anything."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Sequence

import pytest

from shared.ssrf import (
    Resolver,
    TargetPolicy,
    TargetRefused,
    literal_address,
    non_public_reason,
)
from tests.support.network_guard import Attempts, loopback_only


@pytest.fixture(autouse=True)
def no_network() -> Iterator[Attempts]:
    with loopback_only() as attempts:
        yield attempts
    assert attempts.connects == [] and attempts.lookups == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.254",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "100.64.0.1",  # carrier-grade NAT
        "0.0.0.0",
        "224.0.0.1",
        "239.255.255.250",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.10",  # documentation
        "198.18.0.1",  # benchmarking
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2001:db8::1",
    ],
)
def test_non_public_addresses_are_refused_by_default(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert non_public_reason(ip) is not None
    assert TargetPolicy().refusal(ip) is not None


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert TargetPolicy().refusal(ipaddress.ip_address(address)) is None


def test_allowed_networks_open_exactly_what_they_name() -> None:
    policy = TargetPolicy(["127.0.0.0/8", "10.20.0.0/16", "::1/128"])
    for allowed in ("127.0.0.1", "10.20.3.4", "::1", "::ffff:127.0.0.1"):
        assert policy.refusal(ipaddress.ip_address(allowed)) is None, allowed
    for refused in ("10.21.0.1", "169.254.169.254", "fe80::1", "192.168.0.1"):
        assert policy.refusal(ipaddress.ip_address(refused)) is not None, refused


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("[::1]", "::1"),
        ("::ffff:a9fe:a9fe", "::ffff:a9fe:a9fe"),
        ("example.com", None),
        ("cafe", None),
        ("1e100.net", None),
    ],
)
def test_literal_addresses_in_every_notation(host: str, expected: str | None) -> None:
    found = literal_address(host)
    assert (str(found) if found else None) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://127.1:8080/x",
        "http://2130706433/",
        "http://0x7f000001/",
        "http://[::1]:9000/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/internal",
        "https://192.168.0.1/",
        "http://localhost:9000/",
        "http://LOCALHOST./",
        "http://api.localhost/",
        "http://0.0.0.0:80/",
        # Look-alike digits that IDNA folds into a loopback address.
        "http://\u2460\u2461\u2466.0.0.1/",
        "http://\uff11\uff12\uff17.0.0.1/",
    ],
)
def test_creation_refuses_non_public_literals_and_localhost(url: str) -> None:
    with pytest.raises(TargetRefused):
        TargetPolicy().check_url(url)


def test_creation_accepts_names_without_resolving_them_and_allowed_literals() -> None:
    TargetPolicy().check_url("https://hooks.example.com/run")
    TargetPolicy().check_url("http://93.184.216.34/")
    TargetPolicy(["127.0.0.0/8"]).check_url("http://127.0.0.1:9000/")
    TargetPolicy(["127.0.0.0/8"]).check_url("http://localhost:9000/")
    with pytest.raises(ValueError, match=r"(?i)port"):
        TargetPolicy().check_url("http://example.com:99999/")


def stub(answers: dict[str, Sequence[str]]) -> tuple[list[str], Resolver]:
    asked: list[str] = []

    def resolver(host: str) -> Sequence[str]:
        asked.append(host)
        if host not in answers:
            raise OSError(f"no such host {host}")
        return answers[host]

    return asked, resolver


def test_fire_time_checks_every_resolved_address() -> None:
    asked, resolver = stub(
        {
            "public.example": ["93.184.216.34", "2606:2800:220:1::1"],
            "rebound.example": ["10.0.0.7"],
            "mixed.example": ["93.184.216.34", "127.0.0.1"],
            "metadata.example": ["169.254.169.254"],
            "empty.example": [],
        }
    )
    policy = TargetPolicy()
    assert [str(address) for address in policy.resolve("public.example", resolver)] == [
        "93.184.216.34",
        "2606:2800:220:1::1",
    ]
    for host in ("rebound.example", "mixed.example", "metadata.example"):
        with pytest.raises(TargetRefused, match=host):
            policy.resolve(host, resolver)
    with pytest.raises(OSError):
        policy.resolve("empty.example", resolver)
    with pytest.raises(OSError):
        policy.resolve("unknown.example", resolver)
    # A literal is not resolved at all.
    with pytest.raises(TargetRefused):
        policy.resolve("127.1", resolver)
    assert "127.1" not in asked


@pytest.mark.parametrize(
    ("answers", "rule"),
    [
        (["10.0.0.5"], "private"),
        (["93.184.216.34", "192.168.7.7"], "private"),
        (["127.0.0.9"], "loopback"),
        (["169.254.169.254"], "link-local"),
        (["fd12:3456::9"], "private"),
        (["64:ff9b::a00:5"], "IPv6 form (6to4, Teredo or NAT64) of a non-public IPv4 address"),
    ],
)
def test_a_fire_time_refusal_names_the_host_and_the_rule_never_the_resolved_address(
    answers: list[str], rule: str
) -> None:
    _, resolver = stub({"intranet.example": answers})
    with pytest.raises(TargetRefused) as refusal:
        TargetPolicy().resolve("intranet.example", resolver)
    message = str(refusal.value)
    assert message.startswith("intranet.example resolves to an address that is ")
    assert rule in message
    for address in answers:
        assert address not in message
    assert "10.0.0" not in message and "a00:5" not in message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://10.0.0.5/", "10.0.0.5 is private"),
        ("http://0x0a000005/", "0x0a000005 (10.0.0.5) is private"),
        ("http://[::1]:9/", "::1 is loopback"),
        ("http://localhost:9/", "localhost is loopback"),
        ("http://169.254.169.254/", "169.254.169.254 is link-local"),
        ("http://[2002:7f00:1::1]/", "2002:7f00:1::1 is the IPv6 form (6to4, Teredo or NAT64)"),
    ],
)
def test_a_creation_refusal_names_the_host_as_written_and_the_rule(url: str, shown: str) -> None:
    with pytest.raises(TargetRefused) as refusal:
        TargetPolicy().check_url(url)
    assert str(refusal.value).startswith(shown)
