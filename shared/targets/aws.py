"""What the ``sqs`` and ``sns`` kinds share: reading a queue URL, a topic ARN and a role ARN,
the rules of FIFO message group and deduplication ids, and the payload of a message for an AWS
queue or topic (``AwsMessage``: each kind says only the member that names where it goes and
how that is read).

The executor never connects to the host a queue URL names: it calls the SQS endpoint of the
URL's region (``sqs.<region>.amazonaws.com``, or the executor's own
``SCHEDULER_TARGET_AWS_ENDPOINT_URL``), naming the queue by its account and name. So a URL
cannot point the executor at another host, and the SSRF guard has nothing to check: without
an endpoint of the executor's, a queue URL must be an AWS one (https, ``amazonaws.com``).
"""

from __future__ import annotations

import hashlib
import re
from abc import abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import ClassVar, Self
from urllib.parse import urlsplit

from shared.jsonvalues import JSON, optional_int
from shared.targets.rules import TargetRules
from shared.templating import json_has_template, json_problems

REGION = r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}"
PARTITION = r"aws(?:-[a-z]+)*"
_QUEUE_PATH = re.compile(r"^/(\d{12})/([A-Za-z0-9_-]{1,75}(?:\.fifo)?)$")
_SQS_HOST_REGION = re.compile(rf"(?:^|\.)sqs\.({REGION})\.")
_LEGACY_HOST_REGION = re.compile(rf"^({REGION})\.queue\.amazonaws\.com$")
_AWS_HOST = re.compile(r"\.amazonaws\.com(?:\.cn)?$")
_TOPIC_ARN = re.compile(
    rf"^arn:({PARTITION}):sns:({REGION}):(\d{{12}}):([A-Za-z0-9_-]{{1,251}}(?:\.fifo)?)$"
)
_ROLE_ARN = re.compile(rf"^arn:{PARTITION}:iam::\d{{12}}:role/[\w+=,.@/-]{{1,512}}$")
# What SQS and SNS take as a FIFO message group or deduplication id.
_MESSAGE_ID = re.compile(r"^[!-~]{1,128}$")


@dataclass(frozen=True)
class AwsResource:
    """A queue or a topic: where it is and what it is called. ``region`` None: the executor's
    own region (a queue URL of a local endpoint that names none)."""

    region: str | None
    account: str
    name: str

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


