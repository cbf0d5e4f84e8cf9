"""Token auth to HTTP targets: OAuth 2.0 client credentials against a token endpoint the test
runs. The token is fetched once and kept until shortly before it expires, fetched again after a
401 to a kept one (once), shared by calls at once, and never shown."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs

from shared.adapters.http_sender import HttpSender
from shared.adapters.http_target import HttpTarget, one_signer
from shared.adapters.oauth_tokens import TokenSource
from shared.model import Occurrence, Payload
from shared.ports import Delivered
from shared.ssrf import TargetPolicy
from shared.targets.http import OAuthClientCredentials
from tests.support.clocks import FixedClock
from tests.support.receiver import Call, Receiver, running_receiver

LOOPBACK = TargetPolicy(("127.0.0.0/8",))
START = datetime(2030, 1, 1, tzinfo=UTC)


@dataclass
class TokenEndpoint:
    """Issues ``tok-1``, ``tok-2``… (``expires_in`` seconds each), or answers ``refuse``."""

    expires_in: object = 3600
    refuse: tuple[int, dict[str, object]] | None = None
    token_type: str = "Bearer"
    issued: list[str] = field(default_factory=list)
    requests: list[Call] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, call: Call) -> tuple[int, dict[str, str]]:
        return (self.refuse[0] if self.refuse else 200), {"Content-Type": "application/json"}

    def body(self, call: Call) -> bytes:
        with self.lock:
            self.requests.append(call)
            if self.refuse:
                return json.dumps(self.refuse[1]).encode()
            token = f"tok-{len(self.issued) + 1}"
            self.issued.append(token)
        document = {"access_token": token, "token_type": self.token_type}
        if self.expires_in is not None:
            document["expires_in"] = self.expires_in
        return json.dumps(document).encode()


@contextmanager
def token_endpoint(endpoint: TokenEndpoint) -> Iterator[Receiver]:
    with running_receiver(endpoint.answer, endpoint.body) as receiver:
        yield receiver


def webhook(accepted: set[str]) -> Receiver:
    """A webhook that answers 401 unless the bearer token is one of ``accepted``."""

    def answer(call: Call) -> tuple[int, dict[str, str]]:
        token = call.headers.get("authorization", "").removeprefix("Bearer ")
        return (200 if token in accepted else 401), {}

    return Receiver(answer).start()


class Harness:
    def __init__(self, clock: FixedClock) -> None:
        sender = HttpSender(policy=LOOPBACK, excerpt_bytes=1024)
        self.clock = clock
        self.tokens = TokenSource(sender, clock)
        self.target = HttpTarget(sender, one_signer(None), clock, self.tokens)

    def deliver(self, *payloads: Payload) -> list[Delivered]:
        """Each payload delivered, all at once; then the target closed."""
        occurrence = Occurrence("acme", "report", 1, START)

        async def run() -> list[Delivered]:
            try:
                return list(
                    await asyncio.gather(
                        *(
                            self.target.deliver(occurrence, payload, 1, self.clock.now(), "r")
                            for payload in payloads
                        )
                    )
                )
            finally:
                await self.target.close()

        return asyncio.run(run())


def credentials(token_url: str, **changes: object) -> OAuthClientCredentials:
    values: dict[str, object] = {
        "token_url": f"{token_url}/oauth/token",
        "client_id": "scheduler client",
        "client_secret": "s3cr3t:with&odd=chars",
        "scopes": ("reports.write", "reports.read"),
    }
    values.update(changes)
    return OAuthClientCredentials(**values)


def test_a_token_is_fetched_once_with_basic_client_auth_and_kept_for_later_calls() -> None:
    endpoint = TokenEndpoint()
    clock = FixedClock(START)
    with token_endpoint(endpoint) as tokens:
        hook = webhook({"tok-1"})
        try:
            auth = credentials(tokens.url)
            payload = Payload("POST", f"{hook.url}/run", body={"a": 1}, auth=auth)
            first = Harness(clock)
            assert [d.verdict.succeeded for d in first.deliver(payload, payload, payload)] == [
                True,
                True,
                True,
            ]
            assert all(c.headers["authorization"] == "Bearer tok-1" for c in hook.calls)
        finally:
            hook.stop()
    # Three calls at once shared one token request.
    [request] = endpoint.requests
    basic = request.headers["authorization"].removeprefix("Basic ")
    assert base64.b64decode(basic).decode() == "scheduler+client:s3cr3t%3Awith%26odd%3Dchars"
    assert parse_qs(request.body.decode()) == {
        "grant_type": ["client_credentials"],
        "scope": ["reports.write reports.read"],
    }
    assert request.headers["content-type"] == "application/x-www-form-urlencoded"


def test_a_token_is_fetched_again_shortly_before_it_expires() -> None:
    endpoint = TokenEndpoint(expires_in=100)
    clock = FixedClock(START)
    with token_endpoint(endpoint) as tokens:
        hook = webhook({"tok-1", "tok-2"})
        try:
            harness = Harness(clock)
            payload = Payload("GET", f"{hook.url}/run", auth=credentials(tokens.url))

            async def at(seconds: float) -> Delivered:
                clock.current = START + timedelta(seconds=seconds)
                occurrence = Occurrence("acme", "report", 1, START)
                return await harness.target.deliver(occurrence, payload, 1, clock.now(), "r")

            async def run() -> None:
                try:
                    # Kept for 90 s of its 100 (a tenth before its end).
                    for seconds in (0, 60, 89.9, 90.1):
                        assert (await at(seconds)).verdict.succeeded
                finally:
                    await harness.target.close()

            asyncio.run(run())
        finally:
            hook.stop()
    assert endpoint.issued == ["tok-1", "tok-2"]
    assert [c.headers["authorization"] for c in hook.calls] == [
        "Bearer tok-1",
        "Bearer tok-1",
        "Bearer tok-1",
        "Bearer tok-2",
    ]


def test_a_401_to_a_kept_token_fetches_a_new_one_and_calls_once_more() -> None:
    endpoint = TokenEndpoint()
    accepted = {"tok-1"}
    with token_endpoint(endpoint) as tokens:
        hook = webhook(accepted)
        try:
            harness = Harness(FixedClock(START))
            payload = Payload("GET", f"{hook.url}/run", auth=credentials(tokens.url))
            occurrence = Occurrence("acme", "report", 1, START)

            async def run() -> list[Delivered]:
                results = []
                try:
                    results.append(await harness.target.deliver(occurrence, payload, 1, START, "r"))
                    # The webhook's side revoked tok-1 and takes tok-2 only.
                    accepted.clear()
                    accepted.add("tok-2")
                    results.append(await harness.target.deliver(occurrence, payload, 2, START, "r"))
                    # Now it refuses every token: one more try, no more.
                    accepted.clear()
                    results.append(await harness.target.deliver(occurrence, payload, 3, START, "r"))
                finally:
                    await harness.target.close()
                return results

            ok, refreshed, refused = asyncio.run(run())
        finally:
            hook.stop()
    assert ok.verdict.succeeded and refreshed.verdict.succeeded
    assert not refused.verdict.succeeded and not refused.verdict.retryable
    assert refused.answer.status == 401
    assert endpoint.issued == ["tok-1", "tok-2", "tok-3"]
    assert [c.headers["authorization"] for c in hook.calls] == [
        "Bearer tok-1",
        "Bearer tok-1",
        "Bearer tok-2",
        "Bearer tok-2",
        "Bearer tok-3",
    ]


def test_client_credentials_in_the_body_when_asked() -> None:
    endpoint = TokenEndpoint()
    with token_endpoint(endpoint) as tokens:
        hook = webhook({"tok-1"})
        try:
            auth = credentials(tokens.url, client_auth="body", scopes=())
            [delivered] = Harness(FixedClock(START)).deliver(
                Payload("GET", f"{hook.url}/run", auth=auth)
            )
        finally:
            hook.stop()
    assert delivered.verdict.succeeded
    [request] = endpoint.requests
    assert "authorization" not in request.headers
    assert parse_qs(request.body.decode()) == {
        "grant_type": ["client_credentials"],
        "client_id": ["scheduler client"],
        "client_secret": ["s3cr3t:with&odd=chars"],
    }


def test_a_refused_token_request_fails_the_call_without_making_it_and_names_the_error() -> None:
    cases = [
        (TokenEndpoint(refuse=(401, {"error": "invalid_client"})), False, "invalid_client"),
        (TokenEndpoint(refuse=(503, {})), True, "HTTP 503"),
        (TokenEndpoint(token_type="mac"), False, "not a bearer token"),
    ]
    for endpoint, retryable, said in cases:
        with token_endpoint(endpoint) as tokens:
            hook = webhook(set())
            try:
                [delivered] = Harness(FixedClock(START)).deliver(
                    Payload("GET", f"{hook.url}/run", auth=credentials(tokens.url))
                )
            finally:
                hook.stop()
        assert hook.calls == []
        assert not delivered.verdict.succeeded
        assert delivered.verdict.retryable is retryable
        assert said in (delivered.verdict.reason or "")
        assert "token endpoint" in (delivered.verdict.reason or "")


def test_a_token_never_shows_in_what_an_attempt_keeps() -> None:
    secret_token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJzY2hlZHVsZXIifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
    endpoint = TokenEndpoint(
        refuse=(400, {"error": "invalid_scope", "error_description": f"not for {secret_token}"})
    )
    with token_endpoint(endpoint) as tokens:
        [delivered] = Harness(FixedClock(START)).deliver(
            Payload("GET", "http://127.0.0.1:9/run", auth=credentials(tokens.url))
        )
    assert "invalid_scope" in (delivered.verdict.reason or "")
    assert secret_token not in repr(delivered)


def test_the_token_url_passes_the_ssrf_guard() -> None:
    sender = HttpSender(policy=TargetPolicy(()))
    clock = FixedClock(START)
    target = HttpTarget(sender, one_signer(None), clock)
    payload = Payload(
        "GET",
        "http://127.0.0.1:9/run",
        auth=credentials("http://169.254.169.254"),
    )

    async def run() -> Delivered:
        try:
            return await target.deliver(Occurrence("acme", "r", 1, START), payload, 1, START, "r")
        finally:
            await target.close()

    delivered = asyncio.run(run())
    assert not delivered.verdict.succeeded and not delivered.verdict.retryable
    assert "refused target" in (delivered.verdict.reason or "")
