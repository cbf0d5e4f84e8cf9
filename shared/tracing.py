"""W3C trace context (https://www.w3.org/TR/trace-context/): what a schedule and each of its
occurrences carry from the request that created them to every webhook call.

A ``TraceContext`` is the ``traceparent`` to continue (trace id, the id of the span the next
hop is a child of, the flags) and the ``tracestate`` passed along untouched. It travels as those
two header values everywhere: inside a schedule's definition (queue 1, the store), on each
occurrence (queue 2), in each webhook call's headers and on each SQS/SNS message's attributes.

Parsing an incoming header is the OpenTelemetry API's W3C propagator (versions, all-zero ids,
case, lengths as the specification says; an invalid header is ignored, never refused). Making a
header for an attempt is one string format with a fresh span id: the executor's per-fire cost.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import NamedTuple

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
# Sampled: a receiver that samples by its parent records the calls of a trace started here.
SAMPLED = "01"

_PROPAGATOR = TraceContextTextMapPropagator()
# A ``traceparent`` as ``TraceContext.traceparent`` writes it (version 00, lowercase hex).
_OURS = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


class TraceContext(NamedTuple):
    """The trace to continue: ``trace_id`` (32 lowercase hex digits), ``span_id`` (16: the
    parent of the next span), ``flags`` (2) and the vendors' ``state`` (``tracestate``). A
    tuple: the executor makes one per attempt."""

    trace_id: str
    span_id: str
    flags: str = SAMPLED
    state: str = ""

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def child(self) -> TraceContext:
        """The same trace, continued by a new span (its own span id)."""
        return TraceContext(self.trace_id, new_span_id(), self.flags, self.state)

    def headers(self) -> dict[str, str]:
        """The headers (or message attributes) that carry it: ``traceparent``, and
        ``tracestate`` when there is one."""
        if self.state:
            return {TRACEPARENT: self.traceparent, TRACESTATE: self.state}
        return {TRACEPARENT: self.traceparent}

    def to_document(self) -> dict[str, str]:
        return self.headers()

    @classmethod
    def from_document(cls, document: Mapping[str, str]) -> TraceContext:
        """The context a document or message of ours carries (``ValueError`` if it is not
        one: it was written by this module). Read as ``headers`` wrote it, without the
        propagator: every stored definition and queue 2 message has one to read."""
        parent = document.get(TRACEPARENT)
        found = _OURS.fullmatch(parent) if isinstance(parent, str) else None
        if found is None or not int(found[1], 16) or not int(found[2], 16):
            raise ValueError(f"not a traceparent: {parent!r}")
        return TraceContext(found[1], found[2], found[3], document.get(TRACESTATE, ""))

    @classmethod
    def new(cls) -> TraceContext:
        """A new trace, sampled."""
        return TraceContext(new_trace_id(), new_span_id())


def from_headers(headers: Mapping[str, str]) -> TraceContext | None:
    """The context of a request's (or a message's) ``traceparent`` and ``tracestate``, or
    ``None`` when there is no valid ``traceparent``: the specification says to ignore an
    invalid one (and a ``tracestate`` without it), not to refuse the request."""
    parent = headers.get(TRACEPARENT)
    if not parent:
        return None
    carrier = {TRACEPARENT: parent}
    state = headers.get(TRACESTATE)
    if state:
        carrier[TRACESTATE] = state
    found = trace.get_current_span(_PROPAGATOR.extract(carrier)).get_span_context()
    if not found.is_valid:
        return None
    return TraceContext(
        f"{found.trace_id:032x}",
        f"{found.span_id:016x}",
        f"{int(found.trace_flags):02x}",
        found.trace_state.to_header(),
    )


def new_trace_id() -> str:
    # The OpenTelemetry SDK's RandomIdGenerator: random.getrandbits, never all zeros.
    return f"{random.getrandbits(128) or 1:032x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64) or 1:016x}"
