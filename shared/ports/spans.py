"""The spans port: what a component records of its part of a trace (``shared.tracing``).

Without the OpenTelemetry SDK nothing is recorded (``NoSpans``): a span's context is the one
it continues, so the trace a request brought goes on unchanged; only an ``outgoing`` span (a
call to a receiver: each attempt) gets a span id of its own, so a receiver tells attempts apart.
With the SDK and an OTLP endpoint (``shared.adapters.otel_spans``) each span is exported, and
its context, the one passed on, is the span's own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from enum import StrEnum
from typing import NamedTuple

from shared.tracing import TraceContext

AttributeValue = str | int | float | bool


class SpanKind(StrEnum):
    SERVER = "server"
    CONSUMER = "consumer"
    PRODUCER = "producer"
    CLIENT = "client"


class SpanStart(NamedTuple):
    """What ``Spans.begin`` begins: a span named ``name`` of ``kind``, continuing ``parent`` (a
    new trace when ``None``), with ``attributes``. ``outgoing``: its context is sent to someone
    else (a webhook, a user's queue), who must see a span id of its own even when nothing is
    recorded. A tuple: the executor makes one per attempt, and a frozen dataclass costs about a
    microsecond more to make."""

    name: str
    kind: SpanKind
    parent: TraceContext | None
    attributes: Mapping[str, AttributeValue | None]
    outgoing: bool = False


class OpenSpan(ABC):
    """A span begun and not yet ended."""

    # What the next hop continues: this span's context when it is recorded.
    context: TraceContext

    @abstractmethod
    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add attributes (a ``None`` value is left out). Never a secret: no URL's query, no
        header value, no body."""

    @abstractmethod
    def end(self, error: str | None = None) -> None:
        """End it, failed with ``error`` when given."""


class Spans(ABC):
    """Begins the spans of one process."""

    # Whether spans are recorded: when not, a component may skip building what only a
    # recorded span would read.
    recording: bool = False

    @abstractmethod
    def begin(self, start: SpanStart) -> OpenSpan:
        """The span ``start`` describes, begun."""

    @abstractmethod
    def close(self) -> None:
        """Send what is still buffered."""


class _Unrecorded(OpenSpan):
    __slots__ = ("context",)

    def __init__(self, context: TraceContext) -> None:
        self.context = context

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        pass

    def end(self, error: str | None = None) -> None:
        pass


class NoSpans(Spans):
    """Records nothing; passes the context on (see the module docstring)."""

    def begin(self, start: SpanStart) -> OpenSpan:
        parent = start.parent
        if parent is None:
            return _Unrecorded(TraceContext.new())
        return _Unrecorded(parent.child() if start.outgoing else parent)

    def close(self) -> None:
        pass
