"""The opt-in create retry under the worker's create rate limit (S11).

A create refused with ``RESOURCE_EXHAUSTED``/``CREATE_RATE_LIMIT`` created nothing, so
sending it again with the same idempotency key is safe; the SDK does so only when the
caller asks (``rate_limit_retries``), after the delay the worker named (its
``RetryInfo``), or one refill period of the slower advertised bucket.
"""

from __future__ import annotations

from . import _models as m
from ._errors import InvalidArgumentError, ResourceExhaustedError
from ._reasons import ErrorReason


def check_rate_limit_retries(value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
        raise InvalidArgumentError(
            "rate_limit_retries must be an integer from 0 to 10",
            reason="FIELD_INVALID",
            metadata={"field": "rate_limit_retries"},
        )
    return value


def rate_limit_wait(error: ResourceExhaustedError, info: m.ServerInfo) -> float | None:
    """Seconds until the worker's create buckets hold a token again, or None if the
    refusal was not about the create rate (other limits do not refill on a timer).

    The worker's ``RetryInfo`` delay when it sent one; otherwise one refill period of the
    slower advertised bucket."""
    if error.reason != ErrorReason.CREATE_RATE_LIMIT:
        return None
    if error.retry_delay is not None:
        return error.retry_delay
    rates = [
        bucket.refill_per_second
        for bucket in (info.limits.create_rate, info.limits.create_rate_per_application)
        if bucket.refill_per_second > 0
    ]
    return 1.0 / min(rates) if rates else 1.0
