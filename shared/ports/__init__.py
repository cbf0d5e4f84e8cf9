"""The ports: small interfaces between the domain and the outside world, one module per port.

Every port has a production adapter (MongoDB, SQS, HTTP) and an embedded one (SQLite) in
``shared.adapters``. One contract test suite runs over all adapters of a port, so the docstrings
are the specification both must meet. Each name is importable from here too
(``from shared.ports import Store``).
"""

from shared.ports.calendars import Calendar, CalendarStore
from shared.ports.changes import ChangeStore
from shared.ports.clock import Clock, SystemClock
from shared.ports.delivery import (
    CallFailed,
    Delivered,
    DeliveryTarget,
    WebhookError,
    WebhookRequest,
    WebhookResponse,
    WebhookSender,
)
from shared.ports.executions import DeadLetterRequest, ExecutionStore, HistoryRequest
from shared.ports.keys import ApiKey, ApiKeyStore, IdempotencyRecord, IdempotencyStore, Role
from shared.ports.pages import Page, execution_page
from shared.ports.queues import (
    MessageQueue,
    MessageTooLarge,
    OutgoingMessage,
    QueueDepth,
    Queues,
    QueueSpec,
    ReceivedMessage,
)
from shared.ports.schedules import (
    Advance,
    ClaimRequest,
    DefinitionToApply,
    OverlapClaim,
    OverlapSeen,
    OverlapTurn,
    ScheduleFilter,
    ScheduleOrder,
    ScheduleStore,
    SkipsChange,
    SlotReservation,
    StateChange,
)
from shared.ports.signing_secrets import (
    SigningSecretSet,
    SigningSecretStore,
    StoredSigningSecret,
)
from shared.ports.store import Store

__all__ = [
    "Advance",
    "ApiKey",
    "ApiKeyStore",
    "Calendar",
    "CalendarStore",
    "CallFailed",
    "ChangeStore",
    "ClaimRequest",
    "Clock",
    "DeadLetterRequest",
    "DefinitionToApply",
    "Delivered",
    "DeliveryTarget",
    "ExecutionStore",
    "HistoryRequest",
    "IdempotencyRecord",
    "IdempotencyStore",
    "MessageQueue",
    "MessageTooLarge",
    "OutgoingMessage",
    "OverlapClaim",
    "OverlapSeen",
    "OverlapTurn",
    "Page",
    "QueueDepth",
    "QueueSpec",
    "Queues",
    "ReceivedMessage",
    "Role",
    "ScheduleFilter",
    "ScheduleOrder",
    "ScheduleStore",
    "SigningSecretSet",
    "SigningSecretStore",
    "SkipsChange",
    "SlotReservation",
    "StateChange",
    "Store",
    "StoredSigningSecret",
    "SystemClock",
    "WebhookError",
    "WebhookRequest",
    "WebhookResponse",
    "WebhookSender",
    "execution_page",
]
