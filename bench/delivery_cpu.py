"""CPU of one HTTP delivery in process, without the network: the request built and signed,
the sender (a stub that answers 200 at once) called, the answer judged, through the delivery
port as the executor calls it (``shared.adapters.targets.Targets``), each attempt with its
trace context as ``execution_worker.delivery`` gives it (an unrecorded span: a fresh span id,
the ``traceparent`` header; ``--no-trace``: an occurrence without one, no span). Prints
microseconds per delivery, best and median of 7 rounds of 20,000 (``--rounds``,
``--deliveries``).

``--wire``: the real sender (``shared.adapters.http_sender.HttpSender``, aiohttp, the SSRF guard
with loopback allowed) against ``bench.receiver`` in its own process, ``--concurrency`` calls
in flight as the executor keeps them: the CPU of this process only (the loop's whole delivery
path, HTTP client included; the receiver's is not counted).

    python -m bench.delivery_cpu
    python -m bench.delivery_cpu --no-trace
    python -m bench.delivery_cpu --wire --deliveries 5000
"""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime, timedelta

from bench.receiver import ReceiverProcess
from shared.adapters.http_sender import HttpSender
from shared.adapters.http_target import one_signer
from shared.adapters.targets import TargetContext, Targets
from shared.model import Occurrence, Payload
from shared.ports import SystemClock, WebhookRequest, WebhookResponse, WebhookSender
from shared.ports.spans import NoSpans, SpanKind, SpanStart
from shared.settings import Settings
from shared.ssrf import TargetPolicy
from shared.tracing import TraceContext
from shared.webhooks import WebhookSigner


class AnsweredAtOnce(WebhookSender):
    async def send(self, request: WebhookRequest) -> WebhookResponse:
        return WebhookResponse(200, {}, 1.0, "HTTP/1.1 200 OK", b"ok", False)

    async def close(self) -> None:
        return None


async def measure(
    rounds: int,
    deliveries: int,
    traced: bool = True,
    url: str | None = None,
    concurrency: int = 1,
) -> tuple[list[float], int]:
    """Microseconds of CPU per delivery in each round, fastest first, and how many
    deliveries succeeded; with ``url``, through the real sender to it, ``concurrency`` at a
    time."""
    clock = SystemClock()
    signer = one_signer(WebhookSigner("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
    sender: WebhookSender = (
        AnsweredAtOnce() if url is None else HttpSender(policy=TargetPolicy(["127.0.0.0/8"]))
    )
    targets = Targets.of(TargetContext(sender, signer, clock, Settings()))
    payload = Payload(
        method="POST",
        url=url or "https://hooks.example.com/run?x=1",
        headers={"X-Team": "ops"},
        body={"task": "report", "n": 1},
    )
    first = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)
    trace = TraceContext.new() if traced else None
    occurrences = [
        Occurrence("acme", "s1", 1, first + timedelta(seconds=n), trace=trace)
        for n in range(deliveries)
    ]
    spans = NoSpans()
    now = clock.now()
    per_delivery, succeeded = [], 0

    async def deliver(some: list[Occurrence]) -> int:
        done = 0
        for occurrence in some:
            attempt = None
            if traced:
                span = spans.begin(
                    SpanStart(
                        "occurrence attempt", SpanKind.CLIENT, occurrence.trace, {}, outgoing=True
                    )
                )
                attempt = span.context
            delivered = await targets.deliver(occurrence, payload, 1, now, "report", attempt)
            done += delivered.verdict.succeeded
        return done

    for _ in range(rounds):
        started = time.process_time()
        if concurrency == 1:
            succeeded += await deliver(occurrences)
        else:
            shares = [occurrences[n::concurrency] for n in range(concurrency)]
            succeeded += sum(await asyncio.gather(*(deliver(share) for share in shares)))
        per_delivery.append((time.process_time() - started) / deliveries * 1e6)
    await sender.close()
    return sorted(per_delivery), succeeded


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--deliveries", type=int, default=20_000, help="per round")
    parser.add_argument("--no-trace", action="store_true", help="occurrences without a trace")
    parser.add_argument("--wire", action="store_true", help="the real sender, to bench.receiver")
    parser.add_argument("--concurrency", type=int, default=32, help="calls in flight (--wire)")
    args = parser.parse_args(argv)
    receiver = ReceiverProcess() if args.wire else None
    try:
        measured, succeeded = asyncio.run(
            measure(
                args.rounds,
                args.deliveries,
                not args.no_trace,
                None if receiver is None else f"{receiver.url}/hook?x=1",
                args.concurrency if receiver is not None else 1,
            )
        )
    finally:
        if receiver is not None:
            receiver.stop()
    figures = {
        "best_us": measured[0],
        "median_us": measured[len(measured) // 2],
        "succeeded": succeeded,
    }
    print(
        f"µs per HTTP delivery: best {figures['best_us']:.2f}, "
        f"median {figures['median_us']:.2f} ({succeeded} delivered)"
    )
    return figures


if __name__ == "__main__":
    main()
