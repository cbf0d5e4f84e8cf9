"""What happens when a schedule's call fails or is late: ``on_failure``, ``alert``, ``retry`` and
``misfire`` of a
body, loaded as domain objects (the call itself, ``payload``, by its kind:
``scheduler_service.requests.targets``); the call's limits are the domain's
(``shared.definition_rules``)."""

from __future__ import annotations

from typing import Any

from marshmallow import ValidationError, fields, post_load, validate

from scheduler_service.requests.fields import JsonNumber, Strict, WholeNumber, domain
from shared.definition_rules import (
    MAX_LATE_AFTER_SECONDS,
    MAX_URL_LENGTH,
    check_headers,
    check_http_url,
)
from shared.model import Alert, FailureHook, Misfire, MisfirePolicy, RetryPolicy

http_url = domain(check_http_url)
headers_rule = domain(check_headers)


class FailureHookSchema(Strict):
    url = fields.String(
        required=True, validate=[validate.Length(min=1, max=MAX_URL_LENGTH), http_url]
    )
    headers = fields.Dict(
        keys=fields.String(), values=fields.Raw(), load_default=dict, validate=headers_rule
    )

    @post_load
    def to_hook(self, data: dict[str, Any], **_: Any) -> FailureHook:
        return FailureHook(url=data["url"], headers=dict(data["headers"]))


class FailureHookField(fields.Field[FailureHook]):
    """``on_failure``: a URL, or ``{"url": …, "headers": {…}}``."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> FailureHook:
        if isinstance(value, str):
            value = {"url": value}
        if not isinstance(value, dict):
            raise ValidationError('a URL, or an object {"url": …, "headers": {…}}')
        hook: FailureHook = FailureHookSchema().load(value)
        return hook


class AlertSchema(Strict):
    """``alert``: tell ``on_failure`` of an occurrence late or missed (``shared.lateness``)."""

    late_after_seconds = WholeNumber(
        required=True,
        validate=validate.Range(1, MAX_LATE_AFTER_SECONDS),
        metadata={
            "description": "an occurrence that has not started this many seconds after its "
            f"time is told of as occurrence.late (1 to {MAX_LATE_AFTER_SECONDS})"
        },
    )

    @post_load
    def to_alert(self, data: dict[str, Any], **_: Any) -> Alert:
        return Alert(late_after_seconds=data["late_after_seconds"])


class RetrySchema(Strict):
    max_attempts = WholeNumber(load_default=5, validate=validate.Range(1, 100))
    backoff_seconds = JsonNumber(load_default=1.0, validate=validate.Range(0.01, 3600))
    max_backoff_seconds = JsonNumber(load_default=300.0, validate=validate.Range(0.01, 43200))

    @post_load
    def to_policy(self, data: dict[str, Any], **_: Any) -> RetryPolicy:
        return RetryPolicy(**data)


class MisfireSchema(Strict):
    policy = fields.String(
        load_default="fire_once", validate=validate.OneOf([p.value for p in MisfirePolicy])
    )
    grace_seconds = JsonNumber(allow_none=True, load_default=None, validate=validate.Range(0))

    @post_load
    def to_misfire(self, data: dict[str, Any], **_: Any) -> Misfire:
        return Misfire(MisfirePolicy(data["policy"]), data["grace_seconds"])
