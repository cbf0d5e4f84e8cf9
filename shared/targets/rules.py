"""What a target may be, as the settings of the processes that check and deliver it say."""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.ssrf import TargetPolicy


@dataclass(frozen=True)
class TargetRules:
    """``policy``: the SSRF guard for URLs the executor connects to (a webhook, a token
    endpoint); ``own_aws_endpoint``: the executor sends AWS targets to an endpoint of its own
    (``SCHEDULER_TARGET_AWS_ENDPOINT_URL``, LocalStack), so a queue URL need not be AWS's;
    ``own_queue_names``: the scheduler's own queues, which no schedule may target."""

    policy: TargetPolicy = field(default_factory=TargetPolicy)
    own_aws_endpoint: bool = False
    own_queue_names: frozenset[str] = frozenset()
