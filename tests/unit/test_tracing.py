"""W3C trace context as the specification reads it, and as it crosses the queues."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.messages import decode_occurrence, encode_occurrence
from shared.model import Occurrence
from shared.ports.spans import NoSpans, SpanKind, SpanStart
from shared.tracing import TraceContext, from_headers

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
VALID = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def test_a_valid_traceparent_and_its_tracestate_are_read() -> None:
    found = from_headers({"traceparent": VALID, "tracestate": "rojo=00f067aa0ba902b7,congo=t61"})
    assert found == TraceContext(
        TRACE_ID, "00f067aa0ba902b7", "01", "rojo=00f067aa0ba902b7,congo=t61"
    )
    assert found is not None and found.traceparent == VALID


@pytest.mark.parametrize(
    "header",
    [
        "",
        "garbage",
        VALID.upper(),
        VALID + "-",
        VALID[:-1],
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        f"00-{TRACE_ID}-0000000000000000-01",
        f"ff-{TRACE_ID}-00f067aa0ba902b7-01",
        f"00-{TRACE_ID}-00f067aa0ba902b7-01-extra",
        f"0g-{TRACE_ID}-00f067aa0ba902b7-01",
    ],
)
def test_an_invalid_traceparent_is_ignored(header: str) -> None:
    assert from_headers({"traceparent": header, "tracestate": "congo=t61"}) is None


def test_a_later_version_is_read_by_its_first_four_fields() -> None:
    found = from_headers({"traceparent": f"cc-{TRACE_ID}-00f067aa0ba902b7-01-what-is-this"})
    assert found is not None and found.trace_id == TRACE_ID


def test_without_the_sdk_only_an_outgoing_span_gets_an_id_of_its_own() -> None:
    parent = TraceContext(TRACE_ID, "00f067aa0ba902b7")
    spans = NoSpans()
    assert spans.begin(SpanStart("process", SpanKind.CONSUMER, parent, {})).context == parent
    first = spans.begin(SpanStart("attempt", SpanKind.CLIENT, parent, {}, outgoing=True)).context
    second = spans.begin(SpanStart("attempt", SpanKind.CLIENT, parent, {}, outgoing=True)).context
    assert first.trace_id == second.trace_id == TRACE_ID
    assert len({first.span_id, second.span_id, parent.span_id}) == 3
    new = spans.begin(SpanStart("create", SpanKind.SERVER, None, {})).context
    assert from_headers(new.headers()) == new and new.trace_id != TRACE_ID


@pytest.mark.parametrize("state", ["", "congo=t61rcWkgMzE"])
def test_an_occurrence_message_keeps_its_trace(state: str) -> None:
    occurrence = Occurrence(
        "t1",
        "s1",
        7,
        datetime(2026, 3, 1, 9, tzinfo=UTC),
        trace=TraceContext(TRACE_ID, "00f067aa0ba902b7", "00", state),
    )
    decoded = decode_occurrence(encode_occurrence(occurrence))
    assert decoded.trace == occurrence.trace
    assert (
        decode_occurrence(
            encode_occurrence(Occurrence("t1", "s1", 7, occurrence.scheduled_time))
        ).trace
        is None
    )


@pytest.mark.parametrize(
    "header",
    [
        "garbage",
        VALID.upper(),
        VALID + "-",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        f"00-{TRACE_ID}-0000000000000000-01",
        f"cc-{TRACE_ID}-00f067aa0ba902b7-01",
    ],
)
def test_a_document_of_ours_reads_back_only_as_written(header: str) -> None:
    written = TraceContext(TRACE_ID, "00f067aa0ba902b7", "00", "congo=t61rcWkgMzE")
    assert TraceContext.from_document(written.to_document()) == written
    with pytest.raises(ValueError, match="not a traceparent"):
        TraceContext.from_document({"traceparent": header})
