"""The production queue on Amazon SQS (boto3): AWS, LocalStack or moto's server."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from shared.errors import SchedulerError, Transient
from shared.ports import (
    MessageQueue,
    MessageTooLarge,
    OutgoingMessage,
    QueueDepth,
    QueueSpec,
    ReceivedMessage,
)
from shared.timeutil import from_epoch_ms

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_sqs.type_defs import (
        BatchResultErrorEntryTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )

# SQS's limits.
BATCH_SIZE = 10
MAX_DELAY_SECONDS = 900
MAX_WAIT_SECONDS = 20
MAX_VISIBILITY_SECONDS = 43_200
# What the queues this service creates are given: SQS's longest retention (14 days) and largest
# message (1 MiB; a batch's messages together may not exceed it either).
RETENTION_SECONDS = 14 * 24 * 3600
MAX_MESSAGE_BYTES = 1024 * 1024
# The size limit assumed of a queue that does not say (SQS's default before 2025: 256 KiB).
DEFAULT_MESSAGE_BYTES = 256 * 1024

_MISSING_QUEUE = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
# CreateQueue with attributes other than those of the existing queue of that name.
_QUEUE_EXISTS = {"QueueAlreadyExists", "QueueNameExists"}
_CREATE_ROUNDS = 5
# Answers to a receipt that is stale (deleted, re-received, or expired): nothing to do.
_STALE_RECEIPT = {
    "ReceiptHandleIsInvalid",
    "InvalidParameterValue",
    "AWS.SimpleQueueService.MessageNotInflight",
    "MessageNotInflight",
}
_THROTTLED = {
    "ThrottlingException",
    "RequestThrottled",
    "Throttling",
    "ServiceUnavailable",
    "InternalError",
    "InternalFailure",
    "KmsThrottled",
}


def sqs_client(endpoint_url: str | None, region: str) -> SQSClient:
    """A thread-safe SQS client; ``endpoint_url`` points at LocalStack or moto, ``None`` at AWS."""
    config = Config(
        region_name=region,
        retries={"max_attempts": 5, "mode": "standard"},
        connect_timeout=5,
        # Longer than the longest long poll (20 s), or every empty poll would time out.
        read_timeout=MAX_WAIT_SECONDS + 10,
        max_pool_connections=20,
    )
    # A session per client: boto3's default session is not thread-safe to create clients from.
    session = boto3.session.Session()
    return session.client("sqs", endpoint_url=endpoint_url, config=config)


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


@contextmanager
def _transient(action: str) -> Iterator[None]:
    """Unreachable endpoint, timeouts, throttling and server errors become ``Transient``."""
    try:
        yield
    except (BotoConnectionError, HTTPClientError) as exc:
        raise Transient(f"sqs {action}: {exc}") from exc
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if _error_code(exc) in _THROTTLED or status >= 500:
            raise Transient(f"sqs {action}: {exc}") from exc
        raise


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _batches(
    messages: Sequence[OutgoingMessage], max_bytes: int
) -> Iterator[list[OutgoingMessage]]:
    """Batches of at most ``BATCH_SIZE`` messages whose bodies together fit ``max_bytes``."""
    batch: list[OutgoingMessage] = []
    size = 0
    for message in messages:
        length = len(message.body.encode())
        if batch and (len(batch) == BATCH_SIZE or size + length > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(message)
        size += length
    if batch:
        yield batch


def _delay(seconds: float) -> int:
    return max(0, min(MAX_DELAY_SECONDS, math.floor(seconds)))


def _visibility(seconds: float) -> int:
    # Rounded up: a message must never come back before the caller's timeout.
    return max(0, min(MAX_VISIBILITY_SECONDS, math.ceil(seconds)))


def _wait(seconds: float) -> int:
    # SQS waits in whole seconds. A positive wait below one second becomes one: a zero would be
    # a short poll, and a caller polling with sub-second waits would spin on an empty queue.
    if seconds <= 0:
        return 0
    return max(1, min(MAX_WAIT_SECONDS, math.floor(seconds)))


class SqsQueue(MessageQueue):
    def __init__(self, client: SQSClient, spec: QueueSpec) -> None:
        super().__init__(spec)
        self.client = client
        self._url: str | None = None
        self._max_bytes: int | None = None
        self._lock = threading.Lock()

    # -- set-up --------------------------------------------------------------------------

    def create(self) -> None:
        """Create the queue (and its dead-letter queue) if missing, linked to it.

        Idempotent and order-independent: the dead-letter queue is created here too if its own
        ``SqsQueue`` has not made it yet. A queue this creates keeps messages 14 days and takes
        messages of up to 1 MiB; its redrive policy is set as it is created, or later only if
        it has none, so a policy an operator changed is never overwritten at a start.
        """
        for attempt in range(1, _CREATE_ROUNDS + 1):
            try:
                with _transient("create"):
                    url, max_bytes = self._create()
                break
            except ClientError as exc:
                # A queue another process is creating right now can be found by name a moment
                # before it answers (LocalStack): look again shortly.
                if _error_code(exc) not in _MISSING_QUEUE:
                    raise
                if attempt == _CREATE_ROUNDS:
                    raise Transient(f"sqs create {self.name!r}: {exc}") from exc
                time.sleep(0.2 * attempt)
        with self._lock:
            self._url = url
            self._max_bytes = max_bytes

    def _create(self) -> tuple[str, int]:
        """One go at ``create``: the queue's URL and its size limit."""
        attributes: dict[QueueAttributeNameType, str] = {
            "MessageRetentionPeriod": str(RETENTION_SECONDS),
            "MaximumMessageSize": str(MAX_MESSAGE_BYTES),
        }
        redrive = None
        if self.spec.dead_letter_queue is not None:
            dlq_url = self._lookup_url(self.spec.dead_letter_queue) or self._create_queue(
                self.spec.dead_letter_queue, attributes
            )
            dlq_arn = self.client.get_queue_attributes(
                QueueUrl=dlq_url, AttributeNames=["QueueArn"]
            )["Attributes"]["QueueArn"]
            policy = {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": self.spec.max_receives}
            redrive = json.dumps(policy, separators=(",", ":"))
        url = self._lookup_url(self.name)
        if url is None:
            if redrive is not None:
                attributes["RedrivePolicy"] = redrive
            url = self._create_queue(self.name, attributes)
        current = self.client.get_queue_attributes(
            QueueUrl=url, AttributeNames=["MaximumMessageSize", "RedrivePolicy"]
        )["Attributes"]
        if redrive is not None and not current.get("RedrivePolicy"):
            self.client.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": redrive})
        return url, int(current.get("MaximumMessageSize", DEFAULT_MESSAGE_BYTES))

    def _lookup_url(self, name: str) -> str | None:
        try:
            return self.client.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError as exc:
            if _error_code(exc) in _MISSING_QUEUE:
                return None
            raise

    def _create_queue(self, name: str, attributes: Mapping[QueueAttributeNameType, str]) -> str:
        # Two processes starting together both create it with the same attributes, which
        # CreateQueue accepts; if it now exists with others (made meanwhile by someone else),
        # that queue is the one to use.
        try:
            return self.client.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        except ClientError as exc:
            if _error_code(exc) in _QUEUE_EXISTS:
                url = self._lookup_url(name)
                if url is not None:
                    return url
            raise

    def max_message_bytes(self) -> int:
        """The largest message the queue takes (its ``MaximumMessageSize``)."""
        with self._lock:
            if self._max_bytes is not None:
                return self._max_bytes
        with self._calling("get_queue_attributes") as url:
            attributes = self.client.get_queue_attributes(
                QueueUrl=url, AttributeNames=["MaximumMessageSize"]
            )["Attributes"]
        limit = int(attributes.get("MaximumMessageSize", DEFAULT_MESSAGE_BYTES))
        with self._lock:
            self._max_bytes = limit
        return limit

    def _queue_url(self) -> str:
        with self._lock:
            if self._url is not None:
                return self._url
        with _transient("get_queue_url"):
            url = self._lookup_url(self.name)
        if url is None:
            raise Transient(f"sqs queue {self.name!r} does not exist (yet): create it first")
        with self._lock:
            self._url = url
        return url

    @contextmanager
    def _calling(self, action: str) -> Iterator[str]:
        """The queue URL for one call; a queue deleted under us drops the cached URL."""
        url = self._queue_url()
        try:
            with _transient(action):
                yield url
        except ClientError as exc:
            if _error_code(exc) in _MISSING_QUEUE:
                with self._lock:
                    self._url = None
                raise Transient(f"sqs queue {self.name!r} is gone: {exc}") from exc
            raise

    # -- messages ------------------------------------------------------------------------

    def send(self, messages: Sequence[OutgoingMessage]) -> None:
        if not messages:
            return
        limit = self.max_message_bytes()
        for message in messages:
            size = len(message.body.encode())
            if size > limit:
                raise MessageTooLarge(self.name, size, limit)
        with self._calling("send") as url:
            for batch in _batches(messages, limit):
                entries: list[SendMessageBatchRequestEntryTypeDef] = [
                    {
                        "Id": str(index),
                        "MessageBody": message.body,
                        "DelaySeconds": _delay(message.delay_seconds),
                    }
                    for index, message in enumerate(batch)
                ]
                failed = self.client.send_message_batch(QueueUrl=url, Entries=entries).get(
                    "Failed", []
                )
                if failed and not any(entry["SenderFault"] for entry in failed):
                    # Server-side failures of single entries: one more try for just those.
                    retry_ids = {entry["Id"] for entry in failed}
                    retry = [entry for entry in entries if entry["Id"] in retry_ids]
                    failed = self.client.send_message_batch(QueueUrl=url, Entries=retry).get(
                        "Failed", []
                    )
                if failed:
                    raise _batch_error("send", self.name, failed)

    def receive(
        self, max_messages: int, wait_seconds: float, visibility_timeout: float
    ) -> list[ReceivedMessage]:
        with self._calling("receive") as url:
            response = self.client.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=max(1, min(BATCH_SIZE, max_messages)),
                WaitTimeSeconds=_wait(wait_seconds),
                VisibilityTimeout=_visibility(visibility_timeout),
                MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
            )
        received: list[ReceivedMessage] = []
        for message in response.get("Messages", []):
            attributes = message.get("Attributes", {})
            sent = attributes.get("SentTimestamp")
            received.append(
                ReceivedMessage(
                    message_id=message["MessageId"],
                    body=message["Body"],
                    receipt_handle=message["ReceiptHandle"],
                    receive_count=int(attributes.get("ApproximateReceiveCount", "1")),
                    sent_at=from_epoch_ms(int(sent)) if sent is not None else None,
                )
            )
        return received

    def delete(self, receipt_handles: Sequence[str]) -> None:
        # A stale or unknown receipt is a sender fault and means there is nothing left to
        # delete; only a server-side failure is worth an exception (and a retry).
        self._each_batch(
            "delete",
            [{"ReceiptHandle": handle} for handle in receipt_handles],
            self.client.delete_message_batch,
            lambda entry: entry["SenderFault"],
        )

    def change_visibility(self, receipt_handle: str, timeout_seconds: float) -> None:
        with self._calling("change_visibility") as url:
            try:
                self.client.change_message_visibility(
                    QueueUrl=url,
                    ReceiptHandle=receipt_handle,
                    VisibilityTimeout=_visibility(timeout_seconds),
                )
            except ClientError as exc:
                if _error_code(exc) not in _STALE_RECEIPT:
                    raise

    def change_visibilities(self, changes: Sequence[tuple[str, float]]) -> None:
        # As in ``delete``: a stale receipt means nothing is left to change (LocalStack
        # answers it as a server fault, by code).
        self._each_batch(
            "change_visibility",
            [
                {"ReceiptHandle": handle, "VisibilityTimeout": _visibility(seconds)}
                for handle, seconds in changes
            ],
            self.client.change_message_visibility_batch,
            lambda entry: (
                entry["SenderFault"] or entry["Code"].removesuffix("Exception") in _STALE_RECEIPT
            ),
        )

    def _each_batch(
        self,
        action: str,
        entries: Sequence[Mapping[str, Any]],
        send: Callable[..., Any],
        nothing_left: Callable[[BatchResultErrorEntryTypeDef], bool],
    ) -> None:
        """``entries``, each given its ``Id``, ``BATCH_SIZE`` at a time through ``send`` (a
        batch action of the client): a failed entry raises, unless it means there is nothing
        left to do (``nothing_left``)."""
        if not entries:
            return
        with self._calling(action) as url:
            for batch in _chunks(entries, BATCH_SIZE):
                response = send(
                    QueueUrl=url,
                    Entries=[{"Id": str(index), **entry} for index, entry in enumerate(batch)],
                )
                failed = [entry for entry in response.get("Failed", []) if not nothing_left(entry)]
                if failed:
                    raise _batch_error(action, self.name, failed)

    def depth(self) -> QueueDepth:
        with self._calling("depth") as url:
            attributes = self.client.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                    "ApproximateNumberOfMessagesDelayed",
                ],
            )["Attributes"]
        return QueueDepth(
            visible=int(attributes.get("ApproximateNumberOfMessages", "0")),
            in_flight=int(attributes.get("ApproximateNumberOfMessagesNotVisible", "0")),
            delayed=int(attributes.get("ApproximateNumberOfMessagesDelayed", "0")),
        )

    def close(self) -> None:
        """Nothing to release: the client is passed in, and whoever created it closes it
        (``shared.backends.Backends.close``)."""


def _batch_error(
    action: str, queue: str, failed: Sequence[BatchResultErrorEntryTypeDef]
) -> SchedulerError:
    details = "; ".join(
        f"{entry['Id']}: {entry['Code']} {entry.get('Message', '')}".strip() for entry in failed
    )
    message = f"sqs {action} on {queue!r}: {len(failed)} entries failed ({details})"
    if any(entry["SenderFault"] for entry in failed):
        # The request itself is wrong (e.g. a body over 256 KiB): retrying will not help.
        return SchedulerError(message)
    return Transient(message)
