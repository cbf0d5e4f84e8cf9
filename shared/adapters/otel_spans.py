"""The spans port over the OpenTelemetry SDK (the ``otel`` extra): each span recorded and
exported, its context the one passed on (``shared.ports.spans``).

Imported only when the SDK is installed and an OTLP endpoint is set (``shared.backends``), or by
tests with the SDK's in-memory exporter. The SDK reads its own ``OTEL_*`` variables (endpoint,
headers, sampler, ``OTEL_SERVICE_NAME``).
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from shared.ports.spans import AttributeValue, OpenSpan, SpanKind, Spans, SpanStart
from shared.tracing import TraceContext

KINDS = {
    SpanKind.SERVER: trace.SpanKind.SERVER,
    SpanKind.CONSUMER: trace.SpanKind.CONSUMER,
    SpanKind.PRODUCER: trace.SpanKind.PRODUCER,
    SpanKind.CLIENT: trace.SpanKind.CLIENT,
}
SERVICE_NAME = "scheduler-service"


class _Recorded(OpenSpan):
    __slots__ = ("context", "span")

    def __init__(self, span: trace.Span, state: str) -> None:
        self.span = span
        found = span.get_span_context()
        self.context = TraceContext(
            f"{found.trace_id:032x}",
            f"{found.span_id:016x}",
            f"{int(found.trace_flags):02x}",
            state,
        )

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        self.span.set_attributes(
            {name: value for name, value in attributes.items() if value is not None}
        )

    def end(self, error: str | None = None) -> None:
        if error is not None:
            self.span.set_status(Status(StatusCode.ERROR, error))
        self.span.end()


class OtelSpans(Spans):
    recording = True

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("scheduler")

    def begin(self, start: SpanStart) -> OpenSpan:
        parent = start.parent
        context = None if parent is None else trace.set_span_in_context(_remote(parent))
        span = self.tracer.start_span(
            start.name,
            context,
            KINDS[start.kind],
            {key: value for key, value in start.attributes.items() if value is not None},
        )
        return _Recorded(span, parent.state if parent is not None else "")

    def close(self) -> None:
        self.provider.shutdown()


def _remote(parent: TraceContext) -> NonRecordingSpan:
    return NonRecordingSpan(
        SpanContext(
            int(parent.trace_id, 16),
            int(parent.span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(int(parent.flags, 16)),
            trace_state=TraceState.from_header([parent.state]) if parent.state else None,
        )
    )


def exporting_spans() -> OtelSpans:
    """Spans sent in batches to the OTLP endpoint of the ``OTEL_*`` variables (HTTP/protobuf)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        # OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names it when set.
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return OtelSpans(provider)
