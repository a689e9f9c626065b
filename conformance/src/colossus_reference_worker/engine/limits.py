"""Admission control (W11): token buckets and global/per-application counters."""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator

from ..errors import exhausted


class TokenBucket:
    """``burst`` tokens at most, refilled continuously at ``rate`` per second."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def available(self) -> bool:
        self._refill()
        return self._tokens >= 1.0

    def wait(self) -> float:
        """Seconds until the bucket holds a whole token again (0 when it holds one)."""
        self._refill()
        if self._tokens >= 1.0:
            return 0.0
        return (1.0 - self._tokens) / self._rate if self._rate > 0 else 1.0

    def take(self) -> None:
        self._refill()
        self._tokens -= 1.0


class CreateRateLimiter:
    """The global and per-application create buckets; both must have a token."""

    def __init__(self, rate: float, burst: int, app_rate: float, app_burst: int) -> None:
        self._global = TokenBucket(rate, burst)
        self._app_rate = app_rate
        self._app_burst = app_burst
        self._apps: dict[str, TokenBucket] = {}

    def check(self, application_id: str) -> None:
        """Refuses with ``CREATE_RATE_LIMIT`` when either bucket is empty; the refusal's
        retry delay is when both hold a token again (W11)."""
        app = self._apps.setdefault(application_id, TokenBucket(self._app_rate, self._app_burst))
        if not app.available():
            raise exhausted(
                "CREATE_RATE_LIMIT",
                "too many new runs for this application; retry later with the same key",
                "create_rate_per_application",
                retry_delay=max(app.wait(), self._global.wait()),
            )
        if not self._global.available():
            raise exhausted(
                "CREATE_RATE_LIMIT",
                "too many new runs; retry later with the same key",
                "create_rate",
                retry_delay=self._global.wait(),
            )

    def take(self, application_id: str) -> None:
        self._apps[application_id].take()
        self._global.take()


class Gate:
    """Counts concurrent holders globally and per application; refuses excess."""

    def __init__(
        self, total: int, per_app: int, reason: str, limit: str, app_limit: str, what: str
    ) -> None:
        self.total = total
        self.per_app = per_app
        self._reason = reason
        self._limit = limit
        self._app_limit = app_limit
        self._what = what
        self.count = 0
        self.by_app: dict[str, int] = defaultdict(int)

    def check(self, application_id: str) -> None:
        if self.by_app[application_id] >= self.per_app:
            raise exhausted(self._reason, f"too many {self._what} for this application", self._app_limit)
        if self.count >= self.total:
            raise exhausted(self._reason, f"too many {self._what}", self._limit)

    def acquire(self, application_id: str) -> None:
        self.check(application_id)
        self.count += 1
        self.by_app[application_id] += 1

    def release(self, application_id: str) -> None:
        self.count -= 1
        self.by_app[application_id] -= 1

    @contextlib.contextmanager
    def hold(self, application_id: str) -> Iterator[None]:
        self.acquire(application_id)
        try:
            yield
        finally:
            self.release(application_id)