def parse_queue_url(url: str, own_endpoint: bool) -> AwsResource:
    """The queue a URL names; ``ValueError`` saying why it names none. ``own_endpoint``: the
    executor sends to an endpoint of its own (LocalStack), so any host is taken (it is not
    contacted); else the URL must be an AWS queue URL."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    path = _QUEUE_PATH.match(parts.path)
    if parts.scheme not in ("http", "https") or not host or path is None or parts.query:
        raise ValueError(
            "not a queue URL (https://sqs.<region>.amazonaws.com/<account>/<queue name>)"
        )
    region_match = _SQS_HOST_REGION.search(host) or _LEGACY_HOST_REGION.match(host)
    region = region_match.group(1) if region_match else None
    if not own_endpoint:
        if parts.scheme != "https" or not _AWS_HOST.search(host):
            raise ValueError("not an AWS queue URL: https://sqs.<region>.amazonaws.com/…")
        if region is None and host != "queue.amazonaws.com":
            raise ValueError("the queue URL names no region (sqs.<region>.amazonaws.com)")
        region = region or "us-east-1"
    return AwsResource(region, path.group(1), path.group(2))


def parse_topic_arn(arn: str) -> AwsResource:
    match = _TOPIC_ARN.match(arn.strip())
    if match is None:
        raise ValueError("not a topic ARN (arn:aws:sns:<region>:<account>:<topic name>)")
    return AwsResource(match.group(2), match.group(3), match.group(4))


def role_arn_problem(arn: str) -> str | None:
    if _ROLE_ARN.match(arn):
        return None
    return "not a role ARN (arn:aws:iam::<account>:role/<name>)"


def message_id_problem(value: str) -> str | None:
    if _MESSAGE_ID.match(value):
        return None
    return "1 to 128 characters: letters, digits and punctuation, no spaces"


def deduplication_id(occurrence_id: str) -> str:
    """The occurrence id as a FIFO deduplication id: itself when it fits in 128 characters,
    else its SHA-256 (still the same for every attempt of the occurrence)."""
    if len(occurrence_id) <= 128:
        return occurrence_id
    return hashlib.sha256(occurrence_id.encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class AwsMessage:
    """A message for an AWS queue or topic (``shared.targets.sqs``, ``shared.targets.sns``):
    where it goes is the member ``address`` names (read by ``resource``).

    ``body``: a string is sent as it is, any other JSON value as compact JSON, and none as
    the occurrence described in JSON. Credentials are the executor's (the standard AWS chain),
    or those of ``role_arn`` (assumed with the external id ``scheduler:<tenant>``).
    ``message_group_id`` (a FIFO queue or topic needs one: the schedule id when not set) and
    ``message_deduplication_id`` (the occurrence id when not set) go to FIFO ones only.
    """

    kind: ClassVar[str]
    # The member naming the queue or topic (``queue_url``, ``topic_arn``).
    address: ClassVar[str]

    body: JSON = None
    message_group_id: str | None = None
    message_deduplication_id: str | None = None
    role_arn: str | None = None
    timeout_seconds: float = 10.0
    # At most this many sends in flight to the queue or topic (None: the executor's setting).
    calls_per_host: int | None = None
    templated: bool | None = None

    def __post_init__(self) -> None:
        if self.templated is None:
            object.__setattr__(self, "templated", json_has_template(self.body))

    @property
    def location(self) -> str:
        return str(getattr(self, self.address))

    @abstractmethod
    def resource(self, own_endpoint: bool) -> AwsResource:
        """The queue or topic it goes to; ``ValueError`` saying why ``location`` names none.
        ``own_endpoint``: the executor sends to an endpoint of its own (``parse_queue_url``)."""

    def refusal(self, resource: AwsResource, own_queue_names: Collection[str]) -> str | None:
        """Why no message may go to ``resource`` (None: it may)."""
        return None

    def problems(self, rules: TargetRules) -> dict[str, str]:
        problems = self.common_problems("payload")
        try:
            resource = self.resource(rules.own_aws_endpoint)
        except ValueError as exc:
            problems[f"payload.{self.address}"] = str(exc)
        else:
            if (refusal := self.refusal(resource, rules.own_queue_names)) is not None:
                problems[f"payload.{self.address}"] = refusal
        return problems

    def to_document(self) -> dict[str, JSON]:
        return {"kind": self.kind, self.address: self.location, **self.common_document()}

    @classmethod
    def from_document(cls, document: Mapping[str, JSON]) -> Self:
        return cls(**{cls.address: document[cls.address]}, **cls.common_fields(document))

    def common_problems(self, prefix: str) -> dict[str, str]:
        """Problems of the fields every AWS message has, named ``<prefix>.<field>``."""
        problems: dict[str, str] = {}
        for name in ("message_group_id", "message_deduplication_id"):
            value = getattr(self, name)
            if value is not None and (problem := message_id_problem(value)) is not None:
                problems[f"{prefix}.{name}"] = problem
        if self.role_arn is not None and (problem := role_arn_problem(self.role_arn)):
            problems[f"{prefix}.role_arn"] = problem
        if self.templated:
            problems.update(json_problems(self.body, f"{prefix}.body"))
        return problems

    def common_document(self) -> dict[str, JSON]:
        document: dict[str, JSON] = {"body": self.body, "timeout_seconds": self.timeout_seconds}
        for name in ("message_group_id", "message_deduplication_id", "role_arn", "calls_per_host"):
            if getattr(self, name) is not None:
                document[name] = getattr(self, name)
        if self.templated:
            document["templated"] = True
        return document

    @staticmethod
    def common_fields(document: Mapping[str, JSON]) -> dict[str, JSON]:
        return {
            "body": document.get("body"),
            "message_group_id": document.get("message_group_id"),
            "message_deduplication_id": document.get("message_deduplication_id"),
            "role_arn": document.get("role_arn"),
            "timeout_seconds": float(document.get("timeout_seconds", 10.0)),
            "calls_per_host": optional_int(document.get("calls_per_host")),
            "templated": bool(document.get("templated", False)),
        }
