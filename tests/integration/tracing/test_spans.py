"""Spans with the OpenTelemetry SDK (the ``otel`` extra), read from its in-memory exporter: a
create, its processing, each occurrence's dispatch and each attempt form one trace, each span
the parent of the next, with the attributes docs/tracing.md lists and no secret."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from shared.adapters.otel_spans import OtelSpans
from shared.backends import open_backends, open_spans
from shared.ports.spans import SpanKind as PortKind
from shared.ports.spans import SpanStart
from shared.settings import Settings
from shared.tracing import TraceContext
from tests.support.harness import API, running_pipeline, sqlite_settings
from tests.support.receiver import answers, running_receiver
from tests.support.schedules import QUICK_RETRY
from tests.support.waiting import eventually

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
CALLER_SPAN = 0x00F067AA0BA902B7
SECRET = "Bearer sk_live_do_not_export"


@pytest.fixture
def exported() -> Iterator[tuple[InMemorySpanExporter, OtelSpans]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, OtelSpans(provider)
    provider.shutdown()


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def test_create_process_dispatch_and_each_attempt_form_one_trace(
    tmp_path: Path, exported: tuple[InMemorySpanExporter, OtelSpans]
) -> None:
    exporter, spans = exported
    settings = sqlite_settings(tmp_path)
    backends = open_backends(settings)
    backends.spans = spans
    with (
        running_receiver(answers(503, 200)) as receiver,
        running_pipeline(settings, backends) as pipeline,
    ):
        created = pipeline.client.post(
            f"{API}/schedule",
            json={
                "schedule": {"at": "2026-01-01T09:00:00Z", "fire_if_past": True},
                "payload": {
                    "method": "POST",
                    "url": f"{receiver.url}/traced?token=q-secret",
                    "headers": {"Authorization": SECRET},
                    "body": {"card": "4111111111111111"},
                },
                "retry": QUICK_RETRY,
            },
            headers={"traceparent": f"00-{TRACE_ID:032x}-{CALLER_SPAN:016x}-01"},
        )
        assert created.status_code == 202
        schedule_id = created.get_json()["id"]
        calls = receiver.wait_for(2, timeout=10)
        eventually(lambda: len(by_name(exporter.get_finished_spans(), "occurrence attempt")) == 2)
    backends.close()
    finished = exporter.get_finished_spans()
    [create] = by_name(finished, "schedule create")
    [process] = by_name(finished, "schedule process")
    [dispatch] = by_name(finished, "occurrence dispatch")
    attempts = sorted(
        by_name(finished, "occurrence attempt"), key=lambda span: span.start_time or 0
    )
    chain = [create, process, dispatch, *attempts]
    assert {span.context.trace_id for span in chain} == {TRACE_ID}
    assert create.parent is not None and create.parent.span_id == CALLER_SPAN
    assert process.parent is not None and process.parent.span_id == create.context.span_id
    assert dispatch.parent is not None and dispatch.parent.span_id == process.context.span_id
    for attempt in attempts:
        assert attempt.parent is not None and attempt.parent.span_id == dispatch.context.span_id
    assert [create.kind, process.kind, dispatch.kind, attempts[0].kind] == [
        SpanKind.SERVER,
        SpanKind.CONSUMER,
        SpanKind.PRODUCER,
        SpanKind.CLIENT,
    ]
    # What each webhook call carried is its attempt's span.
    assert [call.headers["traceparent"] for call in calls] == [
        f"00-{TRACE_ID:032x}-{attempt.context.span_id:016x}-01" for attempt in attempts
    ]

    occurrence_id = f"{schedule_id}:2026-01-01T09:00:00.000Z"
    assert create.attributes is not None and process.attributes is not None
    assert dict(create.attributes) == {
        "scheduler.tenant": "default",
        "scheduler.schedule.id": schedule_id,
        "scheduler.revision": created.get_json()["revision"],
    }
    assert process.attributes["scheduler.schedule.id"] == schedule_id
    assert process.attributes["scheduler.applied"] is True
    assert dispatch.attributes is not None
    assert dispatch.attributes["scheduler.occurrence.id"] == occurrence_id
    assert [
        (
            dict(attempt.attributes or {}).get("scheduler.attempt"),
            dict(attempt.attributes or {}).get("http.response.status_code"),
            dict(attempt.attributes or {}).get("scheduler.outcome"),
            attempt.status.status_code,
        )
        for attempt in attempts
    ] == [(1, 503, "retrying", StatusCode.ERROR), (2, 200, "succeeded", StatusCode.UNSET)]
    assert attempts[0].status.description == "answered 503"
    assert {dict(a.attributes or {}).get("scheduler.occurrence.id") for a in attempts} == {
        occurrence_id
    }
    everything = repr([(span.name, dict(span.attributes or {}), span.status) for span in finished])
    for secret in ("q-secret", "sk_live", "4111111111111111", "token="):
        assert secret not in everything


def test_with_an_otlp_endpoint_set_each_process_exports_its_spans_over_otlp_http(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As an operator turns it on: OTEL_EXPORTER_OTLP_ENDPOINT set, the spans reach a collector
    (here a local one that keeps what it is sent) on /v1/traces, named by OTEL_SERVICE_NAME."""
    received: list[tuple[str, bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append((self.path, self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_port}"}
        for name, value in {**environ, "OTEL_SERVICE_NAME": "scheduler-executor"}.items():
            monkeypatch.setenv(name, value)
        settings = Settings.from_env(environ)
        assert settings.trace_export
        spans = open_spans(settings)
        assert spans.recording
        parent = TraceContext(f"{TRACE_ID:032x}", f"{CALLER_SPAN:016x}")
        spans.begin(
            SpanStart("occurrence attempt", PortKind.CLIENT, parent, {"scheduler.attempt": 1})
        ).end()
        spans.close()
    finally:
        server.shutdown()
        server.server_close()
    [(path, body)] = received
    assert path == "/v1/traces"
    assert b"occurrence attempt" in body and b"scheduler-executor" in body
    assert TRACE_ID.to_bytes(16, "big") in body


def test_without_an_endpoint_nothing_is_recorded() -> None:
    settings = Settings.from_env({})
    assert not settings.trace_export
    assert not open_spans(settings).recording
