"""AWS clients for the ``sqs`` and ``sns`` delivery targets, and the threads their calls run on.

boto3 blocks, so each send runs on a pool of ``threads`` threads beside the executor's event
loop. A client is made once per service, region, timeout and credentials, and kept (the
``MAX_CLIENTS`` used last). Credentials are the executor's own (boto3's standard chain:
environment, shared files, the instance or task role), or, for a schedule that names a
``role_arn``, the role's, assumed through STS with the external id ``scheduler:<tenant>`` (so a
role can trust one tenant only: ``sts:ExternalId`` in its trust policy) and made anew shortly
before they expire.

The endpoint is AWS's regional one, or ``endpoint_url`` for every service (the executor's
``SCHEDULER_TARGET_AWS_ENDPOINT_URL``: LocalStack), never a host a schedule names. botocore
does not retry: the schedule's retry policy does.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

from shared.ports import CallFailed, Clock
from shared.redaction import redact
from shared.timeutil import UTC

MAX_CLIENTS = 256
# Assumed credentials are made anew this long before they expire.
RENEW_BEFORE = timedelta(minutes=5)
ROLE_SESSION_SECONDS = 3600
_THROTTLED = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottled",
    "ServiceUnavailable",
    "InternalError",
    "InternalFailure",
    "KMSThrottlingException",
    "KmsThrottled",
    "RequestTimeout",
}
_SESSION_NAME = re.compile(r"[^\w+=,.@-]")
T = TypeVar("T")


class AwsCallFailed(CallFailed):
    """A send that did not happen: ``retryable`` when trying again later may help."""


@dataclass(frozen=True)
class ClientKey:
    service: str
    region: str
    timeout_seconds: float
    role_arn: str | None
    tenant: str | None


@dataclass
class _Client:
    client: Any
    renew_at: datetime | None


class AwsClients:
    def __init__(
        self,
        endpoint_url: str | None,
        default_region: str,
        clock: Clock,
        threads: int,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.endpoint_url = endpoint_url or None
        self.default_region = default_region
        self.clock = clock
        self.max_clients = max_clients
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="aws-target")
        self._lock = threading.Lock()
        self._clients: OrderedDict[ClientKey, _Client] = OrderedDict()

    async def call(self, key: ClientKey, send: Callable[[Any], T]) -> T:
        """``send(client)`` on a pool thread, with the client of ``key``; ``AwsCallFailed`` for
        any failure, saying whether to retry."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._call, key, send)

    def _call(self, key: ClientKey, send: Callable[[Any], T]) -> T:
        try:
            return send(self._client(key))
        except AwsCallFailed:
            raise
        except ClientError as exc:
            raise _failure(exc) from None
        except ParamValidationError as exc:
            raise AwsCallFailed(f"{key.service}: {exc}", retryable=False) from None
        except BotoCoreError as exc:
            raise AwsCallFailed(f"{key.service}: {redact(str(exc))}", retryable=True) from None

    def _client(self, key: ClientKey) -> Any:
        now = self.clock.now()
        with self._lock:
            kept = self._clients.get(key)
            if kept is not None and (kept.renew_at is None or now < kept.renew_at):
                self._clients.move_to_end(key)
                return kept.client
        made = self._make(key, now)
        with self._lock:
            self._clients[key] = made
            self._clients.move_to_end(key)
            while len(self._clients) > self.max_clients:
                self._clients.popitem(last=False)
        return made.client

    def _make(self, key: ClientKey, now: datetime) -> _Client:
        # A session per client: boto3's default session is not thread-safe to make clients from.
        session = boto3.session.Session()
        config = Config(
            region_name=key.region,
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=key.timeout_seconds,
            read_timeout=key.timeout_seconds,
            max_pool_connections=10,
        )
        # The service is named at run time: boto3's typed overloads want it literally.
        make: Any = session.client
        if key.role_arn is None:
            return _Client(make(key.service, endpoint_url=self.endpoint_url, config=config), None)
        credentials = self._assume(session, key, config)
        expires = credentials["Expiration"]
        expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
        client = make(
            key.service,
            endpoint_url=self.endpoint_url,
            config=config,
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )
        return _Client(client, max(now, expires - RENEW_BEFORE))

    def _assume(self, session: boto3.session.Session, key: ClientKey, config: Config) -> Any:
        sts = session.client("sts", endpoint_url=self.endpoint_url, config=config)
        tenant = key.tenant or "default"
        try:
            answer = sts.assume_role(
                RoleArn=key.role_arn,
                RoleSessionName=_SESSION_NAME.sub("-", f"scheduler-{tenant}")[:64],
                ExternalId=external_id(tenant),
                DurationSeconds=ROLE_SESSION_SECONDS,
            )
        except ClientError as exc:
            failure = _failure(exc)
            raise AwsCallFailed(
                f"cannot assume role {key.role_arn}: {failure}", retryable=failure.retryable
            ) from None
        finally:
            sts.close()
        return answer["Credentials"]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            clients = list(self._clients.values())
            self._clients.clear()
        for kept in clients:
            kept.client.close()


def external_id(tenant: str) -> str:
    """The external id a role is assumed with for ``tenant``: ``scheduler:<tenant>``, a ``~``
    written ``=`` (STS takes no ``~``; no tenant name has ``=``)."""
    return "scheduler:" + tenant.replace("~", "=")


def _failure(exc: ClientError) -> AwsCallFailed:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    message = redact(str(error.get("Message", "")))[:300]
    retryable = code in _THROTTLED or status >= 500
    shown = f"{code}: {message}" if message else code
    return AwsCallFailed(f"{exc.operation_name} failed ({shown})", retryable=retryable)
