"""The SSRF guard at creation (API) and at fire time (``HttpSender``), without leaving loopback.

Every test runs under ``loopback_only()``: a connection anywhere but loopback, or a DNS query,
fails the test. Names are resolved by stubs; the targets that are allowed are local servers.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import ssl
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from execution_worker.worker import Executor
from scheduler_service.app import create_app
from shared.adapters.http_sender import HttpSender
from shared.backends import open_backends
from shared.model import ExecutionStatus
from shared.ports import WebhookError, WebhookRequest
from shared.ssrf import Resolver, TargetPolicy
from tests.support.harness import API, Pipeline, sqlite_settings
from tests.support.network_guard import Attempts, NonLoopbackConnection, loopback_only
from tests.support.receiver import Call, running_receiver
from tests.support.senders import response_of, send

LOOPBACK = ("127.0.0.0/8", "::1/128")


@pytest.fixture(autouse=True)
def guard() -> Iterator[Attempts]:
    with loopback_only() as attempts:
        yield attempts


def resolver_of(*answers: Sequence[str]) -> tuple[list[str], Resolver]:
    """A resolver answering each call with the next of ``answers`` (the last one repeats)."""
    asked: list[str] = []

    def resolve(host: str) -> Sequence[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    return asked, resolve


def request(url: str) -> WebhookRequest:
    return WebhookRequest("POST", url, {"X-Test": "1"}, b"{}", timeout_seconds=5.0)


def test_the_guard_fixture_fails_loudly_on_a_non_loopback_connect() -> None:
    import socket

    with socket.socket() as sock, pytest.raises(NonLoopbackConnection):
        sock.connect(("10.255.255.1", 80))


def test_a_name_resolving_to_a_private_address_is_refused_without_connecting(
    guard: Attempts,
) -> None:
    for answer in (["10.0.0.7"], ["169.254.169.254"], ["93.184.216.34", "192.168.1.1"], ["::1"]):
        asked, resolver = resolver_of(answer)
        sender = HttpSender(resolver=resolver)
        with pytest.raises(WebhookError) as refused:
            response_of(*send(sender, request("http://hooks.example.com/run")))
        assert not refused.value.retryable
        assert "refused target" in str(refused.value)
        assert asked == ["hooks.example.com"]
    for literal in ("http://127.1:9/", "http://[::ffff:10.0.0.1]/", "http://2130706433/"):
        with pytest.raises(WebhookError, match="refused target"):
            response_of(*send(HttpSender(), request(literal)))
    assert guard.connects == []


def test_each_checked_address_is_tried_in_order_until_one_answers(guard: Attempts) -> None:
    # localhost answering ::1 first, where nothing listens: the call reaches 127.0.0.1, within
    # the call's one deadline, and connects to nothing but what the guard checked.
    with running_receiver() as receiver, socket.socket(socket.AF_INET6) as closed:
        port = receiver.server.server_port
        closed.bind(("::1", port))  # the same port on ::1, bound and not listening: refused
        asked, resolver = resolver_of(["::1", "127.0.0.1"])
        sender = HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver)
        [response] = send(sender, request(f"http://localhost:{port}/hook"))
        assert response_of(response).status == 200
        assert asked == ["localhost"]
        assert guard.connects == ["::1", "127.0.0.1"]
        assert len(receiver.calls) == 1


def test_when_every_address_refuses_the_failure_says_why_and_names_none(guard: Attempts) -> None:
    with socket.socket(socket.AF_INET6) as closed6, socket.socket() as closed4:
        closed6.bind(("::1", 0))
        port = closed6.getsockname()[1]
        closed4.bind(("127.0.0.1", port))
        _, resolver = resolver_of(["::1", "127.0.0.1"])
        sender = HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver)
        with pytest.raises(WebhookError) as failed:
            response_of(*send(sender, request(f"http://hooks.test:{port}/hook")))
    assert str(failed.value) == f"cannot connect to hooks.test:{port}: Connection refused"
    assert failed.value.retryable
    assert guard.connects == ["::1", "127.0.0.1"]


def test_a_name_with_one_refused_address_is_refused_whole_without_connecting(
    guard: Attempts,
) -> None:
    _, resolver = resolver_of(["127.0.0.1", "10.0.0.9"])
    sender = HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver)
    with pytest.raises(WebhookError) as refused:
        response_of(*send(sender, request("http://hooks.test:9/hook")))
    assert str(refused.value) == (
        "refused target: hooks.test resolves to an address that is private: webhooks may "
        "target only public addresses unless SCHEDULER_ALLOWED_NETWORKS allows it"
    )
    assert guard.connects == []


def test_an_unresolvable_name_is_a_retryable_failure() -> None:
    def nowhere(host: str) -> Sequence[str]:
        raise OSError("Name or service not known")

    with pytest.raises(WebhookError) as failed:
        response_of(*send(HttpSender(resolver=nowhere), request("http://nowhere.example/")))
    assert failed.value.retryable


def test_the_connection_goes_to_the_address_checked_and_dns_is_asked_once_per_connection(
    guard: Attempts,
) -> None:
    # DNS rebinding: the first answer is allowed, the next points inside the network. A
    # connection kept alive stays with the address it was checked for; a new one asks again.
    asked, resolver = resolver_of(["127.0.0.1"], ["10.0.0.1"])
    with running_receiver() as receiver:
        port = receiver.server.server_port
        first, kept_alive = send(
            HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver),
            request(f"http://rebind.example:{port}/hook?x=1"),
            request(f"http://rebind.example:{port}/hook"),
        )
        assert asked == ["rebind.example"]
        assert response_of(kept_alive).status == 200
        [second] = send(
            HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver),
            request(f"http://rebind.example:{port}/hook"),
        )
        assert response_of(first).status == 200
        call, _ = receiver.wait_for(2, 5)
        assert call.headers["host"] == f"rebind.example:{port}"
        assert (call.path, call.query) == ("/hook", {"x": ["1"]})
        with pytest.raises(WebhookError, match="refused target"):
            response_of(second)
        assert asked == ["rebind.example", "rebind.example"]
        assert guard.connects == ["127.0.0.1"]  # the new connection was never made
        assert len(receiver.calls) == 2


def test_redirects_are_answers_not_followed(guard: Attempts) -> None:
    def redirect(call: Call) -> tuple[int, dict[str, str]]:
        return 302, {"Location": "http://169.254.169.254/latest/meta-data/"}

    sender = HttpSender(policy=TargetPolicy(LOOPBACK))
    with running_receiver(redirect) as receiver:
        [response] = send(sender, request(f"{receiver.url}/hook"))
    assert response_of(response).status == 302
    assert guard.connects == ["127.0.0.1"]


# -- HTTPS: SNI and certificate checked against the name, connection to the checked address ---


def certificate_authority(directory: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA (its PEM) and a server certificate for ``name`` signed by it (cert, key)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = (directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, Path, list[str | None]]]:
    ca, cert, key = certificate_authority(tmp_path, "hooks.test")
    server_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204)
            self.send_header("X-Seen-Host", self.headers.get("Host", ""))
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, ca, server_names
    finally:
        server.shutdown()
        server.server_close()


def test_https_sends_the_name_as_sni_and_verifies_the_certificate_against_it(
    tls_server: tuple[int, Path, list[str | None]], guard: Attempts
) -> None:
    port, ca, server_names = tls_server
    _, resolver = resolver_of(["127.0.0.1"])
    sender = HttpSender(policy=TargetPolicy(LOOPBACK), resolver=resolver, ca_certs=str(ca))
    good, other = send(
        sender,
        request(f"https://hooks.test:{port}/run"),
        # The same address under a name the certificate does not carry: verification fails.
        request(f"https://other.test:{port}/run"),
    )
    response = response_of(good)
    assert response.status == 204
    assert response.headers["X-Seen-Host"] == f"hooks.test:{port}"
    assert server_names == ["hooks.test", "other.test"]
    assert guard.connects == ["127.0.0.1", "127.0.0.1"]
    with pytest.raises(WebhookError, match=r"(?i)certificate|hostname"):
        response_of(other)


# -- the API refuses at creation; the pipeline refuses at fire time ---------------------------


BODY: dict[str, Any] = {
    "name": "ssrf",
    "schedule": {"cron": "@every 1s"},
    "payload": {"method": "POST", "url": "http://placeholder/"},
}


def with_url(url: str) -> dict[str, Any]:
    return {**BODY, "payload": {**BODY["payload"], "url": url}}


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/",
        "http://[fd00::1]/",
        "http://0x0a000005/",
        "http://192.168.1.1:8080/",
        "http://224.0.0.1/",
    ],
)
def test_the_api_refuses_non_public_targets_at_creation(tmp_path: Path, url: str) -> None:
    settings = sqlite_settings(tmp_path)
    backends = open_backends(settings)
    try:
        response = (
            create_app(settings, backends).test_client().post(f"{API}/schedule", json=with_url(url))
        )
        assert response.status_code == 400
        [error] = response.get_json()["errors"]
        assert error["field"] == "payload.url"
        assert "refused target" in error["message"]
        assert backends.queues.mutations.depth().visible == 0
    finally:
        backends.close()


def test_the_api_accepts_names_and_allowed_networks_without_any_dns(
    tmp_path: Path, guard: Attempts
) -> None:
    settings = sqlite_settings(tmp_path)  # allows loopback, like scheduler dev
    backends = open_backends(settings)
    try:
        client = create_app(settings, backends).test_client()
        for url in ("https://hooks.example.com/x", "http://127.0.0.1:9/", "http://localhost:9/"):
            assert client.post(f"{API}/schedule", json=with_url(url)).status_code == 202, url
        closed = settings.with_changes(allowed_networks=())
        strict = create_app(closed, backends).test_client()
        assert (
            strict.post(f"{API}/schedule", json=with_url("http://127.0.0.1:9/")).status_code == 400
        )
    finally:
        backends.close()
    assert guard.lookups == [] and guard.connects == []


def test_a_name_that_rebinds_to_a_private_address_fails_at_fire_time_without_a_call(
    tmp_path: Path, guard: Attempts
) -> None:
    settings = sqlite_settings(tmp_path)
    backends = open_backends(settings)
    pipeline = Pipeline(settings, backends)
    _, resolver = resolver_of(["10.9.8.7"])
    pipeline.executor = Executor(
        backends.store,
        backends.queues.occurrences,
        backends.queues.dead_letters,
        HttpSender(policy=TargetPolicy(settings.allowed_networks), resolver=resolver),
        settings,
    )
    body = {
        **with_url("http://internal.example/admin"),
        "schedule": {"at": "2020-01-01T00:00:00Z", "fire_if_past": True},  # once, now
        "retry": {"max_attempts": 3},
    }
    pipeline.start()
    try:
        answer = pipeline.client.post(f"{API}/schedule", json=body)
        assert answer.status_code == 202
        schedule_id = answer.get_json()["id"]
        pipeline.wait_until_stored(schedule_id)
        history: list[dict[str, Any]] = []
        for _ in range(200):
            history = pipeline.client.get(f"{API}/schedule/{schedule_id}/executions").get_json()[
                "items"
            ]
            if history and history[0]["status"] == ExecutionStatus.FAILED.value:
                break
            threading.Event().wait(0.05)
        [execution] = history
        assert execution["status"] == "failed"
        assert execution["attempts"] == 1  # refused targets are not retried
        # The rule and the host as the tenant wrote it; never the address it resolved to,
        # which would map the network's internal DNS for any tenant.
        assert execution["error"].startswith(
            "refused target: internal.example resolves to an address that is private"
        )
        assert "10.9.8" not in json.dumps(history)
    finally:
        pipeline.stop()
        backends.close()
    assert guard.connects == []
