"""Per-tenant request rate limits (``SCHEDULER_TENANT_RATE_LIMIT``), counted by ``limits``.

Each API process counts on its own (in memory): with P processes (gunicorn workers, replicas)
a tenant gets up to P times the limit in all. A sliding window counter: no burst of twice the
limit at a window's edge, as a fixed window would allow, and two counters per tenant and limit.
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage
from limits.strategies import SlidingWindowCounterRateLimiter


def parse_rate_limits(text: str) -> list[RateLimitItem]:
    """``"100/second;2000/minute"`` → its limits; ``ValueError`` if it is not that notation."""
    return list(parse_many(text)) if text.strip() else []


class TenantRateLimiter:
    def __init__(self, text: str) -> None:
        self.items = parse_rate_limits(text)
        # Only with limits: the memory storage starts a thread of its own to expire counters.
        self.limiter = SlidingWindowCounterRateLimiter(MemoryStorage()) if self.items else None

    def retry_after(self, tenant: str) -> int | None:
        """Count one request of ``tenant``: None if it is within every limit, else the whole
        seconds to wait before the limit it broke lets a request through again."""
        if self.limiter is None:
            return None
        for item in self.items:
            if not self.limiter.hit(item, tenant):
                reset_at = self.limiter.get_window_stats(item, tenant).reset_time
                return max(1, math.ceil(reset_at - time.time()))
        return None
