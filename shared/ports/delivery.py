"""The delivery ports: a kind of target an occurrence is delivered to, and the webhook sender."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from shared.model import NO_ANSWER, Answer, Occurrence
from shared.retry import Verdict
from shared.targets import DeliveryPayload
from shared.tracing import TraceContext


@dataclass(frozen=True)
class WebhookRequest:
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None
    timeout_seconds: float
    # How much of the answer's body to give back whole in ``WebhookResponse.body`` (a token
    # endpoint's answer, a body a check reads); at most the sender's ``MAX_BODY_BYTES``.
    body_bytes: int = 0


@dataclass(frozen=True)
class WebhookResponse:
    status: int
    headers: Mapping[str, str]
    duration_ms: float
    # e.g. "HTTP/1.1 200 OK"
    status_line: str = ""
    # The first bytes of the body (as many as the sender was asked to keep), and whether the
    # body was longer.
    body_excerpt: bytes = b""
    body_truncated: bool = False
    # The first ``WebhookRequest.body_bytes`` of the body, and whether that was all of it.
    body: bytes = b""
    body_complete: bool = True
    # When the request was written to its connection (``time.perf_counter``), or None when the
    # sender cannot tell.
    sent_at: float | None = None


class WebhookSender(ABC):
    """Makes webhook calls on an event loop, many at once."""

    @abstractmethod
    async def send(self, request: WebhookRequest) -> WebhookResponse:
        """Make the call. Raises ``WebhookError`` for a timeout or connection failure."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""


class CallFailed(Exception):
    """A call toward a target that got no answer to judge: ``retryable`` when trying again
    later may help (a timeout, a throttled service), not when it never can (a refused target)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class WebhookError(CallFailed):
    """The call produced no HTTP response: timeout, refused connection, refused target. With
    ``sent_at``, when its request was written (``time.perf_counter``, as
    ``WebhookResponse.sent_at``): it was, and no answer came."""

    def __init__(
        self, message: str, *, retryable: bool = True, sent_at: float | None = None
    ) -> None:
        super().__init__(message, retryable=retryable)
        self.sent_at = sent_at


@dataclass(frozen=True)
class Delivered:
    """How one attempt at a delivery target ended: the verdict, and what its record keeps."""

    verdict: Verdict
    finished_at: datetime
    duration_ms: float
    # The target's answer (none: it gave none).
    answer: Answer = NO_ANSWER
    # When the attempt's request left for the target (None: at the attempt's start).
    started_at: datetime | None = None


P = TypeVar("P", bound=DeliveryPayload)


class DeliveryTarget(ABC, Generic[P]):
    """Delivers occurrences to one kind of target (``shared.targets``: an HTTP webhook, an SQS
    queue, an SNS topic), on an event loop, many at once. One module per kind implements it
    (``shared.adapters.http_target``, ``sqs_target``, ``sns_target``);
    ``shared.adapters.targets.Targets`` hands each payload to the one of its kind."""

    @abstractmethod
    def destination(self, payload: P) -> str:
        """What deliveries in flight are counted by (``executor_calls_per_host``): a host, a
        queue, a topic."""

    @abstractmethod
    async def deliver(
        self,
        occurrence: Occurrence,
        payload: P,
        attempt: int,
        now: datetime,
        schedule_name: str,
        trace: TraceContext | None = None,
    ) -> Delivered:
        """Make attempt number ``attempt`` of ``occurrence`` (of the schedule named
        ``schedule_name``, for its placeholders), starting at ``now``, sending ``trace``, the
        attempt's own trace context (``traceparent``, ``tracestate``: a header, a message
        attribute). A failure of the target (no answer, a refused target, an answer that is not
        a success) is a verdict, never an exception."""

    @abstractmethod
    async def close(self) -> None:
        """Release connections."""
